"""What every dialect provides: the `Dialect` protocol, and what a submit is given.

A dialect is one public shape of the batch API (the Relay Batches API, the OpenRelay
batch API). It owns its whole public face: the routes it serves (`routes()`, each
naming a generic `Action` the API performs through the dialect's hooks), how a
request carries its key (`auth`), its error envelope, how a submit body is
recognised, checked and stored, how ids are minted, how a job, a list of jobs and
its statuses read, what rows that never ran say, the price tier, whether ending a
job writes result files, and which of Relay's capabilities it has. Callers look a
dialect up by a job's `dialect` field in the registry (`daemon.dialects.DIALECTS`);
nothing outside this package compares dialect names.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from daemon.config import Config, LimitsConfig
from daemon.domain.errors import InvalidRequest, RelayError
from daemon.domain.estimate import Estimate
from daemon.domain.files import FileRecord
from daemon.domain.jobs import Job, RowDraft, RowRecord
from daemon.domain.openai_input import CheckUrl, Earlier, RecordStream
from daemon.domain.routes import Param, Route
from daemon.outbound.policy import Resolver
from daemon.store.files import FileStore
from daemon.store.interface import Store, WorkspaceRecord

# The header of an idempotent create (domain/idempotency.py), on the three creates.
IDEMPOTENCY_KEY = Param("Idempotency-Key", "header", str, "A retry with the same key and "
                        "body within 24 hours answers the first answer verbatim and creates "
                        "nothing; another body is 409 idempotency_key_reused.")


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
    def estimate(self, rows: Iterable[tuple[str, Mapping[str, Any]]], *, workspace_id: int,
                 discount: Decimal) -> Estimate: ...


@dataclass(frozen=True)
class Redrive:
    """What a dead-letter retry's new job starts with besides its rows."""

    input_file: FileRecord | None = None  # written already; the store records it
    expires_at: float | None = None


@dataclass(frozen=True)
class Proposed:
    """What a submit body would run, read without storing anything (`?dry_run=true`):
    each row's model and body, the batch's discount, and what the real submit would
    refuse or fail (the whole body's refusal, or rows failed on the way in)."""

    rows: list[tuple[str, Mapping[str, Any]]]
    discount: Decimal = Decimal(0)
    problems: list[RelayError] = field(default_factory=list)


class Capability(StrEnum):
    """What of Relay a dialect's jobs take part in besides submit and get; the dialect
    contract suite (tests/dialects/) runs the tests of the capabilities a dialect
    declares."""

    LIST_PAGING = "list_paging"  # list its jobs, newest first, a page at a time
    CANCEL = "cancel"  # cancel a job; cancelling an ended one is refused
    RESULTS = "results"  # read each row's result or error once the job has ended
    RESULT_FILES = "result_files"  # ending writes output and error files
    DEAD_LETTER = "dead_letter"  # Relay's dead-letter list, re-drive and discard
    WEBHOOKS = "webhooks"  # a completion webhook named at submit
    CRON = "cron"  # recurring templates
    DELETE = "delete"  # delete an ended job (Anthropic's Message Batches API)


class KeyScheme(Protocol):
    """How a request carries its API key."""

    scheme: str  # the document's security scheme name
    document: Mapping[str, Any]  # its OpenAPI securityScheme
    missing: str  # what a 401 for no key says

    def key(self, headers: Mapping[str, str]) -> str | None:
        """The key sent, or None when there is none."""

    def check(self, headers: Mapping[str, str]) -> None:
        """Raise `InvalidRequest` for a request to one of its routes that the scheme
        refuses for another reason than its key (Anthropic's missing version header)."""


class Bearer:
    """`Authorization: Bearer <key>` (the Relay and OpenAI dialects)."""

    scheme = "bearer"
    document: Mapping[str, Any] = {"type": "http", "scheme": "bearer",
                                   "description": "An API key (relayd keys create)."}
    missing = "Missing API key: send 'Authorization: Bearer <key>'."

    def key(self, headers: Mapping[str, str]) -> str | None:
        scheme, _, key = headers.get("Authorization", "").partition(" ")
        return key.strip() or None if scheme.lower() == "bearer" else None

    def check(self, headers: Mapping[str, str]) -> None:
        return None  # a key is all it asks


@dataclass(frozen=True)
class Paging:
    """How a dialect's own list route pages: its cursor parameters and page sizes."""

    after: str  # the query parameter naming the job a page starts after (older ones)
    before: str | None = None  # the one naming the job a page ends before (newer ones)
    default: int = 20
    most: int = 100


@runtime_checkable
class ListsJobs(Protocol):
    """A dialect with a list route of its own (`Action.LIST`)."""

    paging: Paging

    def render_list(self, jobs: Sequence[Job], *, has_more: bool,
                    origin: str) -> Mapping[str, Any]:
        """A page of its jobs, newest first, in its list envelope."""


@runtime_checkable
class ResultLines(Protocol):
    """A dialect whose results route streams a line per row (`Action.RESULTS`)."""

    line_shape: Any

    def result_line(self, job: Job, row: RowRecord) -> Mapping[str, Any]:
        """A row's line of the results of an ended job."""


@runtime_checkable
class Deletes(Protocol):
    """A dialect whose ended jobs can be deleted (`Action.DELETE`)."""

    def deleted(self, job: Job) -> Mapping[str, Any]:
        """The answer to deleting `job`."""


class Dialect(Protocol):
    name: str  # stored on every job it creates
    capabilities: frozenset[Capability]
    auth: KeyScheme
    prefixes: tuple[str, ...]  # paths only it serves (its envelope answers any of them)
    max_body_mb: int | None  # its own body limit; None: `[server] max_body_mb`
    max_rows: int  # its own cap on a batch's rows: `[limits] max_batch_rows`'s default
    job_shape: Any  # the shape `render` answers with (a TypedDict)
    error_shape: Any  # the shape `error_body` answers with
    webhook_shape: Any  # the completion webhook's body (None without WEBHOOKS)

    def routes(self) -> Sequence[Route]:
        """The routes of its own batch API (Relay's shared routes are the API's)."""

    def error_body(self, error: RelayError, status: int) -> Mapping[str, Any]:
        """An error in this dialect's envelope."""

    def error_status(self, status: int) -> int:
        """The status this dialect answers an error with (`status`: Relay's own, which
        a dialect whose API knows fewer statuses maps to its nearest)."""

    def recognises(self, body: Any) -> bool:
        """True if a `POST /v1/batches` body is in this dialect."""

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Check and store a submission (blocking; runs off the event loop). Raises
        `InvalidRequest` naming the field; nothing is stored on a refusal."""

    def propose(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Proposed:
        """What `submit` would store, checked the same way, storing nothing (a file
        batch's input file is read, not validated in the background)."""

    def new_id(self) -> str:
        """A fresh public job id in this dialect's form."""

    def render(self, job: Job, *, origin: str = "") -> Mapping[str, Any]:
        """The job as its dialect's clients read it; `origin` is the scheme and host
        the request came to, for absolute URLs."""

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

    def parse_input(self, job: Job, data: Any, *, models: Collection[str],
                    check_url: CheckUrl, workflows: bool, max_rows: int,
                    earlier: Earlier) -> RecordStream:
        """A `validating` job's input (an open binary file), read by the background
        validator a chunk at a time: its rows, and the file's errors."""

    def webhook_payload(self, job: Job) -> Mapping[str, Any]:
        """The body of the completion webhook."""

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, Mapping[str, Any]]:
        """Which result file ("output" or "errors") a row goes to, and its line."""

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        """The start of a dead-letter retry of `job` taking `rows` (blocking: it may
        write an input file)."""


def row_problems(rows: Sequence[RowDraft]) -> list[RelayError]:
    """Rows a submit would store failed already, as problems naming where they point."""
    return [InvalidRequest(f"{r.custom_id}: {r.error}", code=r.error_code,
                           param=r.error_path) for r in rows if r.error is not None]


def openai_error(error: RelayError) -> dict[str, Any]:
    """OpenAI's `{"error": {message, type, param, code}}`, which the Relay Batches API
    shares."""
    return {"error": {"message": error.message, "type": error.type, "param": error.param,
                      "code": error.code}}


def row_cap(dialect: Dialect, limits: LimitsConfig) -> int:
    """The most rows a batch of `dialect` may have here: `[limits] max_batch_rows`, or
    the dialect's own cap, so its clients see the refusals they expect."""
    return limits.max_batch_rows or dialect.max_rows
