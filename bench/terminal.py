"""A program in a pseudo-terminal, as an operator's terminal runs it: the bench times the
`relay` TUI from its spawn to the moment a given text is on its screen."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence

from bench.procs import BenchError

# CSI (cursor moves, styles, modes), OSC (titles, clipboard) and the short escapes
# (keypad modes, character sets): what a TUI writes between the characters an
# operator reads.
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]")


def screen_text(output: bytes) -> str:
    """The characters of a terminal's output stream, its escape sequences dropped."""
    return _ESCAPES.sub(b"", output).decode("utf-8", "replace")


def seconds_until_shown(argv: Sequence[str], text: str, *, env: Mapping[str, str],
                        columns: int = 160, lines: int = 45, timeout: float = 30) -> float:
    """Spawn `argv` on a new pseudo-terminal of `columns`×`lines` and read what it
    writes until `text` appears; return the seconds from the spawn. The program is
    killed either way."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower,
                            env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns),
                                 "LINES": str(lines)},  # these win over the terminal's size
                            start_new_session=True)
    os.close(follower)
    written = bytearray()
    try:
        while time.perf_counter() - started < timeout:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    written += os.read(leader, 65536)
                except OSError:  # the program left and closed its terminal
                    break
                if text in screen_text(bytes(written)):
                    return time.perf_counter() - started
            elif proc.poll() is not None:
                break
        tail = screen_text(bytes(written[-2000:]))
        raise BenchError(f"{argv[0]} did not show {text!r} within {timeout:g} s "
                         f"(exit {proc.poll()}); its screen ended: {tail!r}")
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(leader)
