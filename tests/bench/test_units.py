"""The harness's pure parts: sizes, percentiles, targets, /proc readers, profile summary,
the pseudo-terminal reader."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from bench.cluster import TAKEOVER_MIN_ROWS, Counters, Schema, node_tables
from bench.harness import FULL, QUICK
from bench.jobs import job_body, percentile, prompts
from bench.procs import (
    BenchError,
    config_tables,
    counting_switches,
    cpu_seconds,
    peak_rss_mb,
    thread_switches,
)
from bench.profile import read_collapsed, split_frame, summarise
from bench.report import Figure, at_least, at_most, table_rows
from bench.scenarios import restart_latency_ms
from bench.terminal import screen_text, seconds_until_shown
from daemon.testing import config_toml


def test_quick_is_smaller_and_scale_keeps_a_floor() -> None:
    assert QUICK.overhead_rows < FULL.overhead_rows == 20_000
    tiny = QUICK.scaled(0.0001)
    assert tiny.small_jobs == tiny.latency_rows == tiny.rate_rows == 4
    assert tiny.rate_rpm == QUICK.rate_rpm  # a limit, not a size


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile([7.0], 99) == 7


def test_figure_median_spread_and_verdict() -> None:
    figure = Figure("x", "s", "label", "s", at_most(2))
    for value in (3.0, 1.0, 1.5):
        figure.add(value)
    assert (figure.value, figure.passed) == (1.5, True)
    doc = figure.as_json()
    assert (doc["min"], doc["max"], doc["runs"], doc["target"]) == (1.0, 3.0, 3, "<= 2")
    assert Figure("y", "s", "l", "", at_least(0.8), [0.5]).passed is False
    assert Figure("z", "s", "l", "").passed is None
    assert table_rows([Figure("z", "s", "l", "")])[1][3] == "not run"


def test_prompts_are_distinct_and_the_body_is_a_relay_submit() -> None:
    texts = prompts(3, "t")
    assert len(set(texts)) == 3
    assert b'"custom_id":"t-2"' in job_body("fast", texts, tag="t")


def test_proc_readers_on_this_process() -> None:
    assert cpu_seconds(os.getpid()) > 0
    assert peak_rss_mb(os.getpid()) > 1


def test_config_has_the_issue_settings(tmp_path: Path) -> None:
    class Sim:
        base_url = "http://127.0.0.1:1/v1"

    tables = config_tables({"fast": Sim()})  # type: ignore[dict-item]
    text = config_toml(port=1, data_dir=tmp_path, **tables)
    doc = tomllib.loads(text)
    assert doc["gateway"]["batch_concurrency"] == 32
    assert doc["models"] == [{"alias": "fast", "base_url": Sim.base_url, "model": "sim-small",
                              "max_concurrency": 64}]
    assert "retry" not in doc  # defaults


def test_config_adds_an_alias_keys_to_that_alias_only() -> None:
    class Sim:
        base_url = "http://127.0.0.1:1/v1"

    sims = {"paced": Sim(), "other": Sim()}
    models = config_tables(sims, keys={"paced": {"rpm": 3000}})["models"]  # type: ignore[arg-type]
    assert [m.get("rpm") for m in models] == [3000, None]
    assert {m["max_concurrency"] for m in models} == {64}


def test_restart_latency_slows_tiny_jobs_only() -> None:
    assert restart_latency_ms(50_000) == 10
    assert restart_latency_ms(500) == 256


def test_profile_summary_of_collapsed_stacks(tmp_path: Path) -> None:
    raw = tmp_path / "p.txt"
    raw.write_text("thread (11): RowWorker-3;run (pykka/_actor.py:1);"
                   "save (daemon/store/repo.py:9) 3\n"
                   "thread (12): relay-io;loop (asyncio/base_events.py:5) 1\n")
    parts = summarise(read_collapsed(raw))
    assert parts["own"][0] == ("save (daemon/store/repo.py)", 0.75)
    assert ("daemon/store/repo.py", 0.75) in parts["modules"]
    assert parts["threads"] == [("RowWorker", 0.75), ("relay-io", 0.25)]
    assert split_frame("send (daemon/upstream/transport.py:88)") == (
        "send", "daemon/upstream/transport.py")


def test_cluster_nodes_share_a_schema_named_in_their_url() -> None:
    schema = Schema("postgresql://u@h:5432/db?sslmode=disable", "s1")
    assert schema.url == ("postgresql://u@h:5432/db?sslmode=disable"
                          "&options=-csearch_path%3Ds1&application_name=s1")
    assert "application_name" not in schema.bench_url  # the bench's own are not counted

    class Sim:
        base_url = "http://127.0.0.1:1/v1"

    sim: Any = Sim()
    on_pg = node_tables(sim, schema=schema, shared="/tmp/x", lease_s=5)
    assert (on_pg["database"], on_pg["cluster"]) == ({"url": schema.url}, {"lease_s": 5})
    assert on_pg["server"] == {"data_dir": "/tmp/x"}
    assert "database" not in node_tables(sim)
    config = tomllib.loads(config_toml(port=1, data_dir=Path("/d"), **on_pg))
    assert config["models"][0]["max_concurrency"] == 1000
    assert config["gateway"]["batch_concurrency"] == 16
    assert config["server"]["data_dir"] == "/tmp/x"


def test_cluster_counters_subtract_and_tiny_takeovers_keep_a_floor() -> None:
    assert Counters(10, 500, 7, None).since(Counters(4, 100, 2, 3)) == Counters(6, 400, 5, None)
    assert Counters(10, 5, 7, 30).since(Counters(4, 1, 2, 3)).statements == 27
    assert QUICK.scaled(0.05).cluster_lease_s == 5
    assert TAKEOVER_MIN_ROWS == 384  # two leases of 64 rows for each of 3 nodes


def test_switches_of_a_process_that_waits_are_counted() -> None:
    waiting = subprocess.Popen([sys.executable, "-c",
                                "import threading, time\n"
                                "t = threading.Thread(target=lambda: [time.sleep(0.002) "
                                "for _ in range(300)])\n"
                                "t.start(); t.join()"])
    try:
        with counting_switches(waiting.pid, every_s=0.01) as counted:
            waiting.wait(timeout=30)
    finally:
        waiting.kill()
    # Each of its thread's 300 sleeps is a voluntary switch. The thread ends before the
    # last reading, so what it did after the one before is not counted: a bound well
    # under 300 leaves room for a loaded machine's late readings.
    assert counted.voluntary >= 30, counted


def test_switches_of_this_process_are_read_per_thread() -> None:
    counts = thread_switches(os.getpid())
    assert os.getpid() in counts and all(v >= 0 and n >= 0 for v, n in counts.values())


def test_switches_read_at_the_start_and_end_only_count_a_process_that_lives_on() -> None:
    waiting = subprocess.Popen([sys.executable, "-c",
                                "import time\n"
                                "[time.sleep(0.002) for _ in range(100)]\n"
                                "print('slept', flush=True)\n"
                                "input()"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert waiting.stdout is not None
    try:
        with counting_switches(waiting.pid, every_s=None) as counted:
            assert waiting.stdout.readline() == "slept\n"  # its 100 sleeps are done
    finally:
        waiting.kill()
        waiting.wait(timeout=30)
    # Started before it began sleeping (the interpreter's start takes longer than the
    # first reading), so most of its 100 voluntary switches fall inside the block.
    assert counted.voluntary >= 50, counted


def test_screen_text_drops_what_a_terminal_does_not_show() -> None:
    written = (b"\x1b[?1049h\x1b[3;7H\x1b[1;38;2;10;20;30mnight\x1b[0m 9\x1b]0;Relay\x07"
               b"\x1b=9\x1b(B9\x1b]52;c;eA==\x1b\\ \xe2\x9c\x93")
    assert screen_text(written) == "night 999 ✓"


def test_seconds_until_shown_reads_a_real_terminal() -> None:
    """The program sees a terminal of the given size (its own, not COLUMNS and LINES
    from the caller's environment), and the text is found even with styles between its
    letters; a text never shown is a BenchError naming it."""
    script = ('import os, shutil, sys, time; c, l = os.get_terminal_size(sys.stdout.fileno()); '
              'e, m = shutil.get_terminal_size(); '  # COLUMNS and LINES first, as many TUIs
              'sys.stdout.write(f"{sys.stdout.isatty()} {c}x{l} {e}x{m} \\x1b[1mre\\x1b[0mady"); '
              'sys.stdout.flush(); time.sleep(30)')
    took = seconds_until_shown([sys.executable, "-c", script], "True 90x30 90x30 ready",
                               env={**os.environ, "COLUMNS": "80", "LINES": "24"},
                               columns=90, lines=30, timeout=20)
    assert 0 < took < 20  # found while the program still ran (it sleeps 30 s)
    try:
        seconds_until_shown([sys.executable, "-c", "print('hello')"], "ready",
                            env=os.environ, timeout=20)
    except BenchError as exc:
        assert "'ready'" in str(exc) and "hello" in str(exc)
    else:
        raise AssertionError("a text never shown must be a BenchError")
