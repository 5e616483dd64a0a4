"""OpenAI's expiration policy `{"anchor": "created_at", "seconds": N}`: as JSON
(`output_expires_after` on batch create) and as the multipart fields the openai SDK
sends for an upload (`expires_after[anchor]`, `expires_after[seconds]`)."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.api.middleware import status_of
from daemon.domain.errors import InvalidRequest
from daemon.domain.files import (
    MAX_LIFETIME_S,
    MIN_LIFETIME_S,
    FileRecord,
    lifetime_from_form,
    lifetime_from_json,
)
from daemon.domain.openai_input import parse_create

FILE_ID = "file-" + "a" * 32


def policy(seconds: Any = 3600, **extra: Any) -> dict[str, Any]:
    return {"anchor": "created_at", "seconds": seconds, **extra}


@pytest.mark.parametrize("seconds", [MIN_LIFETIME_S, 86_400, MAX_LIFETIME_S])
def test_json_seconds_within_bounds(seconds: int) -> None:
    assert lifetime_from_json(policy(seconds), param="p") == seconds


def test_json_absent_is_none() -> None:
    assert lifetime_from_json(None, param="p") is None


@pytest.mark.parametrize(("value", "param"), [
    ("3600", "p"),
    ([3600], "p"),
    (policy(MIN_LIFETIME_S - 1), "p.seconds"),
    (policy(MAX_LIFETIME_S + 1), "p.seconds"),
    (policy("3600"), "p.seconds"),  # JSON sends a number
    (policy(3600.5), "p.seconds"),
    (policy(True), "p.seconds"),
    (policy(None), "p.seconds"),
    ({"anchor": "created_at"}, "p.seconds"),
    ({"seconds": 3600}, "p.anchor"),
    (policy(anchor="last_active_at"), "p.anchor"),
    (policy(days=1), "p.days"),
])
def test_json_refusals_name_the_field(value: Any, param: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        lifetime_from_json(value, param="p")
    assert (status_of(refused.value), refused.value.param) == (400, param)


def test_form_fields() -> None:
    fields = {"anchor": "created_at", "seconds": "7200"}
    assert lifetime_from_form(fields, param="expires_after") == 7200
    assert lifetime_from_form({}, param="expires_after") is None


@pytest.mark.parametrize(("fields", "param"), [
    ({"anchor": "created_at", "seconds": "59"}, "expires_after[seconds]"),
    ({"anchor": "created_at", "seconds": "1e4"}, "expires_after[seconds]"),
    ({"anchor": "created_at", "seconds": "-3600"}, "expires_after[seconds]"),
    ({"anchor": "created_at", "seconds": ""}, "expires_after[seconds]"),
    ({"anchor": "created_at"}, "expires_after[seconds]"),
    ({"seconds": "3600"}, "expires_after[anchor]"),
    ({"anchor": "now", "seconds": "3600"}, "expires_after[anchor]"),
    ({"anchor": "created_at", "seconds": "3600", "days": "1"}, "expires_after[days]"),
])
def test_form_refusals_name_the_field_as_sent(fields: dict[str, str], param: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        lifetime_from_form(fields, param="expires_after")
    assert refused.value.param == param


def test_batch_create_takes_output_expires_after() -> None:
    body = {"input_file_id": FILE_ID, "endpoint": "/v1/chat/completions",
            "completion_window": "24h"}
    assert parse_create(body).output_expires_after_s is None
    taken = parse_create(body | {"output_expires_after": policy(7200)})
    assert taken.output_expires_after_s == 7200
    with pytest.raises(InvalidRequest) as refused:
        parse_create(body | {"output_expires_after": policy(60)})
    assert refused.value.param == "output_expires_after.seconds"


def test_a_file_expires_at_its_expires_at() -> None:
    record = FileRecord(id=FILE_ID, workspace_id=1, filename="a.jsonl", purpose="batch",
                        bytes=1, created_at=100.0, path="/x", expires_at=3700.0)
    assert not record.expired(3699.9)
    assert record.expired(3700.0)
    assert not FileRecord(**(record.__dict__ | {"expires_at": None})).expired(1e12)
