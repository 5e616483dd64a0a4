"""What the dialect contract suite knows of a dialect: one `DialectFixture` of plain data
and small functions, and the dialect-neutral words the suite reads answers in.

The suite (tests/dialects/test_contract.py) never names a dialect. It builds every
request from the fixture, sends it over HTTP to the real app, checks the answer against
the served `/openapi.json`, and reads it back through the fixture. What a dialect can do
beyond submit and get is `DIALECTS[name].capabilities` (daemon/dialects/base.py), not
the fixture's to say.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

Row = tuple[str, str]  # (custom_id, prompt): the suite names every row it submits
Headers = dict[str, str]


@dataclass(frozen=True)
class Call:
    """One request: `path` may carry a query; `json` is the body (None: no body)."""

    method: str
    path: str
    json: Any = None


class Phase(StrEnum):
    """Where a job is, in words every dialect's statuses map onto."""

    OPEN = "open"  # not ended: validating, queued, scheduled, running, finalizing
    CANCELLING = "cancelling"  # a cancel is under way (where the dialect says so)
    COMPLETED = "completed"  # ended by running every row (some may have failed)
    CANCELLED = "cancelled"
    FAILED = "failed"  # the job as a whole could not run
    EXPIRED = "expired"

    @property
    def ended(self) -> bool:
        return self not in (Phase.OPEN, Phase.CANCELLING)


@dataclass(frozen=True)
class Counts:
    """A job's rows: `failed` is every row that ended without a result (errored,
    refused, dead-lettered, never ran: cancelled or expired)."""

    total: int
    succeeded: int
    failed: int


@dataclass(frozen=True)
class Line:
    """One row's result as the dialect's results read: `text` is the assistant's text
    of a succeeded row, None otherwise."""

    custom_id: str
    succeeded: bool
    text: str | None


@dataclass(frozen=True)
class Page:
    """One page of a list: ids in the order given, and the cursor of the next page."""

    ids: list[str]
    has_more: bool
    cursor: str | None


@dataclass(frozen=True)
class ErrorView:
    """An error answer as the dialect's envelope carries it (`param` None where the
    envelope has no such field: the message must then name the field)."""

    type: str
    message: str
    param: str | None = None

    def names(self, field_name: str) -> bool:
        return field_name == self.param or field_name in (self.param or "") \
            or field_name in self.message


@dataclass(frozen=True)
class Refusal:
    """A request the dialect refuses, with its status and the field the error must name
    (None: no field to name). `headers(key)` replaces the auth headers (a request with
    the key but no `anthropic-version`, say); None keeps them."""

    call: Call
    status: int
    field: str | None = None
    headers: Callable[[str], Headers] | None = None


def bearer(key: str | None) -> Headers:
    """`Authorization: Bearer <key>`; no header at all when there is no key."""
    return {} if key is None else {"Authorization": f"Bearer {key}"}


def list_envelope(body: Any) -> Page:
    """`{data: [{id, …}], has_more, last_id}`, the next page starting after `last_id`
    (OpenAI's list, and Anthropic's with `first_id` besides)."""
    return Page([item["id"] for item in body["data"]], body["has_more"], body["last_id"])


def jsonl(body: Any) -> list[Any]:
    """The lines of a JSONL answer (bytes), each decoded."""
    assert isinstance(body, bytes), f"expected JSONL bytes, got {type(body).__name__}"
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def relay_dead_letter(job_id: str) -> str:
    """Relay's dead-letter route of a job, whichever dialect it is in."""
    return f"/v1/batches/{job_id}/dead_letter"


@dataclass(frozen=True)
class DialectFixture:
    """A dialect's public face, as the contract suite drives it.

    Recipe for a new dialect (the Anthropic Message Batches API as the example): one
    module `tests/dialects/fixtures/anthropic.py` defining `FIXTURE = DialectFixture(...)`,
    and its line in `tests/dialects/fixtures/__init__.py` (that module is drafted
    already: check its guesses against the dialect, then register it). No test code:
    the suite runs each test the dialect's `capabilities` allow, and fails if a dialect
    in `DIALECTS` has no fixture. The rows run on the scripted upstream of
    tests/actors/harness.py, which reads the last message's `content` as a string: a
    dialect whose requests reach the upstream translated must keep a string a string.
    The fields, in the order the suite needs them:

    - `name`: the dialect's `DIALECTS` key (`"anthropic"`).
    - `auth(key)`: the headers of a request on the dialect's own routes; `auth(None)` is
      a request with every header it needs but the key (so it must answer 401):
      `{"x-api-key": key, "anthropic-version": "2023-06-01"}`, without `x-api-key`
      for None.
    - `submit(rows, webhook_url)`: the create request for `rows` of (custom_id, prompt);
      the prompt is the last user message's content, verbatim (the scripted upstream
      acts on markers in it: REFUSE fails the row for good, OUTAGE dead-letters it, BLOCK
      holds it in flight). `webhook_url` is None unless the dialect has WEBHOOKS:
      `Call("POST", "/v1/messages/batches", {"requests": [{"custom_id": c, "params":
      {"model": PRIMARY, "max_tokens": 64, "messages": [{"role": "user", "content":
      p}]}} for c, p in rows]})`.
    - `job_id(answer)`: a job answer's id (`answer["id"]` unless given).
    - `id_pattern`: a regex every job id fullmatches (`msgbatch_[0-9A-Za-z]+`), and
      `unknown_id`: one of that form no job has.
    - `job_path`: the get route, `{id}` standing for the id
      (`/v1/messages/batches/{id}`); `cancel_path` likewise
      (`/v1/messages/batches/{id}/cancel`).
    - `phase(answer)`: a job answer (get, submit, cancel, re-drive, list item, webhook
      payload) as a `Phase`. Anthropic: `in_progress` is OPEN, `canceling` CANCELLING,
      `ended` is CANCELLED when `cancel_initiated_at` is set, EXPIRED when rows expired,
      else COMPLETED.
    - `counts(answer)`: its rows as `Counts` (Anthropic: total = the sum of
      `request_counts`, succeeded = `succeeded`, failed = errored + canceled + expired).
    - `list_page(limit, cursor)`: the list route's path with its query for a page of
      `limit` jobs after `cursor` (None: the first page):
      `/v1/messages/batches?limit=2&after_id=<cursor>`; `read_page(body)`: its ids,
      `has_more` and the next cursor (`list_envelope` reads `{data, has_more,
      last_id}`, Anthropic's shape too). Pages run newest first.
    - `results(answer)`: the requests that read an ended job's results, from its answer
      (`[Call("GET", f"/v1/messages/batches/{id}/results")]`, or the path of
      `results_url`); `result_lines(body)`: one such answer's lines (`jsonl` decodes
      JSONL bytes); `read_line(line)`: a line as a `Line` (`result.type ==
      "succeeded"`, the text of `result.message.content[0]`); `line_schema`: the
      document's component each line validates against (None while it has none).
    - `error(body)`: asserts that an error answer is in the dialect's envelope and reads
      it (`{"type": "error", "error": {"type", "message"}}`, nothing else);
      `error_schema`: the component of that envelope in the document (checked on the
      unrouted answers below, which no operation documents); `error_types`: the
      envelope's `type` for each status (`{400: "invalid_request_error", 401:
      "authentication_error", 404: "not_found_error"}`).
    - `invalid_submit`: a create body that is refused 400, and the field its error
      names (`{"requests": "nope"}`, `"requests"`).
    - `refusals`: the dialect's own further refusals (a missing `anthropic-version`).
    - `unrouted`: requests no route serves, with their status (404, or 405 with
      `Allow`), in the dialect's envelope: `PUT /v1/messages/batches/{id}` 405.
    - `cancel_ended_status`: what cancelling an ended job answers (409).
    - `delete_path`, for a dialect with DELETE: the route that deletes an ended job
      (`/v1/messages/batches/{id}`, method DELETE), and `delete_open_status`: what
      deleting one that has not ended answers (the dialect's 4xx).
    - `extension_auth`: the headers of Relay's own routes the dialect's jobs use
      (`dead_letter_path(id)` and its `/retry` and `/discard`, and `/v1/events`);
      Bearer unless those routes take the dialect's scheme.
    - `webhook_schema`: the document's component of the webhook payload, for a dialect
      with WEBHOOKS (read with `phase` and `counts` like a job); None while it has none.
    """

    name: str
    auth: Callable[[str | None], Headers]
    submit: Callable[[Sequence[Row], str | None], Call]
    id_pattern: str
    unknown_id: str
    job_path: str
    cancel_path: str
    phase: Callable[[Any], Phase]
    counts: Callable[[Any], Counts]
    list_page: Callable[[int, str | None], str]
    results: Callable[[Any], list[Call]]
    result_lines: Callable[[Any], list[Any]]
    read_line: Callable[[Any], Line]
    error: Callable[[Any], ErrorView]
    error_schema: str
    error_types: Mapping[int, str]
    invalid_submit: tuple[Call, str]
    unrouted: Sequence[tuple[Call, int]]
    read_page: Callable[[Any], Page] = list_envelope
    refusals: Sequence[Refusal] = ()
    line_schema: str | None = None
    cancel_ended_status: int = 409
    delete_path: str | None = None
    delete_open_status: int = 400
    extension_auth: Callable[[str | None], Headers] = bearer
    dead_letter_path: Callable[[str], str] = relay_dead_letter
    webhook_schema: str | None = None
    job_id: Callable[[Any], str] = field(default=lambda answer: answer["id"])

    def get(self, job_id: str) -> Call:
        return Call("GET", self.job_path.format(id=job_id))

    def cancel(self, job_id: str) -> Call:
        return Call("POST", self.cancel_path.format(id=job_id))

    def delete(self, job_id: str) -> Call:
        assert self.delete_path is not None, f"{self.name} declares DELETE without a path"
        return Call("DELETE", self.delete_path.format(id=job_id))
