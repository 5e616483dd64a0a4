"""Optional profiling of relayd with py-spy (`--profile DIR`; `pip install py-spy`, not a
project dependency): a flamegraph SVG, the raw collapsed stacks, and a summary of where
the samples fall (threads, functions by own time, modules by inclusive time)."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from bench.procs import BenchError

RATE = 100  # samples a second
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise BenchError("--profile needs py-spy: .venv/bin/pip install py-spy")
    return found


@contextlib.contextmanager
def recording(pid: int, stem: Path) -> Iterator[list[Path]]:
    """Record `pid` while the block runs; yields [svg, raw] paths, written at exit.
    Only threads holding the GIL are sampled (`--gil`): relayd's Python work is
    GIL-bound, so the samples show where it goes (waits on locks, queues and futures
    drop out). relayd is not paused to take them (`--nonblocking`)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".svg"), stem.with_suffix(".collapsed.txt")]
    common = [py_spy(), "record", "--pid", str(pid), "--rate", str(RATE), "--nonblocking",
              "--function", "--gil"]
    procs = [subprocess.Popen([*common, "--format", "flamegraph", "-o", str(paths[0])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([*common, "--threads", "--format", "raw", "-o", str(paths[1])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    time.sleep(1.0)  # let both attach
    try:
        yield paths
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
        for proc in procs:
            proc.wait(timeout=60)


def read_collapsed(path: Path) -> list[tuple[list[str], int]]:
    """Collapsed stacks: (frames, root first; sample count)."""
    stacks = []
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def split_frame(frame: str) -> tuple[str, str]:
    """'send (daemon/upstream/transport.py:88)' → ('send', 'daemon/upstream/transport.py')."""
    match = _FRAME.match(frame)
    return (match["func"], match["file"]) if match else (frame, "")


def thread_kind(frame: str) -> str:
    """'thread (9560): JobSupervisor-201' → 'JobSupervisor': one line per kind of thread."""
    name = frame.partition(":")[2].strip() or frame
    return re.sub(r"[-_]\d+$", "", name) or "?"


def summarise(stacks: list[tuple[list[str], int]], *, top: int = 15) -> dict[str, list]:
    """Sample shares by thread, by function's own time and by module inclusive time."""
    total = sum(count for _, count in stacks) or 1
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    for frames, count in stacks:
        thread, calls = (frames[0], frames[1:]) if frames[0].startswith("thread") else (
            "", frames)
        threads[thread_kind(thread)] += count
        if calls:
            func, file = split_frame(calls[-1])
            own[f"{func} ({file})"] += count
        for module in {split_frame(f)[1] for f in calls}:
            modules[module] += count

    def shares(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(name, count / total) for name, count in counter.most_common(top)]

    return {"threads": shares(threads), "own": shares(own), "modules": shares(modules),
            "samples": [("samples", float(total))]}


def summary(path: Path, *, top: int = 15) -> str:
    parts = summarise(read_collapsed(path), top=top)
    lines = [f"profile: {int(parts['samples'][0][1])} samples of the thread holding the GIL"]
    for title, key in (("by thread", "threads"), ("by function, own time", "own"),
                       ("by file, inclusive", "modules")):
        lines.append(f"  {title}:")
        lines += [f"    {share:6.1%}  {name}" for name, share in parts[key]]
    return "\n".join(lines)
