"""The order the suite's files reach the xdist workers (`just test`: `--dist loadfile
--no-loadscope-reorder`). xdist would otherwise hand out the files with the most
tests first, which leaves the few long ones (the bench harness's tiny runs, the
end-to-end files) for last, one worker running them while the others idle. So the
kinds of file that take longest go first, each file's tests kept together and in
their order.

Also what the cyclic garbage collector scans. A worker's heap grows to one or two
million objects that live to its end (the modules it imported, the SDKs, Textual):
every full collection scanned them again, and at the end pytest's check for
unraisable exceptions collects five times, one to one and a half seconds each. That
outlasted the five seconds execnet gives a worker to finish, and it then sent the
worker a SIGINT (the KeyboardInterrupt in CI's logs). So what lives on is frozen out
of the scans (`gc.freeze`): after collection, and again after each file, once its
garbage is collected."""

from __future__ import annotations

import gc

import pytest

# Slowest first, by the suite's durations: a bench harness file is a minute's work,
# an end-to-end file tens of seconds, a unit file a second or two.
FIRST = ("tests/bench/", "tests/e2e/", "tests/tui/", "tests/cli/", "tests/api/")


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(FIRST) if nodeid.startswith(prefix)),
                len(FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: files stay whole


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()  # what collection imported lives to the end


@pytest.hookimpl(trylast=True)  # after the file's own fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a file's last test: collect its garbage, then freeze what is left (a
    test that unfroze everything, as mypy's API does, is made good here too)."""
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
