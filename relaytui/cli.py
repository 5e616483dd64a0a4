"""`relay`: with no command, the operator TUI (`relay web`: the same TUI served to a
browser, `relaytui.web`); otherwise one scripting command against relayd (submit, ls,
status, cancel, pause, resume, results, dead-letter, nodes). `submit` sends a .jsonl
whose every line is an OpenAI record as an OpenAI batch of the endpoint they name, and
`submit --endpoint` any .jsonl of records or bare bodies for that endpoint;
`submit --template` a table's rows (CSV, JSONL, Parquet) as one, and `results --join` /
`--failed-only` give the table back with its answers (the rules: `relaytui.table_batch`).

Every command takes `--url`, `--key` (flags, then RELAY_URL / RELAY_API_KEY, then the
config file) and `--json` (machine-readable JSON alone on stdout, errors too, as
`{"error": {"message", "type", "exit_code", ...}}`; other messages go to stderr). A job
id may be shortened to any prefix that only one job's id starts with, as git takes
commits. Exit codes: 0 ok, 1 relayd refused or the job failed (an unknown job id too),
2 usage, a bad input file or an ambiguous id prefix, 3 relayd cannot be reached,
4 (`submit --wait`) the job completed but some of its rows failed, 130 interrupted.
All HTTP goes through `RelayClient`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from relaytui import progress, table_jobs
from relaytui.client import RelayClient, RelayError, inline_batch
from relaytui.estimate_text import estimate_lines
from relaytui.export import FORMATS, ExportError, write_results
from relaytui.formats import (
    BATCH_ENDPOINTS,
    InputFile,
    InputFileError,
    openai_records,
    read_input,
    read_records,
    records_endpoint,
    records_of,
)
from relaytui.nodes import NodeList, NodeView, heartbeat_text
from relaytui.rows import attempts_cell
from relaytui.settings import Settings, resolve
from relaytui.table_batch import (
    CHAT,
    MISSING,
    Request,
    TemplateError,
    failed_rows,
    join_results,
    json_schema_format,
    parse_setting,
    parse_template,
    row_ids,
)
from relaytui.tables import TableWriteError, cell_text, is_table_file, read_table, write_table

OK, REFUSED, USAGE, UNREACHABLE, ROWS_FAILED, INTERRUPTED = 0, 1, 2, 3, 4, 130
ERROR_TYPES = {REFUSED: "refused", USAGE: "usage", UNREACHABLE: "unreachable",
               INTERRUPTED: "interrupted"}  # `error.type` under --json
POLL_S = 0.5  # how often `submit --wait` asks for the job
ENDPOINTS = BATCH_ENDPOINTS  # OpenAI's Batch API endpoints (`submit --endpoint`)
PREFIX_SCAN = 100_000  # jobs read at most to resolve an id prefix
AMBIGUOUS_SHOWN = 10  # candidates an ambiguous prefix's message names

GET_A_KEY = ("Get a key on the relayd host with `relayd keys create --workspace NAME`,\n"
             "then pass it with --key KEY or set RELAY_API_KEY.")


class Stop(Exception):
    """Ends a command with a message (on stderr, or the `--json` error on stdout) and an
    exit code. `details` go into the JSON error. Every message is printed after the
    `relay:` prefix, a bad file's too (`relay: rows.jsonl:3: not valid JSON: …`)."""

    def __init__(self, code: int, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class UsageError(Exception):
    """argparse's refusal of the command line, kept until we know how to print it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


Command = Callable[[RelayClient, argparse.Namespace], int]


# -- entry point -------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        return bad_usage(exc, json_out="--json" in argv)
    except SystemExit as exc:  # --help (0), already printed
        return exc.code if isinstance(exc.code, int) else USAGE
    settings = resolve(getattr(args, "url", None), getattr(args, "key", None))
    if args.command is None:
        return open_tui(settings, read_only=args.read_only)
    if args.command == "web":
        return open_web(settings, args)
    json_out = wants_json(args)
    try:
        return run_command(args.run, args, settings)
    except Stop as stop:
        return fail(stop.code, str(stop), json_out=json_out, details=stop.details)
    except RelayError as exc:
        return refused(exc, json_out=json_out)
    except KeyboardInterrupt:
        return fail(INTERRUPTED, "interrupted", json_out=json_out)
    except BrokenPipeError:  # `relay results ID | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK


def open_tui(settings: Settings, *, read_only: bool = False) -> int:
    try:
        from relaytui.app import run  # Textual loads only for the TUI
    except ImportError as exc:
        say(f"relay: the terminal UI is not available in this build ({exc}).\n"
            "The scripting commands work: see `relay --help`.")
        return REFUSED
    return run(url=settings.url, key=settings.key, read_only=read_only)


def open_web(settings: Settings, args: argparse.Namespace) -> int:
    """`relay web`: the TUI served to a browser (`relaytui.web`), on the connection
    resolved here."""
    try:
        from relaytui import web  # textual-serve loads only for `relay web`
    except ImportError as exc:
        say(f"relay: the browser console is not available in this build ({exc}).")
        return REFUSED
    try:
        return web.serve(settings, host=args.host, port=args.port,
                         read_only=args.read_only, public=args.public_url)
    except OSError as exc:  # the port taken, an address not of this machine
        say(f"relay: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}")
        return UNREACHABLE


def run_command(command: Command, args: argparse.Namespace, settings: Settings) -> int:
    url = urlsplit(settings.url)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise Stop(USAGE, f"--url must look like http://HOST:PORT; got {settings.url!r}")
    if not settings.key:
        raise Stop(USAGE, "no API key. " + GET_A_KEY)
    with RelayClient(settings.url, settings.key) as client:
        return command(client, args)


def refused(exc: RelayError, *, json_out: bool) -> int:
    if exc.unreachable:
        return fail(UNREACHABLE, exc.message, json_out=json_out)
    hint = GET_A_KEY if exc.status == 401 else None
    if json_out:
        details = {"status": exc.status, "code": exc.code, "param": exc.param}
        return fail(REFUSED, exc.message, json_out=True,
                    details=details | ({"hint": hint} if hint else {}))
    fail(REFUSED, str(exc), json_out=False)
    if hint:
        say(hint)
    return REFUSED


def bad_usage(exc: UsageError, *, json_out: bool) -> int:
    if json_out:
        return fail(USAGE, str(exc), json_out=True)
    exc.parser.print_usage(sys.stderr)
    say(f"{exc.parser.prog}: error: {exc}")
    return USAGE


def fail(exit_code: int, message: str, *, json_out: bool,
         details: dict[str, Any] | None = None) -> int:
    """Tell why a command failed and return its exit code: `{"error": {...}}` on stdout
    under --json (with `details`), a line on stderr otherwise."""
    if json_out:
        emit({"error": {"message": message, "type": ERROR_TYPES.get(exit_code, "error"),
                        "exit_code": exit_code, **(details or {})}})
    else:
        say(f"relay: {message}")
    return exit_code


# -- the parser ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    # The shared options sit on the top-level parser and on every command, so they work
    # before or after the command; SUPPRESS keeps a command from resetting them.
    shared = Parser(add_help=False)
    shared.add_argument("--url", default=argparse.SUPPRESS,
                        help="relayd's address (default: $RELAY_URL, the config file, "
                        "http://127.0.0.1:8080)")
    shared.add_argument("--key", default=argparse.SUPPRESS,
                        help="API key (default: $RELAY_API_KEY, then the config file)")
    shared.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print machine-readable JSON only on stdout")
    parser = Parser(
        prog="relay", parents=[shared],
        description="Relay's operator TUI (no command) and scripting commands.",
        epilog="Exit codes: 0 ok, 1 relayd refused, the job failed or is unknown, 2 usage, "
        "bad input file or ambiguous id prefix, 3 relayd unreachable, 4 (submit --wait) "
        "the job completed with failed rows, 130 interrupted. A job id may be any prefix "
        "of one that no other job's id starts with. Under --json, errors are "
        "{\"error\": {...}} on stdout.")
    parser.add_argument("--read-only", action="store_true",
                        help="TUI: watch only (no submit, cancel, re-drive, discard or key "
                        "change)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text, command, add_options in COMMANDS:
        sub = commands.add_parser(name, parents=[shared], help=help_text,
                                  description=help_text)
        add_options(sub)
        sub.set_defaults(run=command)
    web_help = ("serve the TUI in a browser (loopback only unless --host says otherwise: "
                "whoever opens the page uses your key)")
    web_options(commands.add_parser("web", parents=[shared], help=web_help,
                                    description=web_help))
    return parser


def web_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--port", type=port_number, default=8070,
                     help="the port to serve on (default 8070)")
    sub.add_argument("--host", default="127.0.0.1",
                     help="the address to bind (default 127.0.0.1; any other prints a "
                     "warning: there is no login, the page drives the TUI with your key)")
    sub.add_argument("--public-url", metavar="URL",
                     help="the address browsers open, when it is not the bound one (a "
                     "proxy in front); sessions are taken only from its page")
    sub.add_argument("--read-only", action="store_true", default=argparse.SUPPRESS,
                     help="watch only, as `relay --read-only`")


def port_number(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be 1–65535; got {value}")
    return value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1; got {value}")
    return value


def submit_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("file", type=Path, help="a .csv (one prompt per line, or a header "
                     "naming the prompt column) or .jsonl file")
    sub.add_argument("--model", help="a model alias configured in relayd (for OpenAI "
                     "records: only for the bodies that name none)")
    sub.add_argument("--endpoint", choices=ENDPOINTS, help="submit a .jsonl of OpenAI "
                     "records or bare request bodies for this endpoint as an OpenAI batch, "
                     "e.g. /v1/moderations (a file of whole records needs none: it runs "
                     "as a batch of the url they name, which --endpoint must match)")
    sub.add_argument("--name", help="the job's name (default: a timestamp)")
    sub.add_argument("--priority", type=int, default=0, help="higher runs first (default 0)")
    sub.add_argument("--cron", metavar="EXPR", help="make a cron template (5 fields, UTC)")
    sub.add_argument("--webhook", metavar="URL", help="HTTPS URL told when the job ends")
    sub.add_argument("--deadline", metavar="WHEN", help="when the job must be done: an RFC "
                     "3339 time (2026-12-06T18:00:00Z) or a duration (6h, 1h30m); rows "
                     "not run by then fail deadline_passed")
    sub.add_argument("--strict-deadline", action="store_true",
                     help="refuse the submit if the estimate says the deadline cannot be "
                     "met (without it the job is taken and flagged at risk)")
    sub.add_argument("--column", metavar="NAME", help="a .csv's prompt column, named in its "
                     "header (default: the column named prompt, text or content)")
    sub.add_argument("--dry-run", action="store_true",
                     help="print the batch's estimate (rows, tokens, cost, drain time, "
                     "problems) and create nothing")
    sub.add_argument("--wait", action="store_true",
                     help="show progress until the job ends; exit 1 unless it completed, "
                     "4 if it completed with failed rows")
    sub.add_argument("--no-idempotency", action="store_true",
                     help="send no Idempotency-Key (by default one is derived from the "
                     "file's hash and the options, so re-running the same command within "
                     "24 hours answers the first job instead of submitting it again)")
    table = sub.add_argument_group("from a table (a .csv with a header, a .jsonl of "
                                   "objects or a .parquet file), as an OpenAI batch")
    table.add_argument("--template", metavar="TEXT", help="each row's prompt: {column} "
                       "is the row's value, {{ and }} literal braces")
    table.add_argument("--system", metavar="TEXT", help="a system message for every row")
    table.add_argument("--id-column", metavar="NAME", help="the column of each row's "
                       "custom_id (default: row-N, N the row's number)")
    table.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                       dest="settings", help="a body parameter, e.g. temperature=0 (a JSON "
                       "scalar where it parses as one, else text; may repeat)")
    table.add_argument("--response-format", metavar="SCHEMA.json", type=Path,
                       help="ask for JSON answers with this JSON Schema (response_format "
                       "json_schema; the answers are not checked)")


def ls_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--status", help="only jobs with this status (queued, scheduled, "
                     "running, completed, failed, canceled)")
    sub.add_argument("--limit", type=positive, default=20, help="at most N jobs (default 20)")


def id_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("id", help="the job's id, or a prefix only it starts with")


def results_options(sub: argparse.ArgumentParser) -> None:
    id_option(sub)
    sub.add_argument("-o", "--output", type=Path, metavar="FILE",
                     help="write to FILE (.jsonl, or .csv with custom_id,content,error; "
                     "joined: .csv, .jsonl or .parquet)")
    sub.add_argument("--join", metavar="TABLE", nargs="?", const="", type=str,
                     help="the input table's rows with content, error, finish_reason and "
                     "tokens (no TABLE: the one the batch was submitted from)")
    sub.add_argument("--expand", action="store_true", help="with a JSON answer, a "
                     "column per top-level field (implies --join)")
    sub.add_argument("--failed-only", action="store_true", help="only the input rows that "
                     "failed or never ran, with the input's columns: a table to submit again")
    sub.add_argument("--id-column", metavar="NAME", help="the table's custom_id column, as "
                     "given to submit (default: what the batch remembers, else row-N)")
    sub.add_argument("--follow", action="store_true",
                     help="print each row as it finishes (in finish order) and exit when "
                          "the job ends")


# -- commands ------------------------------------------------------------------------


def submit(client: RelayClient, args: argparse.Namespace) -> int:
    if args.wait and args.cron:
        raise Stop(USAGE, "--wait cannot be used with --cron: a cron template never ends "
                   "(each run is a job of its own)")
    if args.template is not None:
        return submit_table(client, args)
    table_only = [flag for flag, value in (
        ("--system", args.system), ("--id-column", args.id_column),
        ("--set", args.settings or None), ("--response-format", args.response_format))
        if value is not None]
    if table_only:
        raise Stop(USAGE, f"{table_only[0]} goes with --template (a batch from a table)")
    if args.file.suffix.lower() == ".parquet":
        raise Stop(USAGE, f"{args.file} is a table: pass --template to make each row's "
                   "prompt from its columns")
    try:
        records = openai_records(args.file)
    except InputFileError as exc:
        raise Stop(USAGE, str(exc)) from None
    relay_only = relay_job_options(args)
    if args.endpoint or (records is not None and not relay_only):
        return submit_batch(client, args, records)
    if args.model is None:
        if records is not None:  # OpenAI records, but options only a Relay job has
            raise Stop(USAGE, f"{relay_only[0]} makes a Relay job, which names its model "
                       "once: pass --model (without --cron, --webhook, --priority and "
                       "--deadline the records run as an OpenAI batch, each naming its "
                       "own model)")
        raise Stop(USAGE, "--model is required (or --endpoint, for a file of OpenAI "
                   "records)")
    try:
        source = read_input(args.file, column=args.column)
    except InputFileError as exc:  # relay: FILE:LINE: reason
        raise Stop(USAGE, str(exc)) from None
    if args.dry_run:
        body = {"model": args.model, "requests": source.rows, "priority": args.priority}
        return show_estimate(client.estimate(body), json_out=wants_json(args))
    try:
        job = client.submit(model=args.model, requests=source.rows, name=args.name,
                            priority=args.priority, cron=args.cron, webhook_url=args.webhook,
                            idempotency_key=idempotency_key(args, "relay"),
                            deadline=args.deadline,
                            strict_deadline=args.strict_deadline or None)
    except RelayError as exc:
        raise in_file_terms(exc, source, args.file) from None
    if args.wait:
        return wait_for(client, job["id"], json_out=wants_json(args))
    column = f" (prompt column {source.prompt_column!r})" if source.prompt_column else ""
    submitted = f"submitted {len(source.rows)} rows from {args.file}{column}"
    if wants_json(args):
        emit(job)
    elif job.get("cron"):
        print(f"{submitted} as cron template {job['id']} ({job['cron']}; next run "
              f"{job.get('next_run_at')})")
    else:
        print(f"{submitted} as job {job['id']} ({job['status']})")
    if job.get("deadline_at_risk") and not wants_json(args):
        print(f"relay: warning: the deadline {job['deadline']} is at risk: the estimate "
              f"at the model's limits is {job['deadline_estimate']['drain_s']:.0f}s of "
              f"running (done about {job['deadline_estimate']['finishes_at']})",
              file=sys.stderr)
    return OK


def show_estimate(answer: dict[str, Any], *, json_out: bool) -> int:
    """A dry run's answer: exit 0 if the submit would be taken, 1 if it would be
    refused (its problems printed)."""
    if json_out:
        emit(answer)
    else:
        for line in estimate_lines(answer):
            print(line)
    return REFUSED if answer.get("problems") else OK


# The options a submit's idempotency key is derived from, beside the file's bytes.
KEYED_OPTIONS = ("model", "endpoint", "name", "priority", "cron", "webhook", "deadline",
                 "strict_deadline", "column",
                 "template", "system", "id_column", "settings", "response_format")


def idempotency_key(args: argparse.Namespace, step: str) -> str | None:
    """The `Idempotency-Key` of one create of `relay submit` (`step`: which), from the
    file's and the options' hash: the same command re-run within 24 hours (after a
    network error, say) gets the first answer rather than a second job. None with
    `--no-idempotency`."""
    if getattr(args, "no_idempotency", False):
        return None
    sha = hashlib.sha256()
    for path in (args.file, getattr(args, "response_format", None)):
        if path is not None:
            with open(path, "rb") as file:
                for chunk in iter(lambda: file.read(1 << 20), b""):
                    sha.update(chunk)
    options = {name: getattr(args, name, None) for name in KEYED_OPTIONS}
    sha.update(json.dumps(options, sort_keys=True, default=str).encode())
    return f"relay-submit-{step}-{sha.hexdigest()[:48]}"


def relay_job_options(args: argparse.Namespace) -> list[str]:
    """The options given that only a Relay job has (`--column`: only a CSV's)."""
    return [flag for flag, value in (("--cron", args.cron), ("--webhook", args.webhook),
                                     ("--priority", args.priority or None),
                                     ("--deadline", args.deadline),
                                     ("--strict-deadline", args.strict_deadline or None))
            if value is not None]


def submit_batch(client: RelayClient, args: argparse.Namespace,
                 records: list[tuple[int, dict[str, Any]]] | None) -> int:
    """An OpenAI batch (the OpenAI dialect: relayd validates each record and writes
    output and error files): the file's records uploaded, then a batch made of them.
    `records`: the file is whole OpenAI records (`openai_records`), whose url is the
    batch's endpoint (`--endpoint`, if given, must be it); else `--endpoint` says it,
    and a line may be a bare request body. `--model` fills a body that names none."""
    not_here = relay_job_options(args) + (["--column"] if args.column else [])
    if not_here:
        raise Stop(USAGE, f"{not_here[0]} is for Relay jobs, not OpenAI batches "
                   "(--endpoint, or a file of OpenAI records)")
    path = str(args.file)
    try:
        if records is None:
            endpoint = args.endpoint
            source = read_records(args.file, endpoint=endpoint, model=args.model)
        else:
            endpoint = args.endpoint or records_endpoint(records, path=path)
            source = records_of(records, endpoint=endpoint, model=args.model, path=path)
    except InputFileError as exc:
        raise Stop(USAGE, str(exc)) from None
    if args.name and len(args.name) > table_jobs.METADATA_VALUE:  # before the upload
        raise Stop(USAGE, f"--name is {len(args.name)} characters; a batch's name takes at "
                   f"most {table_jobs.METADATA_VALUE}")
    if args.dry_run:  # the records inline: nothing is uploaded
        return show_estimate(client.estimate(inline_batch(source.rows, endpoint=endpoint)),
                             json_out=wants_json(args))
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in source.rows)
    upload = client.upload(args.file.name, data.encode(),
                           idempotency_key=idempotency_key(args, "file"))
    batch = client.create_batch(upload["id"], endpoint=endpoint,
                                metadata={"name": args.name or args.file.name},
                                idempotency_key=idempotency_key(args, "batch"))
    if args.wait:
        return wait_for(client, batch["id"], json_out=wants_json(args))
    if wants_json(args):
        emit(batch)
    else:
        print(f"submitted {len(source.rows)} {endpoint} records from {args.file} as "
              f"batch {batch['id']} ({batch['status']})")
    return OK


def submit_table(client: RelayClient, args: argparse.Namespace) -> int:
    """`--template`: every row's prompt made from its columns, the whole table checked
    before anything is sent, run as an OpenAI batch of chat records."""
    not_here = [flag for flag, value in (
        ("--endpoint", args.endpoint), ("--cron", args.cron), ("--webhook", args.webhook),
        ("--column", args.column), ("--priority", args.priority or None)) if value is not None]
    if not_here:
        raise Stop(USAGE, f"{not_here[0]} does not go with --template (a table's rows run "
                   "as an OpenAI chat batch)")
    if args.model is None:
        raise Stop(USAGE, "--model is required")
    try:
        template = parse_template(args.template)
    except TemplateError as exc:
        raise Stop(USAGE, f"--template: {exc}") from None
    if args.name and len(args.name) > table_jobs.METADATA_VALUE:  # before the upload
        raise Stop(USAGE, f"--name is {len(args.name)} characters; a batch's name takes at "
                   f"most {table_jobs.METADATA_VALUE}")
    request = Request(args.model, system=args.system, params=body_params(args))
    try:
        batch = table_jobs.table_batch(read_table(args.file), template, request=request,
                                       id_column=args.id_column, name=args.name)
    except InputFileError as exc:
        raise Stop(USAGE, str(exc)) from None
    if args.dry_run:  # the records inline: nothing is uploaded
        return show_estimate(client.estimate(inline_batch(batch.records, endpoint=CHAT)),
                             json_out=wants_json(args))
    job = table_jobs.submit(client, batch, filename=args.file.with_suffix(".jsonl").name,
                            keys=(idempotency_key(args, "file"), idempotency_key(args, "batch")))
    if args.wait:
        return wait_for(client, job["id"], json_out=wants_json(args))
    if wants_json(args):
        emit(job)
    else:
        print(f"submitted {len(batch.records)} rows from {args.file} as batch {job['id']} "
              f"({job['status']})")
    return OK


def body_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for text in args.settings:
        try:
            key, value = parse_setting(text)
        except ValueError as exc:
            raise Stop(USAGE, f"--set {exc}") from None
        params[key] = value
    if args.response_format is not None:
        path = args.response_format
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
            params["response_format"] = json_schema_format(schema, name=path.stem)
        except (OSError, ValueError) as exc:
            raise Stop(USAGE, f"--response-format {path}: {exc}") from None
    return params


def in_file_terms(exc: RelayError, source: InputFile, path: Path) -> RelayError:
    """relayd's refusal of one row (`requests[3].custom_id`) told as FILE:LINE, with the
    row's field; any other refusal as it came."""
    line, field = source.locate(exc.param)
    if line is None:
        return exc
    return RelayError(exc.status, f"{path}:{line}: {source.in_file_terms(exc.message)}",
                      field)


def wait_for(client: RelayClient, job_id: str, *, json_out: bool) -> int:
    say(f"waiting for job {job_id} (Ctrl-C stops waiting, not the job)")
    try:
        job = progress.watch(lambda: client.job(job_id), stream=sys.stderr, every=POLL_S)
    except KeyboardInterrupt:
        raise Stop(INTERRUPTED, f"stopped waiting; job {job_id} keeps running on relayd "
                   f"(`relay status {job_id}`)") from None
    view = progress.summarize(job)
    if json_out:
        emit(job)
    else:
        print(progress.outcome(view))
        if job.get("error"):
            print(f"error: {job['error']}")
    if view.status != progress.SUCCEEDED:
        return REFUSED
    return ROWS_FAILED if view.failed else OK


def ls(client: RelayClient, args: argparse.Namespace) -> int:
    listing = client.job_listing(page=min(args.limit, 100), most=args.limit,
                                 status=args.status)
    jobs = listing.jobs
    if wants_json(args):
        emit(jobs)
    elif not jobs:
        say("no jobs" + (f" with status {args.status}" if args.status else ""))
    else:
        print(table(JOB_COLUMNS, [job_cells(progress.summarize(j)) for j in jobs],
                    right={"PRI", "DONE/TOTAL", "FAILED", "DEAD"}))
    if listing.more:  # on stderr, so stdout stays the table (or the JSON array)
        say(f"more jobs exist than the {len(jobs)} shown: --limit {args.limit * 2} "
            f"shows more")
    return OK


JOB_COLUMNS = ("ID", "STATUS", "NAME", "MODEL", "PRI", "TIER", "DONE/TOTAL", "FAILED",
               "DEAD", "CREATED")


def job_cells(job: progress.JobSummary) -> list[str]:
    """A job's line of `relay ls`; `-` where its dialect does not say (an OpenAI batch
    has a tier, not a priority, and no dead-letter count; a Message Batch names no
    model), so every line has every column."""
    return [job.id, job.shown_status, clip(job.name, 32) or "-", job.model or "-",
            job.priority or "-", job.tier or "-", f"{job.done}/{job.total}",
            str(job.failed), "-" if job.dead_letter is None else str(job.dead_letter),
            job.created_at]


def status(client: RelayClient, args: argparse.Namespace) -> int:
    job = client.job(full_id(client, args.id))
    if wants_json(args):
        emit(job)
        return OK
    fields = {k: v for k, v in job.items() if k != "object"}
    if "status" in fields:  # in the words `relay ls` uses: "completed with errors"
        fields["status"] = progress.summarize(job).shown_status
    width = max(len(k) for k in fields) + 1
    for key, value in fields.items():
        if key.endswith("_at") and isinstance(value, int):  # OpenAI's Unix seconds
            value = progress.iso(value)
        print(f"{key + ':':<{width}} {plain(value)}")
    return OK


def full_id(client: RelayClient, text: str) -> str:
    """The id of the job `text` names: itself when relayd knows it, else the one job
    whose id starts with it (read from the list of every job, both dialects). No job:
    relayd's own 404; several: a usage error naming them."""
    if not text:
        raise Stop(USAGE, "a job id cannot be empty")
    try:
        client.job(text)
        return text
    except RelayError as exc:
        if exc.status != 404:
            raise
        unknown = exc
    matches: list[str] = [job["id"] for job in client.all_jobs(most=PREFIX_SCAN)
               if job["id"].startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise unknown
    shown = ", ".join(matches[:AMBIGUOUS_SHOWN]) + (
        ", …" if len(matches) > AMBIGUOUS_SHOWN else "")
    raise Stop(USAGE, f"job id prefix {text!r} is ambiguous: {len(matches)} jobs start "
               f"with it ({shown}); give more of the id", candidates=matches)


def cancel(client: RelayClient, args: argparse.Namespace) -> int:
    job = client.cancel(full_id(client, args.id))
    if wants_json(args):
        emit(job)
    elif (shown := progress.summarize(job)).ended:  # in any dialect's shape
        print(f"{job['id']}: {shown.status}")
    else:  # a running job stops dispatching now and ends once rows in flight finish
        print(f"{job['id']}: cancelling (rows in flight may still finish; "
              f"`relay status {job['id']}` shows when it has ended)")
    return OK


def pause(client: RelayClient, args: argparse.Namespace) -> int:
    job = client.pause(full_id(client, args.id))
    if wants_json(args):
        emit(job)
    else:  # rows in flight finish; none starts until it resumes
        print(f"{job['id']}: paused (rows in flight finish; none starts until "
              f"`relay resume {job['id']}`; its completion window keeps running)")
    return OK


def resume(client: RelayClient, args: argparse.Namespace) -> int:
    job = client.resume(full_id(client, args.id))
    if wants_json(args):
        emit(job)
    elif job.get("paused") == "budget":  # the Relay shape says why it is still held
        print(f"{job['id']}: resumed, but its workspace's budget is spent: it runs once "
              "the budget is raised or its period rolls over")
    else:
        print(f"{job['id']}: resumed")
    return OK


def results(client: RelayClient, args: argparse.Namespace) -> int:
    """Pages of results (`RESULTS_PAGE` at a time) are printed or written as they come,
    so a job of any size streams; --json gathers them into one array."""
    out = args.output
    if args.join is not None or args.expand or args.failed_only:
        if args.follow:
            raise Stop(USAGE, "--follow prints rows as they finish; --join, --expand and "
                       "--failed-only read the ended job's files")
        return joined_results(client, args)
    if args.id_column:
        raise Stop(USAGE, "--id-column goes with --join or --failed-only")
    if out is not None and out.suffix.lower() not in FORMATS:
        raise Stop(USAGE, f"-o {out}: the file name must end in .jsonl or .csv")
    args.id = full_id(client, args.id)
    if args.follow:
        if (shown := client.results_so_far(args.id, limit=1)["status"]) == "scheduled":
            raise Stop(REFUSED, not_ended(args.id, shown))  # a template never ends
        items: Iterator[dict[str, Any]] = client.follow_results(
            args.id, ended=progress.ENDED, wait=time.sleep, every_s=POLL_S)
    else:
        pages = client.result_pages(args.id)
        first = next(pages)
        if first["status"] not in progress.ENDED:
            raise Stop(REFUSED, not_ended(args.id, first["status"]))
        items = itertools.chain(first["data"], itertools.chain.from_iterable(
            page["data"] for page in pages))
    if out is not None:
        try:
            count = write_results(out, items)  # whole or not at all
        except ExportError as exc:
            raise Stop(USAGE, f"cannot write the results: {exc}") from exc
        if wants_json(args):
            emit({"id": args.id, "path": str(out), "rows": count})
        else:
            print(f"wrote {count} results of job {args.id} to {out}")
    elif wants_json(args):
        emit(list(items))
    else:
        for item in items:
            print(json.dumps(item, ensure_ascii=False), flush=args.follow)
    return OK


def joined_results(client: RelayClient, args: argparse.Namespace) -> int:
    """--join / --expand / --failed-only: the input table's rows with their results (or
    the failed ones alone), written whole to -o, or as JSON lines on stdout."""
    out = args.output
    if out is not None and not is_table_file(out):
        raise Stop(USAGE, f"-o {out}: the file name must end in .csv, .jsonl or .parquet")
    job = client.job(full_id(client, args.id))
    if str(job.get("status")) not in progress.ENDED:
        raise Stop(REFUSED, not_ended(job["id"], str(job.get("status"))))
    try:
        path = Path(args.join) if args.join else table_jobs.recorded_table(job)
        table = read_table(path)
        ids = row_ids(table, args.id_column or table_jobs.id_column(job))
    except table_jobs.NoTable as exc:
        raise Stop(USAGE, str(exc)) from None
    except InputFileError as exc:
        raise Stop(USAGE, str(exc)) from None
    found = table_jobs.outcomes(client, job)
    try:
        joined = (failed_rows(table, ids, outcomes=found) if args.failed_only
                  else join_results(table, ids, outcomes=found, expand=args.expand))
    except ValueError as exc:
        raise Stop(USAGE, f"--join {path}: {exc}") from None
    failed = sum(found.get(custom_id, MISSING).failed for custom_id in ids)
    if out is None:
        lines = [json.dumps(row, ensure_ascii=False, default=cell_text) for row in joined.rows]
        print(f"[{', '.join(lines)}]" if wants_json(args) else "\n".join(lines))
        return OK
    try:
        count = write_table(out, joined.columns, rows=joined.rows, types=joined.types)
    except TableWriteError as exc:
        raise Stop(USAGE, f"cannot write the table: {exc}") from None
    if wants_json(args):
        emit({"id": job["id"], "path": str(out), "rows": count, "failed": failed})
    else:
        what = "failed rows" if args.failed_only else f"rows ({failed} failed)"
        print(f"wrote {count} {what} of {path} joined with job {job['id']} to {out}")
    return OK


def not_ended(job_id: str, job_status: str) -> str:
    if job_status == "scheduled":
        return (f"job {job_id} is a cron template; its runs have the results "
                f"(`relay ls` lists them)")
    return (f"job {job_id} has not ended yet ({job_status}); its results are ready when "
            f"it ends (`relay status {job_id}`)")


def dead_letter_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("id", nargs="?", help="the job's id or a unique prefix (none: the "
                     "open dead-lettered rows of every job)")
    action = sub.add_mutually_exclusive_group()
    action.add_argument("--retry", action="store_true",
                        help="re-drive the open rows (or --rows) into a new job")
    action.add_argument("--discard", action="store_true",
                        help="take the open rows (or --rows) off the dead-letter list")
    sub.add_argument("--rows", metavar="ID,…", type=lambda text: [
        r for r in text.split(",") if r], action="extend",
        help="only these custom_ids (comma-separated; may repeat)")
    sub.add_argument("--force", action="store_true",
                     help="with --retry: also rows re-driven or discarded already")


def dead_letter(client: RelayClient, args: argparse.Namespace) -> int:
    if (args.retry or args.discard or args.rows) and not args.id:
        raise Stop(USAGE, "--retry, --discard and --rows need a job id")
    if args.rows and not (args.retry or args.discard):
        raise Stop(USAGE, "--rows goes with --retry or --discard")
    if args.force and not args.retry:
        raise Stop(USAGE, "--force goes with --retry")
    args.id = args.id and full_id(client, args.id)
    if args.retry:
        return retry_dead_letter(client, args)
    if args.discard:
        answer = client.discard_dead_letter(args.id, args.rows)
        if wants_json(args):
            emit(answer)
        else:
            print(f"{args.id}: discarded {answer['discarded']} row(s); "
                  f"{answer['dead_letter_open']} still open")
        return OK
    return list_dead_letter(client, args)


def list_dead_letter(client: RelayClient, args: argparse.Namespace) -> int:
    every_job = args.id is None
    entries = (client.all_dead_letter() if every_job else client.dead_letter(args.id))["data"]
    if wants_json(args):
        emit(entries)
    elif not entries:
        say("no open dead-lettered rows" if every_job
            else f"job {args.id} has no dead-lettered rows")
    else:
        headers: tuple[str, ...] = ("CUSTOM_ID", "ATTEMPTS", "STATE", "MODELS", "LAST ERROR")
        rows = [[e["custom_id"], attempts_cell(e), dead_letter_state(e),
                 ",".join(e["models"]), e.get("last_error") or ""] for e in entries]
        if every_job:
            headers = ("JOB", *headers)
            rows = [[e["batch_id"], *row] for e, row in zip(entries, rows, strict=True)]
        text = table(headers, rows, right={"ATTEMPTS"})
        print(fit(text) if sys.stdout.isatty() else text)
    return OK


def dead_letter_state(entry: dict[str, Any]) -> str:
    """`open`, `discarded`, or `redriven → JOB`: where the row went."""
    if entry.get("redriven_to"):
        return f"redriven → {entry['redriven_to']}"
    return str(entry.get("state") or "open")


def retry_dead_letter(client: RelayClient, args: argparse.Namespace) -> int:
    job = client.retry_dead_letter(args.id, args.rows, force=args.force)
    if wants_json(args):
        emit(job)
    else:
        total = job.get("total") or (job.get("request_counts") or {}).get("total")
        print(f"re-drove {total} row(s) of job {args.id} as job {job['id']} "
              f"({job.get('name') or (job.get('metadata') or {}).get('name') or ''})")
    return OK


def nodes(client: RelayClient, args: argparse.Namespace) -> int:
    answer = client.nodes()
    if wants_json(args):  # relayd's own words, for scripts
        emit(answer["data"])
        return OK
    listed = NodeList.from_answer(answer).nodes
    if listed:
        print(table(NODE_COLUMNS, [node_cells(n) for n in listed], right={"HEARTBEAT"}))
    else:
        say("no nodes")
    return OK


NODE_COLUMNS = ("NODE", "ADDRESS", "HEALTH", "VERSION", "HEARTBEAT", "STARTED", "JOBS")


def node_cells(node: NodeView) -> list[str]:
    """One node: `(this)` marks the one that answered; JOBS are the ids of the
    workspace's jobs it runs."""
    return [node.id + (" (this)" if node.this else ""), node.address or "-", node.health,
            node.version or "-", heartbeat_text(node.silent_s, unknown="-"),
            plain(node.started_at), ",".join(job.id for job in node.jobs) or "-"]


COMMANDS: list[tuple[str, str, Command, Callable[[argparse.ArgumentParser], None]]] = [
    ("submit", "submit a .csv or .jsonl file as one job (a .jsonl of OpenAI records, or "
     "--endpoint: as an OpenAI batch; --template: a table's rows, .parquet too)", submit,
     submit_options),
    ("ls", "list jobs, newest first", ls, ls_options),
    ("status", "show one job", status, id_option),
    ("cancel", "cancel a queued, running or scheduled job", cancel, id_option),
    ("pause", "pause a job: rows in flight finish, no row starts, it gives up its running "
     "slot (kept across restarts)", pause, id_option),
    ("resume", "let a paused job run again", resume, id_option),
    ("results", "print a finished job's results as JSONL (a JSON array with --json), "
     "or save them with -o; --join: the input table with its answers", results,
     results_options),
    ("dead-letter", "list a job's dead-lettered rows (every job's open ones with no id); "
     "--retry re-drives them, --discard takes them off the list", dead_letter,
     dead_letter_options),
    ("nodes", "list the relayd nodes sharing the database: address, health, version, "
     "heartbeat, and the ids of your jobs each runs", nodes, lambda sub: None),
]


# -- output --------------------------------------------------------------------------


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "json", False)


def emit(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def say(message: str) -> None:
    print(message, file=sys.stderr)


def plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def fit(text: str) -> str:
    """Clip each line to the terminal's width (a long last error would wrap)."""
    width = shutil.get_terminal_size().columns
    return "\n".join(clip(line, width) for line in text.splitlines())


def table(headers: Sequence[str], rows: list[list[str]], *, right: set[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def render(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if h in right else c.ljust(w)
                         for c, w, h in zip(cells, widths, headers, strict=True)).rstrip()

    return "\n".join(render(r) for r in [headers, *rows])


if __name__ == "__main__":
    sys.exit(main())
