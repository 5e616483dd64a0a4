"""`[limits] max_batch_rows` in every dialect: a batch of more rows is refused the way
that dialect refuses an oversized batch (400 naming `requests` at submit; an OpenAI
batch fails validation with `too_many_tasks`), and one within the cap runs."""

from __future__ import annotations

import pytest

from daemon.dialects import DIALECTS
from tests.api.conftest import MakeRelay, make_relay  # noqa: F401  (the fixture)
from tests.api.openapi_contract import Contract
from tests.dialects.conftest import Face
from tests.dialects.fixtures import FIXTURES
from tests.dialects.interface import Phase

CAP = 2


@pytest.fixture(params=sorted(DIALECTS))
async def capped(request: pytest.FixtureRequest, make_relay: MakeRelay) -> Face:  # noqa: F811
    relay = await make_relay(limits={"max_batch_rows": CAP})
    return Face(FIXTURES[request.param], relay, Contract(relay))


async def test_a_batch_past_the_configured_cap_is_refused_and_one_within_runs(
        capped: Face) -> None:
    over = [(f"r{i}", f"prompt {i}") for i in range(CAP + 1)]
    status, body, _ = await capped.send(capped.d.submit(over, None))
    if status == 200:  # checked by the validator, as OpenAI checks an input file
        job = await capped.ended(capped.d.job_id(body))
        assert capped.d.phase(job) == Phase.FAILED
        assert [e["code"] for e in job["errors"]["data"]] == ["too_many_tasks"]
        assert f"at most {CAP} are allowed" in job["errors"]["data"][0]["message"]
    else:
        assert status == 400, body
        error = capped.d.error(body)
        assert error.names("requests") and f"at most {CAP}" in error.message, error
    job = await capped.submit(over[:CAP])
    ended = await capped.ended(capped.d.job_id(job))
    assert capped.d.counts(ended).succeeded == CAP
