"""The wire shapes of Relay's service routes: models, health, the event stream,
stats and nodes (every dialect's jobs appear in them)."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

from msgspec import Meta

from daemon.dialects.relay.shapes import RelayStatus
from daemon.domain.jobs import Status

Count = Annotated[int, Meta(ge=0)]
When = Annotated[float, Meta(description="Unix seconds.")] | None
Stamp = Annotated[str, Meta(description="UTC, ISO 8601.",
                            extra_json_schema={"format": "date-time"})]
InternalStatus = Annotated[Status, Meta(description="The internal status.")]


class ModelState(TypedDict):
    """A model's dispatch now: its pace, pause and concurrency."""

    rpm: Annotated[int, Meta(description="The rate paced to: the lower of the configured and "
                                         "the announced.")] | None
    paused_until: When | Annotated[str, Meta(extra_json_schema={"format": "date-time"})] | None
    tpm: int | None
    upstream_rpm: Annotated[int, Meta(
        description="Announced by x-ratelimit-limit-requests.")] | None
    upstream_tpm: Annotated[int, Meta(description="Announced by x-ratelimit-limit-tokens.")
                            ] | None
    paused: Annotated[bool, Meta(description="A 429 paused the model's dispatch.")]
    rate_limited: Annotated[int, Meta(description="429s met.", ge=0)]
    concurrency: Annotated[int, Meta(description=(
        "Requests at once allowed now: learned from 429s, timeouts and successes when "
        "adaptive."), ge=1)]
    concurrency_good: Annotated[int, Meta(description=(
        "The last level at which a whole window of calls succeeded."), ge=1)] | None
    concurrency_failed: Annotated[int, Meta(description=(
        "The level that last met a 429 or a timeout; probed again now and then."), ge=1)
                                  ] | None
    adaptive: Annotated[bool, Meta(
        description="Whether the concurrency adapts (the model's `adaptive`).")]
    in_flight: Count
    max_concurrency: NotRequired[Annotated[int, Meta(description="Configured: the most at once.",
                                                     ge=1)]]


class Model(TypedDict):
    """A configured model alias."""

    id: Annotated[str, Meta(description="The alias clients use.")]
    object: Literal["model"]
    created: int
    owned_by: str
    api: Annotated[Literal["openai", "anthropic"], Meta(
        description="The upstream's protocol (a row is translated to it where needed).")]
    endpoints: Annotated[list[str], Meta(description=(
        "The OpenAI endpoints its upstream serves (api openai; an Anthropic model's rows "
        "are translated to its Messages API)."))]
    fallbacks: list[str]
    max_concurrency: Annotated[int, Meta(ge=1)]
    adaptive: Annotated[bool, Meta(description="Configured: whether the concurrency adapts.")]
    rpm: Annotated[int, Meta(description="Configured requests a minute.", ge=1)] | None
    tpm: Annotated[int, Meta(description="Configured tokens a minute.", ge=1)] | None
    state: ModelState | None


class ModelList(TypedDict):
    """The configured model aliases."""

    object: Literal["list"]
    data: list[Model]


class Health(TypedDict):
    """Up, and the store takes writes."""

    status: Literal["ok"]


class Degraded(TypedDict):
    """The store cannot write; `reason` says why."""

    status: Literal["degraded"]
    reason: Literal["insufficient_storage", "store_unavailable"]
    detail: str
    since: float | None


class ActorDead(TypedDict):
    """Core parts of the process died (`actors` names them); it drains and exits with
    status 70."""

    status: Literal["degraded"]
    reason: Literal["actor_dead"]
    actors: list[str]
    detail: str
    since: float


class JobEvent(TypedDict):
    """data of job.snapshot, job.created, job.progress, job.ended: a job of any dialect."""

    id: str
    dialect: str
    name: str
    model: str
    status: InternalStatus
    priority: int
    tier: str
    total: int
    completed: int
    failed: int
    dead_letter: int
    dead_letter_open: int
    canceled: int
    created_at: float
    started_at: When
    finished_at: When
    cron: str | None
    next_run_at: When
    template_id: str | None
    error: str | None
    input_tokens: Count
    output_tokens: Count
    cost_nano_usd: Annotated[int, Meta(description="The price paid so far.", ge=0)]
    paused: Annotated[Literal["operator", "budget"], Meta(description=(
        "Why it is held back from running, if it is: an operator's pause, or its "
        "workspace's spent budget."))] | None
    deadline_at: When  # a Relay job's deadline, if it has one
    deadline_at_risk: Annotated[bool, Meta(description=(
        "Whether the estimate at submit said its deadline would be missed."))]
    relay_status: RelayStatus


class StreamHello(TypedDict):
    workspace: str


class StreamDropped(TypedDict):
    count: Annotated[int, Meta(ge=1)]


class StreamClosed(TypedDict):
    reason: str


class RowEvent(TypedDict):
    """data of row (with `?rows=true`): one row that finished, no payload; the rows of a
    job come in its finish order, before the job.progress or job.ended that follows."""

    job_id: str
    custom_id: str
    status: Literal["completed", "failed"]
    error_code: str | None


class RowsLagged(TypedDict):
    """data of lagged (with `?rows=true`): the stream fell more than its buffer of rows
    behind one job, and skipped its rows up to now; read them from the partial results at `cursor`
    (`GET /v1/batches/{job_id}/results?partial=true&cursor=…`). Rows after the skip come
    as row events again."""

    job_id: str
    cursor: str


EVENTS = {"stream.hello": StreamHello, "job.snapshot": JobEvent, "job.created": JobEvent,
          "job.progress": JobEvent, "job.ended": JobEvent, "job.paused": JobEvent,
          "job.resumed": JobEvent, "stream.dropped": StreamDropped,
          "stream.closed": StreamClosed, "row": RowEvent, "lagged": RowsLagged}


# -- GET /v1/stats -----------------------------------------------------------------------


class StatsWindow(TypedDict):
    since: Stamp
    minutes: Annotated[int, Meta(ge=1)]
    bucket_seconds: Annotated[int, Meta(ge=1)]


class Throughput(TypedDict):
    at: Stamp
    completed: Count
    failed: Count


ErrorCounts = TypedDict("ErrorCounts", {
    "429": Count, "5xx": Count, "timeout": Count, "connection": Count, "other": Count})
ErrorRates = TypedDict("ErrorRates", {
    "429": float, "5xx": float, "timeout": float, "connection": float, "other": float})


class Latency(TypedDict):
    """Over the successful attempts."""

    p50: int | None
    p95: int | None
    samples: Count


class ModelStats(TypedDict):
    model: str
    attempts: Count
    errors: ErrorCounts
    error_rates: ErrorRates
    latency_ms: Latency
    dispatch: NotRequired[Annotated[ModelState, Meta(description=(
        "The model's dispatch now (GET /v1/models' `state`, shared by every workspace), "
        "with `max_concurrency` and `paused_until` in ISO 8601."))]]


class Failing(TypedDict):
    model: str
    error: Literal["429", "5xx", "timeout", "connection"]
    share: float
    attempts: Count
    message: Annotated[str, Meta(examples=["gpt-4o-mini: 100% connection errors"])]


class UsageTotal(TypedDict):
    """Every job of the workspace."""

    input_tokens: Count
    output_tokens: Count
    cost_nano_usd: Count
    cost_usd: Annotated[float, Meta(description="cost_nano_usd / 1e9, at the config's prices.")]


class JobUsage(UsageTotal):
    """One job's usage."""

    id: str
    name: str
    model: str


class StatsUsage(TypedDict):
    total: UsageTotal
    jobs: Annotated[list[JobUsage], Meta(description="The window's jobs, newest first (at most "
                                                      "50).")]


class StatsOutputs(TypedDict):
    """Checked answers (records with a JSON schema or json_object), every job summed."""

    valid: Count
    repaired: Count
    invalid: Count


class QueueLevel(TypedDict):
    priority: int
    jobs: Count
    rows: Count


class BudgetView(TypedDict):
    """The workspace's budget against what it spent in the current period (every node's
    spend, from the store)."""

    usd: float
    nano_usd: Count
    period: Literal["month", "day", "none"]
    spent_nano_usd: Count
    spent_usd: float
    remaining_nano_usd: Count
    resets_at: Annotated[Stamp, Meta(description="When the period's spend starts again "
                                     "from 0 (00:00 UTC); null for the period none.")] | None
    spent: Annotated[bool, Meta(description=(
        "The budget is spent: the workspace's batches are paused (`paused: budget`) until "
        "it is raised or the period rolls over."))]


class Stats(TypedDict):
    """One workspace at a glance."""

    object: Literal["stats"]
    workspace: str
    generated_at: Stamp
    window: StatsWindow
    throughput: Annotated[list[Throughput], Meta(
        description="Rows finished in each bucket of the window, oldest first.")]
    models: Annotated[list[ModelStats], Meta(
        description="Upstream attempts of the rows finished in the window, by model.")]
    failing: Annotated[list[Failing], Meta(description=(
        "Models whose recent attempts (rows finished in the last 5 minutes) failed at "
        "least half the time for the upstream's sake."))]
    usage: StatsUsage
    outputs: NotRequired[StatsOutputs]
    queue: Annotated[list[QueueLevel], Meta(
        description="Jobs waiting to run, highest priority first.")]
    budget: Annotated[BudgetView, Meta(description=(
        "Set with `relayd workspaces budget`; null when the workspace has none."))] | None


# -- GET /v1/nodes -----------------------------------------------------------------------


class NodeJob(TypedDict):
    id: str
    name: str
    dialect: str
    status: InternalStatus


class Node(TypedDict):
    """A relayd process sharing the database."""

    object: Literal["node"]
    id: Annotated[str, Meta(description=(
        "The node's id: its host name and 8 hex digits, new at each start."))]
    address: Annotated[str, Meta(
        description="How other nodes and operators reach it ([cluster] address).")]
    version: Annotated[str, Meta(description="Its relayd version.")]
    started_at: Stamp
    heartbeat_at: Stamp
    seconds_since_heartbeat: Annotated[float, Meta(
        description="As the answering node's clock reads it.")]
    health: Annotated[Literal["healthy", "late", "lost", "stopping"], Meta(description=(
        "healthy within two heartbeats; late until its leases lapse ([cluster] lease_s); "
        "lost after (listed until forgotten, a day later); stopping while it drains."))]
    self: Annotated[bool, Meta(description="The node that answered.")]
    jobs: Annotated[list[NodeJob], Meta(description=(
        "The caller's workspace's jobs among those the node runs (as of its last "
        "heartbeat); another workspace's are never listed."))]


class NodeList(TypedDict):
    """Every registered node, oldest start first."""

    object: Literal["list"]
    data: list[Node]

