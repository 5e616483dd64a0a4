"""What every dialect provides: the `Dialect` protocol, and what a submit is given.

A dialect is one public shape of the batch API (the Relay Batches API, the OpenRelay
batch API). It owns everything that differs between them: how a submit body is
recognised, checked and stored, how ids are minted, how a job and its statuses
read, what rows that never ran say, the price tier, and whether ending a job
writes result files. Callers look a dialect up by a job's `dialect` field in the
registry (`daemon.dialects.DIALECTS`); nothing outside this package compares
dialect names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol

from daemon.config import Config
from daemon.domain.errors import RelayError
from daemon.domain.files import FileRecord
from daemon.domain.jobs import Job, RowRecord
from daemon.outbound.policy import Resolver
from daemon.store.files import FileStore
from daemon.store.interface import Store, WorkspaceRecord


class Intake(Protocol):
    """What a dialect's `submit` is given (the API's services satisfy it)."""

    @property
    def repo(self) -> Store: ...
    @property
    def files(self) -> FileStore: ...
    @property
    def config(self) -> Config: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def resolve(self) -> Resolver: ...


@dataclass(frozen=True)
class Redrive:
    """What a dead-letter retry's new job starts with besides its rows."""

    input_file: FileRecord | None = None  # written already; the store records it
    expires_at: float | None = None


class Capability(StrEnum):
    """What a dialect's clients can do besides submit and get; the dialect contract
    suite (tests/dialects/) runs the tests of the capabilities a dialect declares."""

    LIST_PAGING = "list_paging"  # list its jobs, newest first, a page at a time
    CANCEL = "cancel"  # cancel a job; cancelling an ended one is refused
    RESULTS = "results"  # read each row's result or error once the job has ended
    DEAD_LETTER = "dead_letter"  # Relay's dead-letter list, re-drive and discard
    WEBHOOKS = "webhooks"  # a completion webhook named at submit
    DELETE = "delete"  # delete an ended job (Anthropic's Message Batches API)


class Dialect(Protocol):
    name: str  # stored on every job it creates
    writes_result_files: bool  # ending a job writes an output and an error file
    capabilities: frozenset[Capability]

    def recognises(self, body: Any) -> bool:
        """True if a `POST /v1/batches` body is in this dialect."""

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Check and store a submission (blocking; runs off the event loop). Raises
        `InvalidRequest` naming the field; nothing is stored on a refusal."""

    def new_id(self) -> str:
        """A fresh public job id in this dialect's form."""

    def render(self, job: Job) -> dict[str, Any]:
        """The job as `GET /v1/batches/{id}` shows it."""

    def status_name(self, status: str) -> str:
        """An internal status as this dialect's clients know it."""

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        """The internal statuses a `status` filter name matches; None if unknown here."""

    def unrun_error(self, ending: str) -> tuple[str, str]:
        """(code, message) for rows that never ran when a job ends as `ending`."""

    def discount(self, job: Job) -> Decimal:
        """The share taken off the online price for this job's tier."""

    def admission_problem(self, job: Job, models: frozenset[str]) -> str | None:
        """Why a queued job cannot start at all (it then fails as a whole), or None."""

    def webhook_payload(self, job: Job) -> dict[str, Any]:
        """The body of the completion webhook."""

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, dict[str, Any]]:
        """Which result file ("output" or "errors") a row goes to, and its line."""

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        """The start of a dead-letter retry of `job` taking `rows` (blocking: it may
        write an input file)."""


def error_envelope(error: RelayError) -> dict[str, Any]:
    """The error body of every route of both dialects: OpenAI's
    `{"error": {message, type, param, code}}`, which the Relay Batches API shares."""
    return {"error": {"message": error.message, "type": error.type, "param": error.param,
                      "code": error.code}}

