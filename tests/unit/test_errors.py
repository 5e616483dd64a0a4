"""Relay's one exception tree (domain/errors.py): each class's HTTP status (the API's one
table, api/middleware.py), its envelope type and its default code, as the answers had
them before the tree; and the docstring's drawing names every class."""

from __future__ import annotations

import inspect

import pytest

import daemon.domain.errors as errors
import daemon.store.faults as faults
from daemon.api.middleware import status_of
from daemon.dialects.base import openai_error as error_envelope
from daemon.domain.errors import (
    Conflict,
    InsufficientStorage,
    InvalidRequest,
    NotFound,
    RelayError,
    RequestTimeout,
    TooLarge,
    TooMany,
    Unavailable,
)
from daemon.store.faults import StorageFull, StoreUnavailable


@pytest.mark.parametrize(("error", "status", "type", "code"), [
    (InvalidRequest("m"), 400, "invalid_request_error", None),
    (RequestTimeout("m"), 408, "invalid_request_error", None),
    (TooLarge("m"), 413, "invalid_request_error", None),
    (NotFound("m"), 404, "not_found_error", "not_found"),
    (Conflict("m"), 409, "invalid_request_error", "conflict"),
    (TooMany("m", code="server_busy", retry_after_s=1), 429, "rate_limit_error", "server_busy"),
    (Unavailable("m"), 503, "service_unavailable", "unavailable"),
    (InsufficientStorage("m"), 507, "server_error", "insufficient_storage"),
    (StoreUnavailable("m"), 503, "server_error", "store_unavailable"),
    (StorageFull("m"), 507, "server_error", "insufficient_storage"),
    (RelayError("m"), 500, "server_error", None),
])
def test_each_class_has_its_status_type_and_code(error: RelayError, status: int, type: str,
                                                 code: str | None) -> None:
    assert status_of(error) == status
    assert error_envelope(error) == {"error": {"message": "m", "type": type, "param": None,
                                               "code": code}}


def test_an_error_names_its_own_code_and_param() -> None:
    error = Conflict("Batch b is done.", code="batch_already_ended")
    assert (error.code, Conflict.code) == ("batch_already_ended", "conflict")
    assert InvalidRequest("m", param="limit").param == "limit"


def test_the_drawing_names_every_class_of_the_tree() -> None:
    classes = {cls.__name__ for module in (errors, faults)
               for _, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, RelayError) and cls.__module__ == module.__name__}
    drawn = f"{errors.__doc__}\n{faults.__doc__}"
    assert {"RelayError", "InvalidRequest", "StoreError", "StorageFull"} <= classes
    assert [name for name in sorted(classes) if name not in drawn] == []
