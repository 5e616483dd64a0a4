"""The order the suite's files reach the xdist workers (`just test`: `--dist loadfile
--no-loadscope-reorder`). xdist would otherwise hand out the files with the most
tests first, which leaves the few long ones (the bench harness's tiny runs, the
end-to-end files) for last, one worker running them while the others idle. So the
kinds of file that take longest go first, each file's tests kept together and in
their order."""

from __future__ import annotations

import pytest

# Slowest first, by the suite's durations: a bench harness file is a minute's work,
# an end-to-end file tens of seconds, a unit file a second or two.
FIRST = ("tests/bench/", "tests/e2e/", "tests/tui/", "tests/cli/", "tests/api/")


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(FIRST) if nodeid.startswith(prefix)),
                len(FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: files stay whole
