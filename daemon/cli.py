"""`relayd`: serve the daemon, run the simulated upstream, manage keys and workspaces."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from daemon import config as configuration
from daemon import logs

if TYPE_CHECKING:
    from daemon.store.interface import Store

# The store (Peewee, and the PostgreSQL driver Peewee loads with it) is imported by the
# commands that use it: `relayd simulate` starts without it, a few tenths of a second
# sooner (the test suite starts hundreds of simulators).


def main(argv: Sequence[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args and args[0] == "simulate":
        from daemon import simulator

        return simulator.main(list(args[1:]))
    from daemon.store import UnsupportedDatabase

    parsed = _parser().parse_args(args)
    try:
        config = configuration.load(parsed.config)
    except configuration.ConfigError as exc:
        print(f"relayd: bad configuration: {exc}", file=sys.stderr)
        return 2
    try:
        return int(parsed.run(config, parsed) or 0)
    except UnsupportedDatabase as exc:
        print(f"relayd: bad configuration: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relayd", description="Relay's batch daemon.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = _command(commands, "serve", "run the daemon (HTTP API, scheduler, workers)", _serve)
    serve.add_argument("--log-level", default="INFO")
    commands.add_parser("simulate", help="run the simulated OpenAI-compatible upstream "
                        "(see `relayd simulate --help`)")
    keys = commands.add_parser("keys", help="API keys").add_subparsers(dest="keys",
                                                                       required=True)
    create = _command(keys, "create", "create a key (and the workspace if needed)", _keys_create)
    create.add_argument("--workspace", required=True)
    listing = _command(keys, "list", "list keys (prefixes only)", _keys_list)
    listing.add_argument("--workspace")
    revoke = _command(keys, "revoke", "revoke a key by its prefix (as `keys list` shows)",
                      _keys_revoke)
    revoke.add_argument("prefix")
    spaces = commands.add_parser("workspaces", help="workspaces").add_subparsers(
        dest="workspaces", required=True)
    switch = _command(spaces, "set", "switch a workspace's batch access, expedited tier or "
                      "workflow records",
                      _workspace_set)
    switch.add_argument("name")
    switch.add_argument("--batch-access", choices=("on", "off"))
    switch.add_argument("--expedited", choices=("on", "off"))
    switch.add_argument("--workflows", choices=("on", "off"),
                        help="workflow records (openrelay.workflow); off by default")
    _command(spaces, "list", "list workspaces and their switches", _workspace_list)
    hooks = commands.add_parser("webhooks", help="webhook signing").add_subparsers(
        dest="webhooks", required=True)
    secret = _command(hooks, "secret", "print (or --rotate) a workspace's signing secret",
                      _webhook_secret)
    secret.add_argument("--workspace", required=True)
    secret.add_argument("--rotate", action="store_true")
    db = commands.add_parser("db", help="the database").add_subparsers(dest="db", required=True)
    _command(db, "migrate", "create the database's tables, or migrate them to this relayd's "
             "schema version, and print it (serve does the same at start)", _db_migrate)
    return parser


def _command(group: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
             help: str, run: object) -> argparse.ArgumentParser:
    parser = group.add_parser(name, help=help)
    parser.add_argument("--config", help="TOML config file (default: built-in defaults)")
    parser.set_defaults(run=run)
    return parser


def _serve(config: configuration.Config, args: argparse.Namespace) -> int:
    from daemon.runtime import serve, stuck_threads
    from daemon.store.faults import StoreError
    from daemon.store.owner import DatabaseInUse

    logs.configure(args.log_level)
    if not config.models:
        logging.warning("no [[models]] configured: every batch will be refused")
    try:
        status = asyncio.run(serve(config, ready=lambda line: print(line, flush=True)))
    except DatabaseInUse as exc:  # raised before anything started
        print(f"relayd: cannot serve: {exc}", file=sys.stderr)
        return 1
    except StoreError as exc:  # opening the store: nothing else started
        print(f"relayd: cannot serve: the store cannot be opened: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"relayd: cannot serve on {config.server.host}:{config.server.port}: {exc}",
              file=sys.stderr)
        if stuck_threads():  # an actor thread would keep a failed start alive
            sys.stderr.flush()
            os._exit(1)
        return 1
    if stuck_threads():  # the store is consistent; a stuck thread must not block exit
        logging.error("exiting with threads still running: %s", ", ".join(stuck_threads()))
        logging.shutdown()
        sys.stdout.flush()
        os._exit(status)
    return status


def _repo(config: configuration.Config) -> Store:
    from daemon.store import open_store

    return open_store(config.store_url)


def _keys_create(config: configuration.Config, args: argparse.Namespace) -> int:
    key = _repo(config).create_key(args.workspace, now=time.time())
    print(f"Created a key for workspace '{args.workspace}'. It is shown once; store it now:")
    print(key)
    return 0


def _keys_list(config: configuration.Config, args: argparse.Namespace) -> int:
    keys = _repo(config).list_keys(args.workspace)
    print(f"{'PREFIX':<12} {'WORKSPACE':<20} {'CREATED':<22} STATE")
    for k in keys:
        state = "revoked " + _when(k.revoked_at) if k.revoked_at else "active"
        print(f"{k.prefix:<12} {k.workspace:<20} {_when(k.created_at):<22} {state}")
    return 0


def _keys_revoke(config: configuration.Config, args: argparse.Namespace) -> int:
    n = _repo(config).revoke_key(args.prefix, now=time.time())
    if n == 0:
        print(f"relayd: no active key starts with {args.prefix!r} (give at least 6 "
              "characters, as `relayd keys list` shows)", file=sys.stderr)
        return 1
    print(f"Revoked {n} key(s).")
    return 0


def _webhook_secret(config: configuration.Config, args: argparse.Namespace) -> int:
    repo = _repo(config)
    workspace = repo.ensure_workspace(args.workspace, now=time.time())
    print(repo.webhook_secret(workspace.id, rotate=args.rotate))
    return 0


def _workspace_set(config: configuration.Config, args: argparse.Namespace) -> int:
    def flag(value: str | None) -> bool | None:
        return None if value is None else value == "on"

    ws = _repo(config).set_workspace(args.name, now=time.time(),
                                     batch_access=flag(args.batch_access),
                                     expedited=flag(args.expedited),
                                     workflows=flag(args.workflows))
    print(f"{ws.name}: batch access {_on(ws.batch_access)}, expedited {_on(ws.expedited)}, "
          f"workflows {_on(ws.workflows)}")
    return 0


def _workspace_list(config: configuration.Config, args: argparse.Namespace) -> int:
    print(f"{'WORKSPACE':<24} {'BATCH ACCESS':<13} {'EXPEDITED':<10} WORKFLOWS")
    for ws in _repo(config).workspaces():
        print(f"{ws.name:<24} {_on(ws.batch_access):<13} {_on(ws.expedited):<10} "
              f"{_on(ws.workflows)}")
    return 0


def _db_migrate(config: configuration.Config, args: argparse.Namespace) -> int:
    from daemon.store.faults import StoreError
    from daemon.store.schema import SchemaError

    try:
        repo = _repo(config)  # opening a store brings its schema up to date
    except (StoreError, SchemaError) as exc:
        print(f"relayd: cannot migrate the database: {exc}", file=sys.stderr)
        return 1
    print(f"schema version {repo.schema_version()}")
    repo.close()
    return 0


def _on(value: bool) -> str:
    return "on" if value else "off"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


if __name__ == "__main__":
    sys.exit(main())
