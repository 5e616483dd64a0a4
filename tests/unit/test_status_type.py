"""A job's status is a `Literal`: writing a name that is not one (the Relay view's
`canceled`, say) is a type error, found by mypy before any test runs."""

from __future__ import annotations

import pytest
from mypy import api

SNIPPET = '''
from daemon.store.interface import Store

def cancel(store: Store) -> None:
    store.transition(1, "{status}", now=0.0)
'''


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("status", "ok"), [("cancelling", True), ("canceled", False)])
def test_only_a_status_type_checks_as_a_transition(status: str, ok: bool) -> None:
    # Its own (empty) config: the project's names the files it checks, and mypy takes
    # either files or a program. Imports are followed silently: only the snippet counts.
    out, err, code = api.run(["--config-file=", "--no-incremental", "--follow-imports=silent",
                              "--python-version=3.11", "-c", SNIPPET.format(status=status)])
    assert code in (0, 1), err
    assert (code == 0) == ok, out
    if not ok:
        assert 'incompatible type "Literal[\'canceled\']"' in out
