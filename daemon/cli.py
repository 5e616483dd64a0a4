"""`relayd`: serve the daemon, run the simulated upstream, check a config, manage keys
and workspaces."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from daemon import config as configuration
from daemon import logs
from daemon.domain.budget import PERIODS

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
    if parsed.command == "config":  # `config check` has its own exit codes for a bad config
        return _config_check(parsed)
    try:
        config = configuration.load(parsed.config)
    except configuration.ConfigError as exc:
        print(f"relayd: bad configuration: {'; '.join(exc.errors)}", file=sys.stderr)
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
    serve.add_argument("--log-format", choices=logs.FORMATS, default="text",
                       help="text lines (default) or one JSON object a line")
    checks = commands.add_parser("config", help="the configuration").add_subparsers(
        dest="config_command", required=True)
    check = _command(checks, "check", "validate a config and try each model's upstream, "
                     "without starting (exit 0 ok, 1 invalid, 2 an upstream unreachable)",
                     _config_check)
    check.add_argument("--no-network", action="store_true",
                       help="validate only; do not try the upstreams")
    check.add_argument("--timeout", type=float, default=PROBE_TIMEOUT_S,
                       help=f"seconds to wait for each upstream (default {PROBE_TIMEOUT_S})")
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
    budget = _command(spaces, "budget", "set (or --clear) a workspace's budget: what its "
                      "batches may spend a period, summed over every node", _workspace_budget)
    budget.add_argument("name")
    budget.add_argument("--usd", help="the amount in USD, e.g. 500 or 12.50")
    budget.add_argument("--period", choices=PERIODS, default="month",
                        help="when its spend starts again from 0, at 00:00 UTC: each month "
                             "(the default), each day, or none (never)")
    budget.add_argument("--clear", action="store_true", help="take the budget away")
    _command(spaces, "list", "list workspaces, their switches and budgets", _workspace_list)
    hooks = commands.add_parser("webhooks", help="webhook signing").add_subparsers(
        dest="webhooks", required=True)
    secret = _command(hooks, "secret", "print (or --rotate) a workspace's signing secret",
                      _webhook_secret)
    secret.add_argument("--workspace", required=True)
    secret.add_argument("--rotate", action="store_true")
    db = commands.add_parser("db", help="the database").add_subparsers(dest="db", required=True)
    _command(db, "migrate", "create the database's tables, or migrate them to this relayd's "
             "schema version, and print it (serve does the same at start)", _db_migrate)
    _command(db, "stats", "print each table's rows and bytes, and what [retention] would "
             "purge now", _db_stats)
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
    from daemon.upstream.ioloop import new_event_loop

    logs.configure(args.log_level, fmt=args.log_format)
    if not config.models:
        logging.warning("no [[models]] configured: every batch will be refused")
    try:
        # The API's loop is uvloop too, where installed (`new_event_loop`): every read
        # the API hands to a thread wakes the loop again, and uvloop's wake-ups and
        # callbacks cost less than asyncio's own.
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            status = runner.run(serve(config, ready=lambda line: print(line, flush=True)))
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


PROBE_TIMEOUT_S = 3.0


def _config_check(args: argparse.Namespace) -> int:
    """Exit 0 when the config loads and every upstream answers a TCP connect, 1 when it
    does not load (each error on a line: every section's and every model's first), 2
    when an upstream is down."""
    try:
        config = configuration.load(args.config)
    except configuration.ConfigError as exc:
        found = len(exc.errors)
        print(f"relayd: config invalid ({found} error{'s' if found != 1 else ''}):",
              file=sys.stderr)
        for error in exc.errors:
            print(f"  {error}", file=sys.stderr)
        return 1
    print(f"config ok: {args.config or 'built-in defaults'} "
          f"({len(config.models)} model(s))")
    if args.no_network or not config.models:
        return 0
    down = 0
    for model, problem in asyncio.run(_probe_models(config.models, timeout=args.timeout)):
        state = "reachable" if problem is None else f"UNREACHABLE ({problem})"
        print(f"  {model.alias}: {logs.redacted_url(model.base_url)} {state}")
        down += problem is not None
    return 2 if down else 0


async def _probe_models(models: Sequence[configuration.ModelConfig], *, timeout: float,
                        ) -> list[tuple[configuration.ModelConfig, str | None]]:
    """Each model with why its upstream refused a connection (None: it accepted one);
    every distinct host and port is tried once, all at once."""
    targets = {m.alias: _host_port(m.base_url) for m in models}
    unique = sorted(set(targets.values()))
    results = await asyncio.gather(*(_probe(host, port, timeout=timeout)
                                     for host, port in unique))
    problems = dict(zip(unique, results, strict=True))
    return [(m, problems[targets[m.alias]]) for m in models]


def _host_port(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


async def _probe(host: str, port: int, *, timeout: float) -> str | None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return f"no answer from {host}:{port} in {timeout:g} s"
    except OSError as exc:
        return f"{host}:{port}: {_reason(exc)}"
    writer.close()
    return None


def _reason(exc: OSError) -> str:
    # asyncio words a refusal "Connect call failed (…)"; the errno says it plainly.
    if isinstance(exc, socket.gaierror) or not exc.errno or exc.errno < 0:
        return exc.strerror or str(exc)
    return os.strerror(exc.errno)


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


def _workspace_budget(config: configuration.Config, args: argparse.Namespace) -> int:
    from daemon.domain.budget import Budget, parse_period, parse_usd

    if args.clear == (args.usd is not None):
        print("relayd: give --usd AMOUNT (with --period), or --clear", file=sys.stderr)
        return 2
    try:
        budget = None if args.clear else Budget(parse_usd(args.usd), parse_period(args.period))
    except ValueError as exc:
        print(f"relayd: --usd: {exc}", file=sys.stderr)
        return 2
    repo = _repo(config)
    ws = repo.set_budget(args.name, budget, now=time.time())
    print(f"{ws.name}: {_budget_text(repo, ws.id, time.time())}")
    return 0


def _budget_text(repo: Store, workspace_id: int, now: float) -> str:
    from daemon.domain.budget import usd

    state = repo.budget_state(workspace_id, now=now)
    if state is None:
        return "no budget"
    budget = state.budget
    per = "in all" if budget.period == "none" else f"a {budget.period}"
    held = ", spent: its batches are paused" if state.exhausted else ""
    return (f"budget {usd(budget.nano_usd)} {per}, {usd(state.spent_nano_usd)} spent"
            f"{held}")


def _workspace_list(config: configuration.Config, args: argparse.Namespace) -> int:
    from daemon.domain.budget import usd

    repo, now = _repo(config), time.time()
    states = {s.workspace_id: s for s in repo.budget_states(now=now)}
    print(f"{'WORKSPACE':<24} {'BATCH ACCESS':<13} {'EXPEDITED':<10} {'WORKFLOWS':<10} "
          f"{'BUDGET':<22} SPENT")
    for ws in repo.workspaces():
        state = states.get(ws.id)
        budget = "-" if state is None else (
            f"{usd(state.budget.nano_usd)}/{state.budget.period}")
        spent = "-" if state is None else (
            usd(state.spent_nano_usd) + (" (spent: paused)" if state.exhausted else ""))
        print(f"{ws.name:<24} {_on(ws.batch_access):<13} {_on(ws.expedited):<10} "
              f"{_on(ws.workflows):<10} {budget:<22} {spent}")
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


def _db_stats(config: configuration.Config, args: argparse.Namespace) -> int:
    from daemon.domain.retention import cutoff

    repo = _repo(config)
    try:
        sizes = repo.table_sizes()
        days = config.retention.days
        purge = repo.purge_counts(cutoff(time.time(), days)) if days is not None else None
    finally:
        repo.close()
    print(f"{'TABLE':<18}{'ROWS':>12}{'BYTES':>14}")
    for table in sizes:
        shown = f"{table.bytes:,}" if table.bytes is not None else "?"
        print(f"{table.name:<18}{table.rows:>12,}{shown:>14}")
    known = [t.bytes for t in sizes if t.bytes is not None]
    if known:
        print(f"{'total':<18}{sum(t.rows for t in sizes):>12,}{sum(known):>14,}")
    if purge is None:
        print("retention: off ([retention] days unset): ended jobs are kept forever")
    else:
        print(f"retention: {days} day(s): {purge.jobs:,} ended job(s) with {purge.rows:,} "
              f"row(s) and {purge.files:,} file(s) would be purged now")
    return 0


def _on(value: bool) -> str:
    return "on" if value else "off"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


if __name__ == "__main__":
    sys.exit(main())
