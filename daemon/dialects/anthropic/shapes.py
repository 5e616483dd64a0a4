"""The wire shapes of Anthropic's Message Batches API, as Relay serves them: one
`msgspec.Struct` each, checked field for field against the official SDK's types
(`anthropic.types.messages`, `anthropic.types.shared`). The renderers build these; the
OpenAPI components are generated from them.

Conventions: a nullable field that is always present is `T | None` with no default; a
field that may be absent is `T | UnsetType = UNSET`; enums are `Literal`s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

CUSTOM_ID_PATTERN = "^[a-zA-Z0-9_-]{1,64}$"
MAX_REQUESTS = 100_000  # this dialect's row cap: `[limits] max_batch_rows`'s default here

ProcessingStatus = Literal["in_progress", "canceling", "ended"]

# Every `type` of Anthropic's error envelope: the SDK's `ErrorType` and the API
# reference's `request_too_large` (413), which the SDK knows only by its status.
ErrorType = Literal[
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "timeout_error",
    "api_error",
    "overloaded_error",
]

Timestamp = Annotated[str, msgspec.Meta(description="An RFC 3339 date-time, in UTC.",
                                        extra_json_schema={"format": "date-time"})]


class MessageBatchRequestCounts(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A batch's requests by where they stand; the five always add up to the total."""

    processing: Annotated[int, msgspec.Meta(ge=0, description="Requests not yet ended.")]
    succeeded: Annotated[int, msgspec.Meta(ge=0, description="Requests that succeeded.")]
    errored: Annotated[int, msgspec.Meta(ge=0, description="Requests that ran and failed.")]
    canceled: Annotated[int, msgspec.Meta(
        ge=0, description="Requests the batch's cancel ended before they ran.")]
    expired: Annotated[int, msgspec.Meta(
        ge=0, description="Requests still unrun when the batch expired.")]


class MessageBatch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A Message Batch: a set of Messages API requests processed asynchronously."""

    id: Annotated[str, msgspec.Meta(description="The batch id: `msgbatch_` and 24 characters.")]
    type: Literal["message_batch"]
    processing_status: ProcessingStatus
    request_counts: MessageBatchRequestCounts
    created_at: Timestamp
    ended_at: Annotated[Timestamp | None, msgspec.Meta(
        description="When processing ended; null until then.")]
    expires_at: Annotated[Timestamp, msgspec.Meta(
        description="When requests still unrun expire: creation plus the completion window.")]
    cancel_initiated_at: Annotated[Timestamp | None, msgspec.Meta(
        description="When a cancel was asked for; null if none was.")]
    archived_at: Annotated[Timestamp | None, msgspec.Meta(
        description="When the results became unavailable; null while they are available.")]
    results_url: Annotated[str | None, msgspec.Meta(
        description="The absolute URL of the results (JSONL); null until the batch has ended.")]


class MessageBatchPage(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A page of Message Batches, newest first."""

    data: list[MessageBatch]
    has_more: Annotated[bool, msgspec.Meta(description="More batches lie past this page.")]
    first_id: Annotated[str | None, msgspec.Meta(
        description="The first batch's id (the `before_id` of the page before); null if empty.")]
    last_id: Annotated[str | None, msgspec.Meta(
        description="The last batch's id (the `after_id` of the next page); null if empty.")]


class DeletedMessageBatch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The answer to deleting a Message Batch."""

    id: str
    type: Literal["message_batch_deleted"]


class AnthropicErrorObject(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What went wrong: its type and a message for a person."""

    type: ErrorType
    message: str


class AnthropicErrorResponse(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Anthropic's error envelope: the body of every 4xx and 5xx, and an errored result."""

    type: Literal["error"]
    error: AnthropicErrorObject


class MessageBatchSucceededResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True,
                                  tag_field="type", tag="succeeded"):
    """The request succeeded: the Message it produced."""

    message: Annotated[dict[str, Any], msgspec.Meta(
        description="An Anthropic Message (`type: message`), as the upstream answered or as "
                    "translated from an OpenAI-compatible one.")]


class MessageBatchErroredResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True,
                                tag_field="type", tag="errored"):
    """The request ran, or was refused, and failed: the error it met."""

    error: AnthropicErrorResponse


class MessageBatchCanceledResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True,
                                 tag_field="type", tag="canceled"):
    """The batch was canceled before this request ran."""


class MessageBatchExpiredResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True,
                                tag_field="type", tag="expired"):
    """The batch expired before this request ran."""


MessageBatchResult = (MessageBatchSucceededResult | MessageBatchErroredResult
                      | MessageBatchCanceledResult | MessageBatchExpiredResult)


class MessageBatchIndividualResponse(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One line of a batch's results: a request's `custom_id` and its result."""

    custom_id: str
    result: MessageBatchResult


class MessageCreateParams(msgspec.Struct, kw_only=True):
    """A Messages API request body; parameters past these pass to the upstream, which
    refuses, for that request alone, what it cannot serve."""

    model: Annotated[str, msgspec.Meta(description="A model alias configured on this server.")]
    max_tokens: Annotated[int, msgspec.Meta(ge=1)]
    messages: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1)]
    system: str | list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    stop_sequences: list[str] | msgspec.UnsetType = msgspec.UNSET
    stream: Annotated[bool, msgspec.Meta(
        description="`true` fails this request: batches do not stream.")] | \
        msgspec.UnsetType = msgspec.UNSET
    temperature: float | msgspec.UnsetType = msgspec.UNSET
    top_p: float | msgspec.UnsetType = msgspec.UNSET
    top_k: int | msgspec.UnsetType = msgspec.UNSET
    tools: list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET
    tool_choice: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    thinking: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class MessageBatchRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One request of a batch: its id in the batch and its Messages API parameters."""

    custom_id: Annotated[str, msgspec.Meta(
        pattern=CUSTOM_ID_PATTERN, description="1-64 characters of [a-zA-Z0-9_-], unique in "
                                               "the batch.")]
    params: MessageCreateParams


class MessageBatchCreateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The body of `POST /v1/messages/batches`."""

    requests: Annotated[list[MessageBatchRequest], msgspec.Meta(min_length=1,
                                                                max_length=MAX_REQUESTS)]


SHAPES: tuple[type[msgspec.Struct], ...] = (
    MessageBatch, MessageBatchPage, DeletedMessageBatch, AnthropicErrorResponse,
    MessageBatchIndividualResponse, MessageBatchCreateParams,
)  # the roots: the rest are reached from them
