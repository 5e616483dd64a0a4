"""The nodes view (`n`, `:nodes`): `GET /v1/nodes` read into a `NodeList`, shown as a
table refreshed every few seconds with the highlighted node's jobs below; a refusal is
said, the last list kept. On canned answers, and once against a real relayd."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from textual.widgets import DataTable

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayError
from relaytui.nodes import NodeList, NodeView, heartbeat_text
from relaytui.screens.nodes import NodesScreen
from relaytui.settings import Settings
from relaytui.testing import NOW, FakeRelay, job_id
from tests.e2e.harness import Relayd
from tests.tui.conftest import HERE, SIZE, jobs_screen, wait_for


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(node_id: str, health: str, *, silent: float, up: float, this: bool = False,
         jobs: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"object": "node", "id": node_id, "address": f"http://{node_id}:8080",
            "version": "0.1.0", "started_at": iso(NOW - up), "heartbeat_at": iso(NOW - silent),
            "seconds_since_heartbeat": silent, "health": health, "self": this,
            "jobs": list(jobs)}


REVIEWS = {"id": job_id(1), "status": "running", "name": "Review sentiment — October",
           "dialect": "relay"}
SUMMARIES = {"id": job_id(2), "status": "running", "name": "Ticket summaries — week 40",
             "dialect": "relay"}


def three_nodes() -> dict[str, Any]:
    return {"object": "list", "data": [
        node("web-1-0a1b2c3d", "lost", silent=7200, up=90_000, jobs=(SUMMARIES,)),
        node("web-2-4e5f6a7b", "healthy", silent=1.2, up=3 * 3600 + 120, this=True,
             jobs=(REVIEWS, SUMMARIES)),
        node("web-3-8c9d0e1f", "late", silent=11.0, up=600)]}


class NodesRelay(FakeRelay):
    """FakeRelay with a node list: `nodes_answer` (a dict, or a RelayError to raise)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(replay=False, **kwargs)
        self.nodes_answer: dict[str, Any] | RelayError = three_nodes()
        self.nodes_asked = 0

    def nodes(self) -> dict[str, Any]:
        self.nodes_asked += 1
        if isinstance(self.nodes_answer, RelayError):
            raise self.nodes_answer
        return self.nodes_answer


def app_on(fake: FakeRelay, **options: Any) -> RelayApp:
    return build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures",
                     **options)


def cells(screen: NodesScreen, node_id: str) -> list[str]:
    table = screen.query_one("#nodes", DataTable)
    return [str(c) for c in table.get_row(node_id)]


def text_of(screen: NodesScreen, selector: str) -> str:
    return str(screen.query_one(selector).render())


# -- the answer read ----------------------------------------------------------------


def test_an_answer_is_read_into_nodes_ages_and_jobs() -> None:
    listed = NodeList.from_answer(three_nodes())
    lost, me, late = listed.nodes
    assert (me.id, me.health, me.this, me.silent_s) == ("web-2-4e5f6a7b", "healthy", True, 1.2)
    assert me.up_s == pytest.approx(3 * 3600 + 120, abs=1)  # ISO 8601: whole seconds
    assert [j.name for j in me.jobs] == [REVIEWS["name"], SUMMARIES["name"]]
    assert (me.heartbeat_text, lost.heartbeat_text) == ("1.2s ago", "2h ago")
    assert me.started_at == iso(NOW - (3 * 3600 + 120))
    assert late.jobs_text == "—" and not late.this
    assert listed.summary() == "3 nodes: 1 healthy, 1 late, 1 lost · 3 of your jobs run " \
                               "on 2 of them"


def test_an_odd_or_refused_answer_reads_as_nothing_known() -> None:
    odd = NodeList.from_answer({"data": [{"id": "x", "jobs": "nope"}, "junk"]})
    assert odd.nodes == (NodeView("x", "", "", "?", None, None, False),)
    assert NodeList.from_answer({}).summary().startswith("0 nodes")
    assert (odd.nodes[0].heartbeat_text, heartbeat_text(None, unknown="-")) == ("—", "-")
    refused = NodeList.refused(RelayError(404, "Not Found", code="not_found"))
    assert refused.problem == "No node list: Not Found" and refused.summary() == \
        refused.problem


# -- the screen ---------------------------------------------------------------------


async def test_n_opens_the_nodes_and_their_jobs() -> None:
    fake = NodesRelay()
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("n")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen)
                                and app.screen.query_one("#nodes", DataTable).row_count == 3
                                and app.screen)
        assert cells(screen, "web-2-4e5f6a7b")[:5] == [
            "web-2-4e5f6a7b (this)", "http://web-2-4e5f6a7b:8080", "● healthy", "0.1.0",
            "1.2s ago"]
        assert cells(screen, "web-2-4e5f6a7b")[5:] == [
            "3h", f"{REVIEWS['name']}, {SUMMARIES['name']}"]
        assert cells(screen, "web-1-0a1b2c3d")[2:5] == ["✗ lost", "0.1.0", "2h ago"]
        assert cells(screen, "web-3-8c9d0e1f")[2] == "◌ late"
        assert "3 nodes: 1 healthy, 1 late, 1 lost" in text_of(screen, "#nodes-summary")
        assert "Your jobs on web-1-0a1b2c3d" in text_of(screen, "#node-jobs")  # the first
        await pilot.press("j")
        await wait_for(pilot, lambda: REVIEWS["id"] in text_of(screen, "#node-jobs"))
        await pilot.press("j")
        await wait_for(pilot, lambda: "none: it runs no job" in text_of(screen, "#node-jobs"))
        await pilot.press("escape")
        assert app.screen is app.jobs_screen


async def test_the_list_is_asked_again_and_a_refusal_keeps_the_last_one() -> None:
    fake = NodesRelay()
    app = app_on(fake, nodes_every=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("colon", *"nodes", "enter")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen)
                                and app.screen)
        table = screen.query_one("#nodes", DataTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        fake.nodes_answer = {"object": "list", "data": [
            node("web-2-4e5f6a7b", "stopping", silent=0.4, up=3 * 3600, this=True)]}
        await wait_for(pilot, lambda: table.row_count == 1, what="the next answer")
        assert cells(screen, "web-2-4e5f6a7b")[2] == "◐ stopping"
        fake.nodes_answer = RelayError(None, "cannot reach relayd at http://127.0.0.1:8080")
        await wait_for(pilot, lambda: "cannot reach relayd" in text_of(screen,
                                                                        "#nodes-summary"))
        assert table.row_count == 1 and "the last relayd gave" in text_of(screen,
                                                                          "#nodes-summary")
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.nodes_watch.stopped, what="the watch to stop")
        asked = fake.nodes_asked  # the watch stops as the screen unmounts
        await pilot.pause(0.3)
        assert fake.nodes_asked <= asked + 1  # at most the ask that was under way


async def test_a_relayd_without_the_route_says_so() -> None:
    fake = NodesRelay()
    fake.nodes_answer = RelayError(404, "Not Found", code="not_found")
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("n")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen)
                                and app.screen)
        await wait_for(pilot, lambda: "No node list: Not Found" in text_of(
            screen, "#nodes-summary"))
        assert not screen.query_one("#nodes", DataTable).display


# -- against a real relayd ------------------------------------------------------------


@pytest.mark.e2e
async def test_a_real_relayd_lists_itself(shared_relayd: Relayd, workspace: str,
                                          make_app: Callable[..., RelayApp]) -> None:
    app = make_app(shared_relayd.url, shared_relayd.key(workspace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen)
                                and app.screen.query_one("#nodes", DataTable).row_count == 1
                                and app.screen)
        [me] = screen.listed.nodes
        assert me.this and me.health == "healthy" and me.address.startswith("http://")
        assert cells(screen, me.id)[0] == f"{me.id} (this)"
