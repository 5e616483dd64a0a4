"""`relay nodes` against a real relayd: the answering node, in text and with --json, and
of the jobs it runs only the caller's workspace's. The text is `relaytui.nodes`'s
reading of the answer, as in the TUI's nodes view."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from relaytui import cli as relay_cli
from relaytui.nodes import NodeView
from tests.cli.conftest import Run
from tests.e2e.harness import Relayd, rows, running_pair, wait_until

pytestmark = pytest.mark.e2e

SLOW = "Classify slowly [sim:sleep=1500]"


@pytest.fixture(scope="module")
def relayd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    """A daemon of this module's: it beats every second (`lease_s` 3), so a job it runs
    is on its node's list at once."""
    with running_pair(tmp_path_factory.mktemp("nodes"), running=4,
                      tables={"cluster": {"lease_s": 3}}) as daemon:
        yield daemon


@pytest.fixture
def as_workspace(cli: Callable[..., Run], relayd: Relayd, monkeypatch: pytest.MonkeyPatch,
                 workspace: str) -> Callable[..., Run]:
    monkeypatch.setenv("RELAY_URL", relayd.url)
    monkeypatch.setenv("RELAY_API_KEY", relayd.key(workspace))
    return cli


def started(http: httpx.Client, name: str) -> str:
    job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": name,
                                         "requests": rows(40, text=SLOW)}).json()
    return str(job["id"])


def test_nodes_shows_the_answering_node(as_workspace: Callable[..., Run]) -> None:
    text = as_workspace("nodes")
    assert text.code == relay_cli.OK, text.err
    header, line = text.out.splitlines()
    assert header.split() == ["NODE", "ADDRESS", "HEALTH", "VERSION", "HEARTBEAT",
                              "STARTED", "JOBS"]
    [node] = as_workspace("nodes", "--json").json()
    assert (node["self"], node["health"], node["jobs"]) == (True, "healthy", [])
    assert line.startswith(f"{node['id']} (this)  {node['address']}  healthy  ")
    assert line.endswith(f" ago  {node['started_at']}  -")


def test_nodes_names_only_the_callers_jobs(as_workspace: Callable[..., Run], relayd: Relayd,
                                           workspace: str) -> None:
    with relayd.client(workspace) as mine, relayd.client(f"{workspace}-b") as theirs:
        my_job, their_job = started(mine, "mine"), started(theirs, "theirs")
        try:
            def listed() -> list[str] | None:
                [node] = as_workspace("nodes", "--json").json()
                ids = [job["id"] for job in node["jobs"]]
                return ids or None

            assert wait_until(listed, timeout=10) == [my_job]
            [node] = as_workspace("nodes", "--json").json()
            assert node["jobs"] == [{"id": my_job, "status": "running", "name": "mine",
                                     "dialect": "relay"}]
            assert as_workspace("nodes").out.splitlines()[1].split()[-1] == my_job
            def their_view() -> list[str] | None:  # their job starts on its own tick too
                ids = [job["id"] for job in theirs.get("/v1/nodes").json()["data"][0]["jobs"]]
                return ids or None

            assert wait_until(their_view, timeout=10) == [their_job]
        finally:
            mine.post(f"/v1/batches/{my_job}/cancel")
            theirs.post(f"/v1/batches/{their_job}/cancel")


def test_what_relayd_did_not_say_is_a_dash() -> None:
    node = NodeView.from_answer({"id": "web-9", "health": "lost", "jobs": [{"id": "b1"}]})
    assert relay_cli.node_cells(node) == ["web-9", "-", "lost", "-", "-", "-", "b1"]


def test_a_refused_key_exits_1(cli: Callable[..., Run], relayd: Relayd) -> None:
    run = cli("nodes", "--url", relayd.url, "--key", "rk_not_a_key", "--json")
    assert run.code == relay_cli.REFUSED
    assert run.json()["error"]["status"] == 401
