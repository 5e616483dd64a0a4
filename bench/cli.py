"""`python -m bench` (`just bench`): run the scenarios, print the table, write the JSON."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from bench import cluster
from bench.harness import FULL, LATENCY_MS, QUICK, Bench
from bench.limited import CAPACITY, EARLY_S
from bench.report import ROOT, print_table, results_path, write_json
from bench.scenarios import ON_REQUEST, SCENARIOS, figures, restart_latency_ms

RESULTS = ROOT / "bench" / "results"
FULL_RUNS = {**dict.fromkeys(SCENARIOS, 3), "overhead": 5, "partial-read": 3, "rate-limit": 2,
             "rate-learned": 2, "cluster": 2, "retention": 1,
             "many-jobs": 3, "scale": 1}
QUICK_RUNS = {"latency": 2, "overhead": 2, "partial-read": 1, "status": 1, "small-jobs": 1,
              "submit": 2, "rss": 1, "restart": 1, "tools": 1, "workflows": 1, "clients": 2,
              "validation": 1, "rate-limit": 1, "rate-learned": 1, "capacity": 1,
              "cluster": 1, "retention": 1, "many-jobs": 1, "scale": 1}
NOTES = [
    "Relay rows/s = rows ÷ (wall seconds from the 200 of the submit to the first "
    "GET /v1/batches/{id}, polled every 50 ms, that shows the job completed).",
    f"latency ideal = 32 rows in flight ÷ {LATENCY_MS / 1000:g} s = 320 rows/s.",
    "reference = a plain asyncio client on one aiohttp ClientSession sending the same "
    "chat requests to the same simulator, 32 at a time, timed side by side with Relay "
    "in each run (order alternating).",
    "simulator ceiling = the reference against the zero-latency simulator (the "
    "overhead scenario's reference).",
    "relayd CPU = utime + stime from /proc/PID/stat around the overhead job (submit "
    "included); peak RSS = VmHWM of a fresh relayd that ran one job.",
    "context switches = voluntary + involuntary ones of every thread (relayd: "
    "/proc/PID/task/*/status, read every 50 ms so the job's own threads count; the "
    "reference: getrusage of the bench process); simulator preempted = its involuntary "
    "switches, while Relay's job and while the reference run (read before and after: "
    "its threads outlive both).",
    "tools = tool-calling records (2 rounds each; the simulator's HTTP executor on "
    "loopback) and as many plain rows, one after the other; CPU per round = (relayd "
    "CPU per record - CPU per plain row) / 2.",
    "workflows = workflow records on the simulator's map-reduce callback (2 steps: 4 "
    "map requests, 1 reduce) and their 5 requests' worth of plain rows; CPU per step = "
    "(relayd CPU of the records - CPU of the rows) / records / 2.",
    "restart = SIGKILL at half the rows, POST /_sim/reset, start relayd; the first "
    "/_sim/requests `at` after the spawn, minus the spawn time.",
    "rate-limit = a 100 ms simulator with --rpm (sizes.rate_rpm), Relay's model with the "
    "same rpm; ideal = rows ÷ rpm minutes; fixed-pacing reference = requests evenly "
    "spaced at that rpm, all sending paused 15 s after any 429; rate-learned = the same "
    "without rpm in Relay's config, a fresh relayd per run.",
    f"capacity = a 100 ms simulator with --capacity {CAPACITY}, Relay's max_concurrency "
    f"64 (adaptive), a fresh relayd per run; reference = the bare reference {CAPACITY} at "
    f"once; late 429s = those of calls arriving {EARLY_S:g} s or more after the first.",
    "429 shares are counted at the simulator (/_sim/requests) between its reset before "
    "a timed run and that run's end.",
    f"cluster = one job on a {cluster.LATENCY_MS} ms simulator, batch_concurrency "
    f"{cluster.CONCURRENCY} per node, model max_concurrency {cluster.MODEL_LIMIT}, on 1, 2 "
    "and 3 fresh nodes sharing a fresh PostgreSQL schema (RELAY_BENCH_POSTGRES_URL) and on "
    "one SQLite node, submitted through the first node; the takeover kills (-9) one of 3 "
    "nodes once it holds leased rows, every other run (at least once).",
    "cluster timing on PostgreSQL: from the 200 of the submit to the read of the job's "
    "row in the database (every 50 ms, in one transaction rolled back at the end, so the "
    "bench adds no commit) that shows it completed; on SQLite through GET as elsewhere.",
    "cluster database cost = pg_stat_database.xact_commit of the database (every "
    "transaction, read-only ones too: the nodes' idle ticks and heartbeats included), "
    "WAL = pg_current_wal_lsn() moved (the whole server), rows written = n_tup_ins + "
    "n_tup_upd + n_tup_del of the schema's tables; from just before the 3-node submit "
    "until the killed nodes' connections closed (their statistics are then all in). "
    "Statements only where pg_stat_statements is loaded (shared_preload_libraries), "
    "else not run. Ceiling = a probe's commits/s (single-row UPDATEs on "
    f"{cluster.PROBE_THREADS} connections for {cluster.PROBE_S:g} s) ÷ commits per row.",
    "All upstreams are SIMULATED (relayd simulate).",
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help="reduced sizes and repetitions: every figure in under a minute")
    p.add_argument("--only", action="append", choices=list(SCENARIOS), metavar="NAME",
                   help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    p.add_argument("--runs", type=_positive, help="repetitions of every scenario")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every size (tests use --quick --scale 0.05)")
    p.add_argument("--out", type=Path, help="JSON path (default bench/results/<date>.json)")
    p.add_argument("--profile", type=Path, metavar="DIR",
                   help="also run one overhead job under py-spy, writing DIR/overhead.*")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data)")
    return p


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def default_out(args: argparse.Namespace) -> Path:
    path = results_path(RESULTS)
    tags = (["quick"] if args.quick else []) + [f"only-{n}" for n in args.only or []] + (
        [f"scale{args.scale:g}"] if args.scale != 1 else [])
    return path.with_stem("-".join([path.stem, *tags]))


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sizes = (QUICK if args.quick else FULL).scaled(args.scale)
    runs = {name: args.runs or (QUICK_RUNS if args.quick else FULL_RUNS)[name]
            for name in SCENARIOS}
    chosen = list(dict.fromkeys(args.only or [s for s in SCENARIOS if s not in ON_REQUEST]))
    figs = figures()
    bench = Bench(sizes, runs, figs, profile_dir=args.profile)
    errors: dict[str, str] = {}
    started = time.monotonic()
    bench.say(f"relay bench: {', '.join(chosen)}; sizes {asdict(sizes)}; temp {bench.home}")
    try:
        for name in chosen:
            try:
                SCENARIOS[name](bench)
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
                bench.say(f"[{name}] FAILED: {errors[name]}\n{traceback.format_exc()}")
    finally:
        if errors:
            bench.say(bench.log_tails())
        bench.close(keep=args.keep or bool(errors))
    elapsed = time.monotonic() - started
    shown = [f for f in figs.values() if f.scenario in chosen]
    print_table(shown, sys.stdout)
    out = args.out or default_out(args)
    write_json(out, shown, mode="quick" if args.quick else "full", scale=args.scale,
               sizes=asdict(sizes), runs={n: runs[n] for n in chosen},
               restart_latency_ms=restart_latency_ms(sizes.restart_rows),
               seconds=round(elapsed, 1), errors=errors, notes=NOTES)
    print(f"\n{elapsed:.0f} s; figures written to {out}")
    for note in NOTES:
        print(f"  · {note}")
    return 1 if errors else 0
