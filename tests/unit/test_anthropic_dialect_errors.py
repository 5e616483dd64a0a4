"""The Message Batches API's error envelope and auth headers, and the schema its Structs
generate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import ErrorResponse as SdkErrorResponse

from daemon.dialects.anthropic import auth, shapes
from daemon.dialects.anthropic.errors import RESULT_ERROR_TYPES, error_response, type_for_status
from daemon.domain import codec
from daemon.domain.errors import (
    Conflict,
    InsufficientStorage,
    InvalidRequest,
    NotFound,
    RelayError,
    TooLarge,
    TooMany,
    Unavailable,
)
from daemon.domain.shapes import Components


@pytest.mark.parametrize(("status", "kind"), [
    (400, "invalid_request_error"), (401, "authentication_error"),
    (403, "permission_error"), (404, "not_found_error"), (408, "invalid_request_error"),
    (409, "invalid_request_error"), (413, "request_too_large"),
    (429, "rate_limit_error"), (500, "api_error"), (503, "overloaded_error"),
    (504, "timeout_error"), (507, "api_error"), (529, "overloaded_error"),
])
def test_the_type_follows_the_status(status: int, kind: str) -> None:
    assert type_for_status(status) == kind


@pytest.mark.parametrize(("error", "status", "kind"), [
    (InvalidRequest("requests: Field required.", param="requests"), 400,
     "invalid_request_error"),
    (TooLarge("The body is over 256 MB."), 413, "request_too_large"),
    (NotFound("No batch found with id 'msgbatch_x'."), 404, "not_found_error"),
    (Conflict("Only an ended batch can be deleted."), 409, "invalid_request_error"),
    (TooMany("Slow down.", code="rate_limit_exceeded", retry_after_s=3), 429,
     "rate_limit_error"),
    (Unavailable("Shutting down."), 503, "overloaded_error"),
    (InsufficientStorage("Disk full."), 507, "api_error"),
    (RelayError("Boom."), 500, "api_error"),
])
def test_relay_errors_in_anthropics_envelope(error: RelayError, status: int,
                                             kind: str) -> None:
    data = json.loads(codec.dumps(error_response(error, status=status)))
    assert data == {"type": "error", "error": {"type": kind, "message": error.message}}
    if kind != "request_too_large":  # the SDK's union knows it by its status only
        SdkErrorResponse.model_validate(data)


def test_every_error_object_of_the_sdk_has_its_type_in_the_enum() -> None:
    """The SDK's `ErrorObject` union (what an errored result may carry)."""
    from typing import get_args

    from anthropic.types.shared import ErrorObject
    union, *_ = get_args(ErrorObject)
    sdk_types = {get_args(member.model_fields["type"].annotation)[0]
                 for member in get_args(union)}
    assert len(sdk_types) >= 9
    assert sdk_types <= RESULT_ERROR_TYPES


@pytest.mark.parametrize(("headers", "key"), [
    ({"x-api-key": " rk_abc "}, "rk_abc"),
    ({"Authorization": "Bearer rk_abc"}, "rk_abc"),  # the SDK's 2.x releases
    ({"Authorization": "bearer rk_abc"}, "rk_abc"),
    ({"x-api-key": "rk_first", "Authorization": "Bearer rk_second"}, "rk_first"),
    ({"x-api-key": "  "}, None),
    ({"Authorization": "Basic cms6"}, None),
    ({"Authorization": "Bearer  "}, None),
    ({}, None),
])
def test_the_key_is_read_from_x_api_key_or_bearer(headers: dict[str, str],
                                                  key: str | None) -> None:
    assert auth.api_key(headers) == key


def test_the_installed_sdk_sends_a_key_and_a_version_relay_reads() -> None:
    import anthropic
    client = anthropic.Anthropic(api_key="rk_abc", base_url="http://127.0.0.1:9")
    headers = {k: v for k, v in client.default_headers.items() if isinstance(v, str)}
    assert auth.api_key(headers) == "rk_abc"
    auth.check_version(headers)


@pytest.mark.parametrize("headers", [{}, {"anthropic-version": ""},
                                     {"anthropic-version": "latest"},
                                     {"anthropic-version": "2023-06-01; drop"}])
def test_anthropic_version_is_required_and_known(headers: dict[str, str]) -> None:
    with pytest.raises(InvalidRequest) as caught:
        auth.check_version(headers)
    assert caught.value.param == "anthropic-version"
    assert "anthropic-version" in caught.value.message


@pytest.mark.parametrize("version", ["2023-01-01", "2023-06-01", "2026-10-21"])
def test_the_sdks_versions_are_accepted(version: str) -> None:
    auth.check_version({"anthropic-version": version})


def components() -> dict[str, Any]:
    found = Components()
    found.add(shapes.SHAPES)
    return found.schemas


def test_each_component_has_its_docstrings_description() -> None:
    for name, schema in components().items():
        assert schema.get("description"), name


def test_the_create_body_schema_states_the_limits() -> None:
    found = components()
    requests = found["MessageBatchCreateParams"]["properties"]["requests"]
    assert (requests["minItems"], requests["maxItems"]) == (1, 100_000)
    custom_id = found["MessageBatchRequest"]["properties"]["custom_id"]
    assert custom_id["pattern"] == shapes.CUSTOM_ID_PATTERN
    assert found["MessageCreateParams"]["required"] == ["model", "max_tokens", "messages"]


def test_the_parsers_cap_is_the_documents() -> None:
    from daemon.dialects.anthropic.shapes import MAX_REQUESTS
    found = components()
    assert found["MessageBatchCreateParams"]["properties"]["requests"]["maxItems"] == \
        MAX_REQUESTS


def test_the_result_union_is_told_apart_by_type() -> None:
    found = components()
    result = found["MessageBatchResult"]
    kinds = [found[option["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["enum"]
             for option in result["anyOf"]]
    assert kinds == [["succeeded"], ["errored"], ["canceled"], ["expired"]]
