"""`relay`: the operator TUI arrives with its own issue; until then this says so."""

from __future__ import annotations

import sys


def main() -> int:
    print("relay: the terminal UI is not built yet; use the HTTP API (see README).",
          file=sys.stderr)
    return 1
