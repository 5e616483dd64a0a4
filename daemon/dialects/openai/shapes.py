"""The OpenRelay batch API's wire shapes (OpenAI's Batch and Files APIs, and the
OpenRelay record extensions)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

from msgspec import Meta

from daemon.domain import files, openai_input, relay_input, workflow_config
from daemon.domain.shapes import open_shape, schema_extra

Count = Annotated[int, Meta(ge=0)]
UnixTime = Annotated[int, Meta(description="Unix seconds.")]
Endpoint = Literal["/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses",
                   "/v1/moderations"]
Tier = Literal["standard", "expedited"]
Purpose = Literal["batch", "batch_output"]
OpenAIStatus = Literal["validating", "in_progress", "finalizing", "completed", "failed",
                       "expired", "cancelling", "cancelled"]
Lifetime = Annotated[int, Meta(description="One hour to 30 days.", ge=files.MIN_LIFETIME_S,
                               le=files.MAX_LIFETIME_S)]
B = workflow_config


class ToolConfig(TypedDict):
    """body.openrelay.tool_config: where the model's tool calls run."""

    url: Annotated[str, Meta(description="The tool executor (https).",
                             extra_json_schema={"format": "uri"})]
    type: NotRequired[Literal["http", "mcp"]]
    authorization: NotRequired[Annotated[str, Meta(
        description="Sent verbatim as Authorization.")]]
    context: NotRequired[Annotated[dict[str, Any], Meta(
        description="Forwarded on every executor call.")]]
    max_rounds: NotRequired[Annotated[int, Meta(description="0 takes 8; above 16 is clamped.",
                                                ge=0)]]
    timeout_ms: NotRequired[Annotated[int, Meta(
        description="0 takes 30000; above 120000 is clamped.", ge=0)]]


class WorkflowConfig(TypedDict):
    """body.openrelay.workflow: a callback-driven record."""

    url: Annotated[str, Meta(description="The callback (https).",
                             extra_json_schema={"format": "uri"})]
    authorization: Annotated[str, Meta(description="Sent verbatim as Authorization.",
                                       min_length=1)]
    context: NotRequired[Annotated[dict[str, Any], Meta(
        description="Echoed to the callback on every event.")]]
    callback_timeout_ms: NotRequired[Annotated[int, Meta(ge=B.CALLBACK_MS[0],
                                                         le=B.CALLBACK_MS[1])]]
    timeout_ms: NotRequired[Annotated[int, Meta(
        description="Deprecated alias of callback_timeout_ms.", ge=B.LEGACY_TIMEOUT_MS[0],
        le=B.LEGACY_TIMEOUT_MS[1])]]
    max_steps: NotRequired[Annotated[int, Meta(ge=B.STEPS[0], le=B.STEPS[1])]]
    max_requests: NotRequired[Annotated[int, Meta(ge=B.REQUESTS[0], le=B.REQUESTS[1])]]
    max_tokens: NotRequired[Annotated[int, Meta(ge=B.TOKENS[0], le=B.TOKENS[1])]]


@open_shape
class OpenRelayExtensions(TypedDict, total=False):
    """The reserved `openrelay` key of a record body."""

    tool_config: ToolConfig
    workflow: WorkflowConfig


@open_shape
class RecordBody(TypedDict, total=False):
    """The body you would send online; streaming is refused."""

    model: Annotated[str, Meta(description="A configured model alias.")]
    openrelay: OpenRelayExtensions


@open_shape
class ResponsesRecordBody(TypedDict, total=False):
    """A `/v1/responses` record's body: a Responses API request. Refused per record:
    `stream: true`, `background: true`, `previous_response_id`, `conversation` and
    `item_reference` items (a batch keeps no conversation state). `store` is ignored:
    the Response lives in the output file."""

    model: Required[Annotated[str, Meta(description="A configured model alias.")]]
    input: Required[str | Annotated[list[dict[str, Any]], Meta(
        min_length=1, description="Input items: messages (input_text, input_image "
                                  "content), function_call, function_call_output.")]]
    instructions: str
    tools: Annotated[list[dict[str, Any]], Meta(description="Function tools.")]
    tool_choice: str | dict[str, Any]
    text: Annotated[dict[str, Any], Meta(description="`format`: text, json_object or "
                                                     "json_schema.")]
    max_output_tokens: Annotated[int, Meta(ge=1)]
    temperature: float
    top_p: float
    reasoning: dict[str, Any]
    metadata: dict[str, str]
    store: Annotated[bool, Meta(description="Ignored.")]
    openrelay: OpenRelayExtensions


class ModerationTextItem(TypedDict):
    type: Literal["text"]
    text: str


class ImageUrl(TypedDict):
    url: str


class ModerationImageItem(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl


@open_shape
class ModerationRecordBody(TypedDict):
    """A `/v1/moderations` record's body."""

    model: Annotated[str, Meta(description="A configured model alias.")]
    input: str | Annotated[list[str], Meta(min_length=1)] | Annotated[
        list[ModerationTextItem | ModerationImageItem], Meta(min_length=1)]


class BatchRequestRecord(TypedDict):
    """One request of an OpenAI batch (a JSONL line)."""

    custom_id: Annotated[str, Meta(min_length=1, max_length=relay_input.MAX_CUSTOM_ID)]
    method: Literal["POST"]
    url: Annotated[Endpoint, Meta(description="Must equal the endpoint.")]
    body: Annotated[RecordBody | ResponsesRecordBody | ModerationRecordBody, Meta(
        description="The request for the record's url: a chat, completion or embedding "
                    "body, a Responses request or a moderation.")]


class OutputExpiresAfter(TypedDict):
    """When the batch's output and error files expire."""

    anchor: Literal["created_at"]
    seconds: Lifetime


Metadata = Annotated[dict[str, Annotated[str, Meta(max_length=512)]], Meta(
    max_length=openai_input.MAX_METADATA, extra_json_schema={"propertyNames": {"maxLength": 64}})]


@schema_extra({"oneOf": [{"required": ["input_file_id"]}, {"required": ["requests"]}]})
class OpenAICreate(TypedDict):
    """An OpenRelay batch API create body: exactly one of input_file_id and requests."""

    endpoint: Endpoint
    completion_window: Literal["24h"]
    input_file_id: NotRequired[Annotated[str, Meta(
        description="An uploaded file of purpose batch.", min_length=1)]]
    requests: NotRequired[Annotated[list[BatchRequestRecord], Meta(
        description="Inline records, validated with the batch.", min_length=1,
        max_length=openai_input.MAX_RECORDS)]]
    metadata: NotRequired[Metadata | None]
    model: NotRequired[Annotated[str, Meta(
        description="A display hint until validation settles it.")] | None]
    priority: NotRequired[Tier | None]
    output_expires_after: NotRequired[OutputExpiresAfter]


class FileError(TypedDict):
    """A problem with the input file (OpenAI's `errors.data`)."""

    code: str
    line: int | None
    message: str
    param: str | None


class FileErrors(TypedDict):
    object: Literal["list"]
    data: list[FileError]


class CachedTokens(TypedDict):
    cached_tokens: Count


class ReasoningTokens(TypedDict):
    reasoning_tokens: Count


class BatchUsage(TypedDict):
    """Tokens and cost so far: OpenAI's `BatchUsage`, plus `cost_nano_usd`."""

    input_tokens: Count
    input_tokens_details: CachedTokens
    output_tokens: Count
    output_tokens_details: ReasoningTokens
    total_tokens: Count
    cost_nano_usd: Annotated[int, Meta(ge=0,
                                       description="The price paid (batch discount applied).")]


class RequestCounts(TypedDict):
    total: Count
    completed: Count
    failed: Count


At = UnixTime | None


class OpenAIBatch(TypedDict):
    """A batch of the OpenRelay batch API (OpenAI's batch object)."""

    id: Annotated[str, Meta(pattern="^batch_[0-9a-f]{32}$")]
    object: Literal["batch"]
    endpoint: Endpoint
    errors: FileErrors | None
    input_file_id: str
    completion_window: Literal["24h"]
    status: OpenAIStatus
    output_file_id: str | None
    error_file_id: str | None
    created_at: int
    in_progress_at: At
    expires_at: At
    finalizing_at: At
    completed_at: At
    failed_at: At
    expired_at: At
    cancelling_at: At
    cancelled_at: At
    request_counts: RequestCounts
    metadata: dict[str, str] | None
    model: str | None
    priority: Tier
    usage: BatchUsage | None
    retry_of: NotRequired[Annotated[str, Meta(
        description="The batch a dead-letter retry took its records from.")]]


class ResponseUsage(TypedDict):
    input_tokens: Count
    input_tokens_details: CachedTokens
    output_tokens: Count
    output_tokens_details: ReasoningTokens
    total_tokens: Count


@open_shape
class ResponseObject(TypedDict):
    """A `/v1/responses` record's answer: OpenAI's `Response` (its other fields pass
    through from the upstream)."""

    id: Annotated[str, Meta(pattern="^resp_")]
    object: Literal["response"]
    created_at: int
    status: Literal["completed", "failed", "in_progress", "cancelled", "queued",
                    "incomplete"]
    model: str
    output: Annotated[list[dict[str, Any]], Meta(
        description="`message` items (`output_text` content) and `function_call` items.")]
    usage: NotRequired[ResponseUsage | None]


@open_shape
class ModerationObject(TypedDict):
    """A `/v1/moderations` record's answer: OpenAI's `CreateModerationResponse`."""

    id: str
    model: str
    results: Annotated[list[dict[str, Any]], Meta(
        description="One per input: flagged, categories, category_scores.")]


LineBody = Annotated[ResponseObject | ModerationObject | dict[str, Any], Meta(
    description="The upstream's answer as it was stored: a chat completion, completion, "
                "embedding list, Response or moderation object.")]


class LineResponse(TypedDict):
    status_code: int
    request_id: str
    body: LineBody


class LineError(TypedDict):
    code: str
    message: str


class OutputLine(TypedDict):
    """A line of a batch's output or error file."""

    id: str
    custom_id: str
    response: LineResponse | None
    error: LineError | None


class FileObject(TypedDict):
    """An uploaded input, or a batch's output or error file."""

    id: Annotated[str, Meta(pattern="^file-[0-9a-f]{32}$")]
    object: Literal["file"]
    bytes: Count
    created_at: int
    filename: str
    purpose: Purpose
    status: Literal["processed"]
    status_details: None
    expires_at: UnixTime | None


class FileList(TypedDict):
    """Files, newest first unless `order=asc`."""

    object: Literal["list"]
    data: list[FileObject]
    first_id: str | None
    last_id: str | None
    has_more: bool


class FileDeleted(TypedDict):
    id: str
    object: Literal["file"]
    deleted: Literal[True]


FileUpload = TypedDict("FileUpload", {
    "file": Annotated[str, Meta(
        description="JSONL, one record a line (streamed; size-capped); an empty file is "
                    "refused (400, param file).", min_length=1,
        extra_json_schema={"contentMediaType": "application/octet-stream"})],
    "purpose": Literal["batch"],
    "expires_after[anchor]": NotRequired[Literal["created_at"]],
    "expires_after[seconds]": NotRequired[Lifetime],
})
FileUpload.__doc__ = "multipart/form-data, as the OpenAI SDK sends it."
open_shape(FileUpload)


ErrorType = Literal["invalid_request_error", "authentication_error", "not_found_error",
                    "rate_limit_error", "service_unavailable", "server_error"]


class ErrorBody(TypedDict):
    message: Annotated[str, Meta(description="What went wrong, for a person.")]
    type: ErrorType
    param: Annotated[str, Meta(description="The request field at fault, as a path.")] | None
    code: Annotated[str, Meta(description="Machine-readable: model_not_found, invalid_cron, "
                                          "server_busy, batch_already_ended, …")] | None


class Error(TypedDict):
    """The error envelope of OpenAI's API, which the Relay Batches API shares."""

    error: ErrorBody
