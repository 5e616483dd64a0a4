"""Schema-driven fuzzing: schemathesis reads the document a real `relayd serve` serves
at `/openapi.json` and sends every operation generated requests, valid and not
(a bounded, derandomized run). No answer may be a 5xx, and every answer must be one
the document lists for that operation, of its content type, with its headers and
matching its schema. Path parameters are often real: a job of each dialect, their
rows and files exist before the run, so the fuzzing reaches past the 404s.

The event stream never ends, so it is left out (tests/api/test_openapi.py checks it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.e2e.harness import Relayd, rows, running_pair, wait_for_status

pytestmark = pytest.mark.e2e

# Not `negative_data_rejection`: an OpenAI batch's records are checked after the create
# answers (a bad record fails that record, as seed 002 has it), so a create whose inline
# records break their schema is rightly a 200.
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance", "ignored_auth",
          "unsupported_method")
EXAMPLES = 6  # per operation and phase (a bounded profile: the suite runs it in CI)
REAL = 0.7  # how often a path parameter is a real id
WORKSPACE = "fuzz"
CHAT = "/v1/chat/completions"
AUTH: list[str] = []  # the workspace's Authorization, once the daemon is up


@pytest.fixture(scope="module")
def relayd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    with running_pair(root, server={"max_body_mb": 1, "max_upload_mb": 1}) as daemon:
        yield daemon


def real_objects(relayd: Relayd) -> dict[str, list[str]]:
    """A finished job of each dialect (with its files): ids the path parameters take."""
    with relayd.client(WORKSPACE) as client:
        relay = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                 "requests": rows(3)}).json()
        records = b"".join(json.dumps(r).encode() + b"\n" for r in records_of(rows(2)))
        upload = client.post("/v1/files", data={"purpose": "batch"},
                             files={"file": ("in.jsonl", records)}).json()
        openai = client.post("/v1/batches", json={
            "input_file_id": upload["id"], "endpoint": CHAT, "completion_window": "24h"}).json()
        done = wait_for_status(client, openai["id"], "completed")
        wait_for_status(client, relay["id"], "completed")
    return {"jobs": [relay["id"], openai["id"]], "rows": ["r-0", "r-1"],
            "files": [upload["id"], done["output_file_id"]]}


def records_of(relay_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"custom_id": r["custom_id"], "method": "POST", "url": CHAT,
             "body": {"model": "gpt-4o-mini", "messages": r["messages"]}} for r in relay_rows]


@pytest.fixture(scope="module")
def served_document(relayd: Relayd) -> schemathesis.BaseSchema:
    real = real_objects(relayd)
    AUTH[:] = [f"Bearer {relayd.key(WORKSPACE)}"]
    config = schemathesis.Config.from_dict({
        "base-url": relayd.url,
        "headers": {"Authorization": f"Bearer {relayd.key(WORKSPACE)}"},
        "dictionaries": {name: {"values": ids} for name, ids in real.items()},
        "parameters": {f"path.{param}": {"dictionary": name, "probability": REAL}
                       for param, name in (("job_id", "jobs"), ("custom_id", "rows"),
                                           ("file_id", "files"))},
        "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
        "phases": {"stateful": {"enabled": False}},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
    })
    return schemathesis.openapi.from_url(relayd.url + "/openapi.json", config=config)


document = schemathesis.pytest.from_fixture("served_document")


@pytest.mark.timeout(300)  # every operation's examples, against one relayd
@document.exclude(path="/v1/events").parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_generated_requests_get_documented_answers(case: schemathesis.Case) -> None:
    # The key again as this call's own header: beside a generated header (an
    # Idempotency-Key), schemathesis takes the configured one for generated auth.
    case.call_and_validate(headers={"Authorization": AUTH[0]})
