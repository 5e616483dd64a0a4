"""Fixtures of the dialect contract suite: every test runs once per dialect of
`DIALECTS` (as tests/store/ runs every test against every backend), on the real app
over real HTTP (tests/api/conftest.py's `make_relay`), each answer checked against the
served `/openapi.json`.

A test marked `@pytest.mark.capability(Capability.X)` runs only for the dialects that
declare X, and reads as skipped for the others, naming what they lack.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from daemon.dialects import DIALECTS
from daemon.dialects.base import Capability, Dialect
from tests.actors.harness import wait_for
from tests.api.conftest import MakeRelay, Relay, make_relay  # noqa: F401  (the fixture)
from tests.api.openapi_contract import OPERATIONS, Contract, pointer, validate
from tests.dialects.fixtures import FIXTURES
from tests.dialects.interface import Call, Counts, DialectFixture, Headers, Phase

ENDED_WITHIN_S = 10.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "capability(c): runs for dialects that declare c")


@pytest.fixture(params=sorted(DIALECTS))
def dialect(request: pytest.FixtureRequest) -> DialectFixture:
    """The dialect under test's fixture, once its capabilities allow the test."""
    name: str = request.param
    assert name in FIXTURES, (f"dialect {name!r} has no contract-suite fixture: add "
                              "tests/dialects/fixtures/{name}.py (see DialectFixture)")
    marker = request.node.get_closest_marker("capability")
    if marker is not None and marker.args[0] not in DIALECTS[name].capabilities:
        pytest.skip(f"{name} does not declare {marker.args[0]}")
    return FIXTURES[name]


@pytest.fixture
async def face(dialect: DialectFixture, make_relay: MakeRelay) -> Face:  # noqa: F811
    """A started daemon (webhooks may target loopback) and its app, driven in `dialect`."""
    relay = await make_relay(security={"allow_private_targets": True})
    return Face(dialect, relay, Contract(relay))


def documented(method: str, path: str) -> bool:
    return any(op.method == method.lower() and op.pattern.fullmatch(urlsplit(path).path)
               for op in OPERATIONS)


@dataclass
class Face:
    """The app as one dialect's clients see it: requests built by the fixture, sent
    with its auth headers, every answer checked against the document."""

    d: DialectFixture
    relay: Relay
    contract: Contract

    @property
    def dialect(self) -> Dialect:
        return DIALECTS[self.d.name]

    def has(self, capability: Capability) -> bool:
        return capability in self.dialect.capabilities

    async def send(self, call: Call, *, headers: Headers | None = None,
                   key: str | None = None) -> tuple[int, Any, Any]:
        """(status, JSON body or bytes, headers); `headers` default to the dialect's
        auth with `key` (the workspace's own unless given)."""
        sent = self.d.auth(key or self.relay.key) if headers is None else headers
        async with self.relay.client.request(call.method, call.path, headers=sent,
                                             json=call.json) as resp:
            raw = await resp.read()
            body = json.loads(raw) if resp.content_type == "application/json" else raw
            if documented(call.method, call.path):
                self.contract.check(call.method, call.path, resp.status, resp.content_type,
                                    body, resp.headers)
            else:  # no route serves it: the answer is the dialect's error envelope
                validate(body, pointer("components", "schemas", self.d.error_schema))
            return resp.status, body, resp.headers

    async def ok(self, call: Call, **kwargs: Any) -> Any:
        status, body, _ = await self.send(call, **kwargs)
        assert status == 200, body
        return body

    async def extension(self, call: Call) -> tuple[int, Any]:
        """A Relay route the dialect's jobs use (dead letter, events)."""
        status, body, _ = await self.send(call, headers=self.d.extension_auth(self.relay.key))
        return status, body

    async def submit(self, rows: list[tuple[str, str]], *,
                     webhook_url: str | None = None) -> Any:
        job = await self.ok(self.d.submit(rows, webhook_url))
        assert re.fullmatch(self.d.id_pattern, self.d.job_id(job)), job
        return job

    async def get(self, job_id: str) -> Any:
        return await self.ok(self.d.get(job_id))

    async def ended(self, job_id: str) -> Any:
        """The job once it has ended (polled: every answer checked)."""
        async def done() -> Any:
            job = await self.get(job_id)
            return job if self.d.phase(job).ended else None
        return await wait_for(done, timeout=ENDED_WITHIN_S, what=f"{job_id} to end")

    async def refused(self, call: Call, status: int, *, headers: Headers | None = None,
                      key: str | None = None) -> Any:
        """The error of a refusal, checked: its status, the dialect's envelope, and the
        envelope's type for that status."""
        got, body, answer_headers = await self.send(call, headers=headers, key=key)
        assert got == status, (call, body)
        error = self.d.error(body)
        if status in self.d.error_types:
            assert error.type == self.d.error_types[status], (call, body)
        if status == 405:
            assert "Allow" in answer_headers, "a 405 names the route's methods (RFC 9110)"
        return error

    async def lines(self, job: Any) -> dict[str, Any]:
        """An ended job's result lines by custom_id (each custom_id once), each checked
        against the document's line schema where the fixture names one."""
        found: dict[str, Any] = {}
        for call in self.d.results(job):
            for line in self.d.result_lines(await self.ok(call)):
                if self.d.line_schema is not None:
                    validate(line, pointer("components", "schemas", self.d.line_schema))
                read = self.d.read_line(line)
                assert read.custom_id not in found, f"{read.custom_id} read twice"
                found[read.custom_id] = read
        return found

    def counts(self, job: Any) -> Counts:
        return self.d.counts(job)

    def phase(self, job: Any) -> Phase:
        return self.d.phase(job)

