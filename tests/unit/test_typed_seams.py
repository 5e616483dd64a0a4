"""The typed seams, found by mypy before any test runs: an actor's proxy is made only
of its actor's ref and takes only its actor's messages with their arguments (a call
answers a `pykka.Future` of the method's result, `defer` is a tell), and the TUI's
screens take any `RelayApi`, which `RelayClient` is and a client lacking most of its
calls is not."""

from __future__ import annotations

import re

import pytest
from mypy import api

# A line marked `# E<n>` must draw exactly the error EXPECTED[n]; every other line none.
SNIPPET = '''
import threading
import pykka
from daemon.actors.notifier import NotifierProxy
from daemon.actors.scheduler import SchedulerProxy
from daemon.actors.supervisor import Scheduling, SupervisorProxy
from daemon.actors.worker import Report
from relaytui.api import RelayApi
from relaytui.client import RelayClient
from relaytui.screens.nodes import NodesScreen

def scheduler(proxy: SchedulerProxy, notifier: NotifierProxy) -> None:
    proxy.wake()
    proxy.tick.defer(1.0)
    proxy.cancel(7, threading.Event(), tell_others=False)
    drained: list[pykka.Future[None]] = proxy.drain().get(timeout=1)
    alive: bool = proxy.actor_ref.is_alive()
    told: Scheduling = proxy
    wrong = NotifierProxy.of(proxy.actor_ref)  # E8
    proxy.tick.defer("now")  # E1
    proxy.cancel(7)  # E2
    proxy.wakeup()  # E3
    late: int = proxy.wake().get()  # E4
    other: NotifierProxy = proxy  # E5

def supervisor(proxy: SupervisorProxy) -> None:
    proxy.rows_done.defer([])
    report: Report = proxy.rows_done.defer
    proxy.expire(now=1.0)  # E6

class Halfway:
    url = "http://relayd"

    def health(self) -> dict[str, object]:
        return {}

def screens(client: RelayClient, api: RelayApi) -> None:
    NodesScreen(client)
    NodesScreen(api)
    NodesScreen(Halfway())  # E7
'''

EXPECTED = {
    1: 'Argument 1 to "defer" of "Message" has incompatible type "str"; expected "float"',
    2: 'Missing positional argument "ack" in call to "__call__" of "Message"',
    3: '"SchedulerProxy" has no attribute "wakeup"; maybe "wake"?',
    4: 'Incompatible types in assignment (expression has type "None", variable has type '
       '"int")',
    5: 'Incompatible types in assignment (expression has type "SchedulerProxy", variable has '
       'type "NotifierProxy")',
    6: 'Unexpected keyword argument "now" for "__call__" of "Message"',
    7: 'Argument 1 to "NodesScreen" has incompatible type "Halfway"; expected "RelayApi"',
    8: 'Argument 1 to "of" of "ActorProxyOf" has incompatible type "ActorRef[Scheduler]"; '
       'expected "ActorRef[Notifier]"',
}


def marked() -> dict[int, int]:
    """Snippet line -> the error it is marked with."""
    return {number: int(found[1]) for number, line in enumerate(SNIPPET.splitlines(), 1)
            if (found := re.search(r"# E(\d+)$", line))}


@pytest.fixture(scope="module")
def reported() -> dict[int, list[str]]:
    """mypy's errors on the snippet, by line. Its own (empty) config: the project's
    names the files it checks, and mypy takes either files or a program. Imports are
    followed silently: only the snippet counts."""
    out, err, code = api.run(["--config-file=", "--no-incremental", "--follow-imports=silent",
                              "--python-version=3.11", "--show-error-codes",
                              "--no-error-summary", "-c", SNIPPET])
    assert code in (0, 1), err
    errors: dict[int, list[str]] = {}
    for line in out.splitlines():
        if found := re.match(r"<string>:(\d+): error: (.*?)(  \[[a-z-]+\])?$", line):
            errors.setdefault(int(found[1]), []).append(found[2])
    return errors


@pytest.mark.timeout(240)
def test_only_the_marked_lines_fail_to_type_check(reported: dict[int, list[str]]) -> None:
    assert sorted(reported) == sorted(marked()), reported
    assert sorted(marked().values()) == sorted(EXPECTED)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("error", sorted(EXPECTED))
def test_each_marked_line_draws_its_error(reported: dict[int, list[str]], error: int) -> None:
    line = next(number for number, marker in marked().items() if marker == error)
    assert reported.get(line) == [EXPECTED[error]]
