"""Cron templates: `scheduled` with a next_run_at, one queued run per due tick (missed
ticks collapse), driven by the injected clock and the scheduler's tick."""

from __future__ import annotations

from tests.actors.harness import answer, wait_for
from tests.api.conftest import Relay, batch

EVERY_FIVE = "*/5 * * * *"
# The harness clock starts at 2026-10-04T09:12:00Z.
FIRST_TICK = "2026-10-04T09:15:00Z"


async def runs_of(relay: Relay, template_id: str) -> list[dict]:
    return (await relay.listing(f"?template_id={template_id}"))["data"]


async def test_template_is_scheduled_with_its_next_tick(relay: Relay) -> None:
    template = await relay.submit(batch("daily digest", "weekly digest", cron=EVERY_FIVE))

    assert (template["status"], template["total"]) == ("scheduled", 2)
    assert template["next_run_at"] == FIRST_TICK
    shown = await relay.job(template["id"])
    assert (shown["cron"], shown["last_run_id"], shown["template_id"]) == (EVERY_FIVE, None, None)
    await relay.tick(relay.clock())  # a tick before the first run is due spawns nothing
    await relay.tick(relay.clock.advance(120))  # 09:14, still before it
    assert await runs_of(relay, template["id"]) == []
    assert relay.upstream.calls == []


async def test_a_due_tick_spawns_one_run_with_the_templates_rows(relay: Relay) -> None:
    template = await relay.submit(batch("digest one", "digest two", cron=EVERY_FIVE))

    await relay.tick(relay.clock.advance(200))  # 09:15:20

    runs = await runs_of(relay, template["id"])
    assert len(runs) == 1
    run = runs[0]
    assert run["id"] != template["id"] and run["template_id"] == template["id"]
    assert run["total"] == 2 and run["cron"] is None
    done = await relay.wait_status(run["id"], "completed")
    assert done["completed"] == 2
    assert await relay.results(run["id"]) == [
        {"custom_id": "r-1", "content": answer("digest one")},
        {"custom_id": "r-2", "content": answer("digest two")},
    ]
    after = await relay.job(template["id"])
    assert after["status"] == "scheduled"
    assert after["last_run_id"] == run["id"]
    assert after["next_run_at"] == "2026-10-04T09:20:00Z"
    assert sorted(relay.upstream.prompts()) == ["digest one", "digest two"]


async def test_the_ticker_spawns_runs_without_help(relay: Relay) -> None:
    template = await relay.submit(batch("tick", cron=EVERY_FIVE))

    relay.clock.advance(200)

    await wait_for(lambda: runs_of(relay, template["id"]), what="the ticker's run")
    for _ in range(2):  # more ticks before the next one is due spawn nothing more
        await relay.tick(relay.clock())
    assert len(await runs_of(relay, template["id"])) == 1


async def test_missed_ticks_collapse_into_one_run(relay: Relay) -> None:
    template = await relay.submit(batch("catch up", cron=EVERY_FIVE))
    await relay.tick(relay.clock.advance(200))  # 09:15:20: the first run
    first = (await runs_of(relay, template["id"]))[0]

    now = relay.clock.advance(3600)  # 10:15:20: twelve ticks missed
    await relay.tick(now)
    await relay.tick(now + 1)

    runs = await runs_of(relay, template["id"])
    assert len(runs) == 2
    assert runs[1]["id"] == first["id"]
    after = await relay.job(template["id"])
    assert after["last_run_id"] == runs[0]["id"]
    assert after["next_run_at"] == "2026-10-04T10:20:00Z"


async def test_a_tick_before_next_run_at_spawns_nothing(relay: Relay) -> None:
    template = await relay.submit(batch("not yet", cron=EVERY_FIVE))
    await relay.tick(relay.clock.advance(60))  # 09:13
    assert await runs_of(relay, template["id"]) == []
    assert (await relay.job(template["id"]))["next_run_at"] == FIRST_TICK
