"""The cursor of partial results: a place in a job's finish order, opaque to clients.

Each row that finishes takes the next number of its job's finish sequence, in the
transaction that stores its outcome and under the job's lock (`store/rows.py`), so what
any read sees is a prefix of that order. A cursor is the last number a reader saw; the
next page is every row past it. Rows finish once, so a reader paging on meets each
finished row exactly once, while the job runs and after it has ended."""

from __future__ import annotations

import base64
import binascii

from daemon.domain.errors import InvalidRequest

_PREFIX = "fin:"


def cursor(seq: int) -> str:
    """The cursor after finish sequence `seq` (0: before the first row)."""
    return base64.urlsafe_b64encode(f"{_PREFIX}{seq}".encode()).decode().rstrip("=")


def position(text: str | None) -> int:
    """The finish sequence a cursor stands after; None or "" is the start."""
    if not text:
        return 0
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (binascii.Error, ValueError) as exc:
        raise _bad(text) from exc
    number = raw.removeprefix(_PREFIX)
    if not raw.startswith(_PREFIX) or not (number.isascii() and number.isdigit()) \
            or len(number) > 18:
        raise _bad(text)
    return int(number)


def _bad(text: str) -> InvalidRequest:
    return InvalidRequest(f"'cursor' {text[:80]!r} is not a cursor this server gave; send "
                          "the next_cursor of an earlier page, or none to start.",
                          param="cursor")
