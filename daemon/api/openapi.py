"""The HTTP API as an OpenAPI 3.1 document, served at `GET /openapi.json` (no key).

Both dialects of `/v1/batches` (the Relay Batches API and the OpenRelay batch API,
OpenAI's Batch shape), the files, the event stream, models, nodes and health: every route,
its parameters, request and response schemas, and the one error envelope. Built from
small helpers over the domain's own constants (status names, endpoints, limits), so
the names cannot drift from the rules; `tests/api/test_openapi.py` checks real
responses against it and that it lists exactly the app's routes. Response objects
are closed (`additionalProperties: false`): a field the code adds must be added here.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aiohttp import web

from daemon.api.batches import DEAD_LETTER_STATES, LIST_DIALECTS, RESULTS_PAGE_MOST
from daemon.api.stats import DEFAULT_MINUTES, MOST_MINUTES
from daemon.dialects import LISTED_BY_DEFAULT
from daemon.domain import (
    cluster,
    files,
    jobs,
    openai_input,
    relay_input,
    stats,
    tool_config,
    workflow_config,
)
from daemon.domain.render import RELAY_VIEW
from daemon.domain.render_openai import OPENAI_VIEW

Schema = dict[str, Any]

ERROR_TYPES = ("invalid_request_error", "authentication_error", "not_found_error",
               "rate_limit_error", "service_unavailable", "server_error")
ROW_ERROR_CODES = ("upstream_error", "invalid_response", "response_too_large", "model_not_found",
                   "internal_error", "batch_cancelled", "batch_expired", "invalid_tool_config",
                   "workflow_step_limit", "record_too_large")  # examples, not a closed set

# -- schema helpers ---------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def string(description: str | None = None, **keywords: Any) -> Schema:
    return _described({"type": "string", **keywords}, description)


def integer(description: str | None = None, **keywords: Any) -> Schema:
    return _described({"type": "integer", **keywords}, description)


def number(description: str | None = None) -> Schema:
    return _described({"type": "number"}, description)


def boolean(description: str | None = None) -> Schema:
    return _described({"type": "boolean"}, description)


def choice(*values: str, description: str | None = None) -> Schema:
    return _described({"type": "string", "enum": list(values)}, description)


def array(items: Schema, description: str | None = None, **keywords: Any) -> Schema:
    return _described({"type": "array", "items": items, **keywords}, description)


def any_json(description: str | None = None) -> Schema:
    return _described({}, description)


def free_object(description: str | None = None) -> Schema:
    return _described({"type": "object"}, description)


def lifetime_seconds() -> Schema:
    """OpenAI's `expires_after.seconds` bounds: one hour to 30 days."""
    return integer(minimum=files.MIN_LIFETIME_S, maximum=files.MAX_LIFETIME_S)


def nullable(schema: Schema) -> Schema:
    """`schema` or JSON null."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def closed(required: dict[str, Schema], optional: dict[str, Schema] | None = None, *,
           description: str | None = None) -> Schema:
    """An object with exactly these properties (`optional` ones may be absent)."""
    return _described({"type": "object", "properties": {**required, **(optional or {})},
                       "required": list(required), "additionalProperties": False},
                      description)


def _described(schema: Schema, description: str | None) -> Schema:
    return {**schema, "description": description} if description else schema


def _statuses(view: jobs.StatusView) -> list[str]:
    return list(dict.fromkeys(view.name(s) for s in jobs.STATUSES))


# -- component schemas -------------------------------------------------------------------


def error_schemas() -> dict[str, Schema]:
    return {"Error": closed({"error": closed({
        "message": string("What went wrong, for a person."),
        "type": choice(*ERROR_TYPES),
        "param": nullable(string("The request field at fault, as a path.")),
        "code": nullable(string("Machine-readable: model_not_found, invalid_cron, "
                                "server_busy, batch_already_ended, …")),
    })}, description="The error envelope of every route of both dialects.")}


def relay_schemas() -> dict[str, Schema]:
    """The Relay Batches API: the submit body, the job view, results."""
    stamp = nullable(string("UTC, ISO 8601 (2026-10-04T09:12:44Z).", format="date-time"))
    return {
        "RelayStatus": choice(*_statuses(RELAY_VIEW)),
        "Message": _described({
            "type": "object", "required": ["role", "content"],
            "properties": {"role": choice(*sorted(relay_input.ROLES)),
                           "content": {"anyOf": [string(), array(free_object(), minItems=1)]}},
        }, "A chat message; other keys are passed upstream as sent."),
        "RelayRow": closed({"messages": array(ref("Message"), minItems=1)}, {
            "custom_id": string("Defaults to row-1, row-2, …", minLength=1,
                                maxLength=relay_input.MAX_CUSTOM_ID),
        }),
        "RelaySubmit": closed({
            "model": string("A configured model alias every row runs on."),
            "requests": array({"anyOf": [ref("RelayRow"), ref("BatchRequestRecord")]},
                              "Relay rows, or OpenAI chat records (read by the OpenAI "
                              "parser).", minItems=1, maxItems=relay_input.MAX_ROWS),
        }, {
            "name": nullable(string(minLength=1, maxLength=relay_input.MAX_NAME,
                                    pattern=r"\S")),
            "priority": nullable(integer("Higher runs first.", minimum=-1_000_000,
                                         maximum=1_000_000)),
            "cron": nullable(string("Exactly 5 fields, UTC: makes a recurring template.")),
            "webhookUrl": nullable(string("Receives the completion summary.", minLength=1)),
        }, description="A Relay Batches API submission."),
        "RelayJob": closed({
            "id": string("32 hex characters.", pattern="^[0-9a-f]{32}$"),
            "object": choice("batch"), "name": string(), "status": ref("RelayStatus"),
            "model": string(), "priority": integer(), "total": integer(minimum=0),
            "completed": integer(minimum=0), "failed": integer(minimum=0),
            "dead_letter": integer(minimum=0),
            "dead_letter_open": integer("Dead-lettered rows neither re-driven nor "
                                        "discarded: the ones that still need attention.",
                                        minimum=0),
            "canceled": integer("Of the failed rows, those that never ran: the job was "
                                "cancelled (or expired) before they started.", minimum=0),
            "created_at": string("UTC, ISO 8601.", format="date-time"), "started_at": stamp,
            "completed_at": stamp, "error": nullable(string()),
            "webhookUrl": nullable(string()),
            "webhook": nullable(free_object("The delivery's outcome, once sent.")),
            "cron": nullable(string()), "next_run_at": stamp,
            "template_id": nullable(string("The cron template this job is a run of.")),
            "retry_of": nullable(string("The job a dead-letter retry took its rows from.")),
            "usage": ref("BatchUsage"),
        }, {"last_run_id": nullable(string("A template's latest run."))},
            description="A job of the Relay Batches API."),
        "RelayResult": {"anyOf": [
            closed({"custom_id": string(), "content": any_json(
                "The assistant's content (a completion's text, an embedding's vector, a "
                "workflow's output).")}, {"openrelay": free_object("Extension summary.")}),
            closed({"custom_id": string(), "error": string()}),
        ]},
        "ResultList": closed({
            "id": string(), "object": choice("list"),
            "status": {"anyOf": [ref("RelayStatus"), ref("OpenAIStatus")]},
            "data": array(ref("RelayResult"), "Empty until the job has ended."),
        }, {
            "has_more": boolean("With `limit`: whether rows follow this page."),
            "last_id": nullable(string("With `limit`: the page's last custom_id, for "
                                       "`after`.")),
        }),
    }


def record_schemas() -> dict[str, Schema]:
    """OpenAI batch records and the OpenRelay record extensions (seed 002)."""
    bounded = workflow_config
    return {
        "ToolConfig": closed({"url": string("The tool executor (https).", format="uri")}, {
            "type": choice(*tool_config.TYPES),
            "authorization": string("Sent verbatim as Authorization."),
            "context": free_object("Forwarded on every executor call."),
            "max_rounds": integer("0 takes 8; above 16 is clamped.", minimum=0),
            "timeout_ms": integer("0 takes 30000; above 120000 is clamped.", minimum=0),
        }, description="body.openrelay.tool_config: where the model's tool calls run."),
        "WorkflowConfig": closed({
            "url": string("The callback (https).", format="uri"),
            "authorization": string("Sent verbatim as Authorization.", minLength=1),
        }, {
            "context": free_object("Echoed to the callback on every event."),
            "callback_timeout_ms": integer(minimum=bounded.CALLBACK_MS[0],
                                           maximum=bounded.CALLBACK_MS[1]),
            "timeout_ms": integer("Deprecated alias of callback_timeout_ms.",
                                  minimum=bounded.LEGACY_TIMEOUT_MS[0],
                                  maximum=bounded.LEGACY_TIMEOUT_MS[1]),
            "max_steps": integer(minimum=bounded.STEPS[0], maximum=bounded.STEPS[1]),
            "max_requests": integer(minimum=bounded.REQUESTS[0], maximum=bounded.REQUESTS[1]),
            "max_tokens": integer(minimum=bounded.TOKENS[0], maximum=bounded.TOKENS[1]),
        }, description="body.openrelay.workflow: a callback-driven record."),
        "OpenRelayExtensions": _described({"type": "object", "properties": {
            "tool_config": ref("ToolConfig"), "workflow": ref("WorkflowConfig")}},
            "The reserved `openrelay` key of a record body."),
        "BatchRequestRecord": closed({
            "custom_id": string(minLength=1, maxLength=relay_input.MAX_CUSTOM_ID),
            "method": choice("POST"),
            "url": choice(*openai_input.ENDPOINTS, description="Must equal the endpoint."),
            "body": _described({"type": "object", "properties": {
                "model": string("A configured model alias."),
                "openrelay": ref("OpenRelayExtensions")}},
                "The body you would send online; streaming is refused."),
        }, description="One request of an OpenAI batch (a JSONL line)."),
    }


def openai_schemas() -> dict[str, Schema]:
    """The OpenRelay batch API: the create body and the batch object."""
    at = nullable(integer("Unix seconds."))
    return {
        "OpenAIStatus": choice(*_statuses(OPENAI_VIEW)),
        "OutputExpiresAfter": closed({
            "anchor": choice("created_at"),
            "seconds": lifetime_seconds(),
        }, description="When the batch's output and error files expire."),
        "OpenAICreate": {**closed({
            "endpoint": choice(*openai_input.ENDPOINTS),
            "completion_window": choice("24h"),
        }, {
            "input_file_id": string("An uploaded file of purpose batch.", minLength=1),
            "requests": array(ref("BatchRequestRecord"), "Inline records, validated "
                              "with the batch.", minItems=1, maxItems=openai_input.MAX_RECORDS),
            "metadata": nullable({"type": "object", "maxProperties": openai_input.MAX_METADATA,
                                  "propertyNames": {"maxLength": 64},
                                  "additionalProperties": string(maxLength=512)}),
            "model": nullable(string("A display hint until validation settles it.")),
            "priority": nullable(choice("standard", "expedited")),
            "output_expires_after": ref("OutputExpiresAfter"),
        }), "oneOf": [{"required": ["input_file_id"]}, {"required": ["requests"]}],
            "description": "An OpenRelay batch API create body: exactly one of "
                           "input_file_id and requests."},
        "FileError": closed({"code": string(), "line": nullable(integer()),
                             "message": string(), "param": nullable(string())}),
        "BatchUsage": closed({
            "input_tokens": integer(minimum=0),
            "input_tokens_details": closed({"cached_tokens": integer(minimum=0)}),
            "output_tokens": integer(minimum=0),
            "output_tokens_details": closed({"reasoning_tokens": integer(minimum=0)}),
            "total_tokens": integer(minimum=0),
            "cost_nano_usd": integer("The price paid (batch discount applied).", minimum=0),
        }),
        "OpenAIBatch": closed({
            "id": string(pattern="^batch_[0-9a-f]{32}$"), "object": choice("batch"),
            "endpoint": choice(*openai_input.ENDPOINTS),
            "errors": nullable(closed({"object": choice("list"),
                                       "data": array(ref("FileError"))})),
            "input_file_id": string(), "completion_window": choice("24h"),
            "status": ref("OpenAIStatus"),
            "output_file_id": nullable(string()), "error_file_id": nullable(string()),
            "created_at": integer(), "in_progress_at": at, "expires_at": at,
            "finalizing_at": at, "completed_at": at, "failed_at": at, "expired_at": at,
            "cancelling_at": at, "cancelled_at": at,
            "request_counts": closed({"total": integer(minimum=0),
                                      "completed": integer(minimum=0),
                                      "failed": integer(minimum=0)}),
            "metadata": nullable({"type": "object", "additionalProperties": string()}),
            "model": nullable(string()), "priority": choice("standard", "expedited"),
            "usage": nullable(ref("BatchUsage")),
        }, {"retry_of": string("The batch a dead-letter retry took its records from.")},
            description="A batch of the OpenRelay batch API (OpenAI's batch object)."),
    }


def shared_schemas() -> dict[str, Schema]:
    """Shapes both dialects answer with."""
    page = {"first_id": nullable(string()), "last_id": nullable(string()),
            "has_more": boolean()}
    attempt = closed({"model": string(), "status_code": nullable(integer()),
                      "error": nullable(string()), "duration_ms": integer(minimum=0),
                      "started_at": string("UTC, ISO 8601 to the millisecond "
                                           "(2026-10-04T09:12:44.125Z).",
                                           format="date-time")})
    entry = {
        "custom_id": string(), "attempts": integer(minimum=0), "models": array(string()),
        "last_error": nullable(string()), "status_code": nullable(integer()),
        "messages": any_json("The row's messages (chat rows)."),
        "body": free_object("Secrets redacted."), "attempt_log": array(attempt),
        "redriven_to": nullable(string("The retry job the row went to.")),
        "state": choice(*jobs.DL_STATES, description="open: still needs attention; "
                        "redriven: a retry took it (redriven_to); discarded."),
        "discarded_at": nullable(string("When it was discarded, ISO 8601.",
                                        format="date-time")),
    }
    return {
        "Batch": {"anyOf": [ref("RelayJob"), ref("OpenAIBatch")],
                  "description": "A job, in the dialect it was submitted in."},
        "BatchList": closed({"object": choice("list"), "data": array(ref("Batch")), **page}),
        "Attempt": attempt,
        "DeadLetterEntry": closed(entry),
        "DeadLetterList": closed({"id": string(), "object": choice("list"),
                                  "data": array(ref("DeadLetterEntry"))}),
        "WorkspaceDeadLetterList": closed({
            "object": choice("list"), "has_more": boolean(),
            "data": array(closed({"batch_id": string(), "batch_name": string(), **entry},
                                 description="An entry with the job it belongs to.")),
        }),
        "DeadLetterDiscard": _described({"type": "object", "properties": {
            "custom_ids": nullable(array(string(), minItems=1)),
        }}, "Which open dead-lettered rows to discard (all when absent)."),
        "DeadLetterDiscarded": closed({
            "id": string(), "object": choice("batch.dead_letter.discard"),
            "discarded": integer(minimum=1), "dead_letter_open": integer(minimum=0)}),
        "DeadLetterRetry": _described({"type": "object", "properties": {
            "custom_ids": nullable(array(string(), minItems=1)),
            "force": boolean("Re-drive rows that were re-driven already."),
        }}, "Which dead-lettered rows to re-drive (all when absent)."),
        "RowDetail": closed({
            "object": choice("batch.row"), "batch_id": string(), "custom_id": string(),
            "status": choice(jobs.ROW_PENDING, jobs.ROW_COMPLETED, jobs.ROW_FAILED),
            "model": nullable(string()), "attempts": integer(minimum=0),
            "error": nullable(string()),
            "error_code": nullable(string("Machine-readable, e.g. "
                                          + ", ".join(ROW_ERROR_CODES) + ".")),
            "dead_letter": boolean(), "body": free_object("Secrets redacted."),
            "response": nullable(free_object()), "tool_rounds": integer(minimum=0),
            "transcript": array(closed({
                "round": integer(minimum=1), "model": string(),
                "usage": closed({"prompt_tokens": integer(), "completion_tokens": integer()}),
                "messages": array(free_object())})),
            "attempt_log": array(attempt),
        }, {"workflow": ref("WorkflowView")}),
        "WorkflowView": closed({
            "phase": nullable(string()), "step": integer(minimum=0),
            "totals": closed({k: integer(minimum=0) for k in
                              ("steps", "requests", "input_tokens", "output_tokens")}),
            "history": array(any_json()), "event": nullable(string()),
            "requests": integer(minimum=0), "finished": integer(minimum=0),
            "wake_at": nullable(number()),
        }),
        "WorkflowCounters": closed({
            "object": choice("batch.workflows"), "batch_id": string(),
            **{k: integer(minimum=0) for k in ("started", "ended", "running", "waiting",
                                               "calling_back", "steps", "requests",
                                               "input_tokens", "output_tokens")}}),
    }


def file_schemas() -> dict[str, Schema]:
    file_object = closed({
        "id": string(pattern="^file-[0-9a-f]{32}$"), "object": choice("file"),
        "bytes": integer(minimum=0), "created_at": integer(), "filename": string(),
        "purpose": choice(files.BATCH, files.BATCH_OUTPUT), "status": choice("processed"),
        "status_details": {"type": "null"}, "expires_at": nullable(integer("Unix seconds.")),
    })
    return {
        "FileObject": file_object,
        "FileList": closed({"object": choice("list"), "data": array(ref("FileObject")),
                            "first_id": nullable(string()), "last_id": nullable(string()),
                            "has_more": boolean()}),
        "FileDeleted": closed({"id": string(), "object": choice("file"),
                               "deleted": {"const": True}}),
        "FileUpload": _described({
            "type": "object", "required": ["file", "purpose"],
            "properties": {
                "file": string("JSONL, one record a line (streamed; size-capped); an empty "
                               "file is refused (400, param file).", minLength=1,
                               contentMediaType="application/octet-stream"),
                "purpose": choice(files.BATCH),
                "expires_after[anchor]": choice("created_at"),
                "expires_after[seconds]": lifetime_seconds(),
            }}, "multipart/form-data, as the OpenAI SDK sends it."),
    }


def service_schemas() -> dict[str, Schema]:
    """Models, health and the event stream's payloads."""
    when = nullable(number("Unix seconds."))
    return {
        "ModelList": closed({"object": choice("list"), "data": array(closed({
            "id": string("The alias clients use."), "object": choice("model"),
            "created": integer(), "owned_by": string(), "fallbacks": array(string()),
            "max_concurrency": integer(minimum=1),
            "adaptive": boolean("Configured: whether the concurrency adapts."),
            "rpm": nullable(integer("Configured requests a minute.", minimum=1)),
            "tpm": nullable(integer("Configured tokens a minute.", minimum=1)),
            "state": nullable(ref("ModelState"))}))}),
        "ModelState": closed({
            "rpm": nullable(integer("The rate paced to: the lower of the configured and "
                                    "the announced.")),
            "paused_until": {"anyOf": [when, nullable(string(format="date-time"))]},
            "tpm": nullable(integer()),
            "upstream_rpm": nullable(integer("Announced by x-ratelimit-limit-requests.")),
            "upstream_tpm": nullable(integer("Announced by x-ratelimit-limit-tokens.")),
            "paused": boolean("A 429 paused the model's dispatch."),
            "rate_limited": integer("429s met.", minimum=0),
            "concurrency": integer("Requests at once allowed now: learned from 429s, "
                                   "timeouts and successes when adaptive.", minimum=1),
            "concurrency_good": nullable(integer("The last level at which a whole window "
                                                 "of calls succeeded.", minimum=1)),
            "concurrency_failed": nullable(integer("The level that last met a 429 or a "
                                                   "timeout; probed again now and then.",
                                                   minimum=1)),
            "adaptive": boolean("Whether the concurrency adapts (the model's `adaptive`)."),
            "in_flight": integer(minimum=0)},
            {"max_concurrency": integer("Configured: the most at once.", minimum=1)}),
        "Health": closed({"status": choice("ok")}),
        "Degraded": closed({"status": choice("degraded"),
                            "reason": choice("insufficient_storage", "store_unavailable"),
                            "detail": string(), "since": nullable(number())},
                           description="The store cannot write; `reason` says why."),
        "ActorDead": closed({"status": choice("degraded"), "reason": choice("actor_dead"),
                             "actors": array(string()), "detail": string(),
                             "since": number()},
                            description="Core parts of the process died (`actors` names "
                                        "them); it drains and exits with status 70."),
        "JobEvent": closed({
            "id": string(), "dialect": string(), "name": string(), "model": string(),
            "status": choice(*jobs.STATUSES, description="The internal status."),
            "priority": integer(), "tier": string(), "total": integer(),
            "completed": integer(), "failed": integer(), "dead_letter": integer(),
            "dead_letter_open": integer(), "canceled": integer(),
            "created_at": number(), "started_at": when, "finished_at": when,
            "cron": nullable(string()), "next_run_at": when,
            "template_id": nullable(string()), "error": nullable(string()),
            "input_tokens": integer(minimum=0), "output_tokens": integer(minimum=0),
            "cost_nano_usd": integer("The price paid so far.", minimum=0),
            "relay_status": ref("RelayStatus"),
        }, description="data of job.snapshot, job.created, job.progress, job.ended."),
        "StreamHello": closed({"workspace": string()}),
        "StreamDropped": closed({"count": integer(minimum=1)}),
        "StreamClosed": closed({"reason": string()}),
    }


# -- operations --------------------------------------------------------------------------

ERRORS = {
    400: ("BadRequest", "The request is invalid; `param` names the field."),
    401: ("Unauthorized", "Missing or unknown API key."),
    404: ("NotFound", "No such batch, row or file in the key's workspace (also when the "
                      "workspace has no Batch API access)."),
    408: ("UploadTimeout", "The upload sent nothing for too long (code upload_timeout)."),
    409: ("Conflict", "The batch cannot be cancelled now."),
    413: ("TooLarge", "The body exceeds server.max_body_mb (upload: max_upload_mb)."),
    429: ("Busy", "Too many uploads in progress, or the body-parsing memory budget is full "
                  "(code server_busy); retry after Retry-After seconds."),
    500: ("InternalError", "An unexpected error; the daemon's log has the details."),
    503: ("Unavailable", "The daemon is shutting down or could not dispatch, or its store "
                         "cannot write (code store_unavailable); retry."),
    507: ("InsufficientStorage", "The store is out of space (code insufficient_storage); "
                                 "nothing was kept."),
}
WRITES = (503, 507)  # what any request that writes may meet when the store cannot write


def error_response(status: int) -> Schema:
    response: Schema = {"description": ERRORS[status][1],
                        "content": {"application/json": {"schema": ref("Error")}}}
    if status == 429:
        response["headers"] = {"Retry-After": {
            "description": "Seconds to wait.", "required": True,
            "schema": integer(minimum=0)}}
    return response


def json_content(schema: Schema) -> Schema:
    return {"application/json": {"schema": schema}}


def ok(schema: Schema, description: str = "OK") -> Schema:
    return {"description": description, "content": json_content(schema)}


def operation(op_id: str, summary: str, *, tag: str, answer: Schema, errors: tuple[int, ...],
              parameters: tuple[Schema, ...] = (), body: Schema | None = None,
              public: bool = False, description: str | None = None) -> Schema:
    """One operation: 200 is `answer`; each error status is the envelope."""
    statuses = sorted({*errors, 500} | (set() if public else {401}))
    op: Schema = {"operationId": op_id, "summary": summary, "tags": [tag],
                  "responses": {"200": answer} | {
                      str(s): {"$ref": f"#/components/responses/{ERRORS[s][0]}"}
                      for s in statuses}}
    if description:
        op["description"] = description
    if parameters:
        op["parameters"] = list(parameters)
    if body is not None:
        op["requestBody"] = body
    if public:
        op["security"] = []
    return op


def param(name: str, where: str, schema: Schema, description: str | None = None) -> Schema:
    found: Schema = {"name": name, "in": where, "schema": schema,
                     "required": where == "path"}
    return _described(found, description)


def json_body(schema: Schema, *, required: bool = True) -> Schema:
    return {"required": required, "content": json_content(schema)}


JOB_ID = param("job_id", "path", string(minLength=1), "A Relay (32 hex) or OpenAI "
               "(batch_…) job id.")
FILE_ID = param("file_id", "path", string(minLength=1))
CUSTOM_ID = param("custom_id", "path", string(minLength=1), "The row's custom_id.")
JOB = (JOB_ID,)


def limit(default: int, most: int) -> Schema:
    return param("limit", "query", integer(minimum=1, maximum=most, default=default))


def batch_paths() -> dict[str, Schema]:
    one, batch = "/v1/batches/{job_id}", ref("Batch")
    by_job = (401, 404)
    statuses = sorted(set(_statuses(RELAY_VIEW)) | set(_statuses(OPENAI_VIEW)))
    return {
        "/v1/batches": {
            "post": operation(
                "createBatch", "Submit a batch in either dialect", tag="Batches",
                answer=ok(batch, "The new job, in its dialect's shape."),
                errors=(400, 404, 413, 429, *WRITES),
                body=json_body({"anyOf": [ref("RelaySubmit"), ref("OpenAICreate")]}),
                description="A body with endpoint, input_file_id or completion_window is "
                            "the OpenRelay batch API; any other is the Relay Batches API."),
            "get": operation(
                "listBatches", "List jobs, newest first", tag="Batches",
                answer=ok(ref("BatchList")), errors=(400, 404), parameters=(
                    param("dialect", "query", {**choice(*LIST_DIALECTS),
                                               "default": LISTED_BY_DEFAULT},
                          "Whose jobs to list; each reads in its own dialect's shape."),
                    limit(20, 100), param("after", "query", string(), "A job id."),
                    param("status", "query", choice(*statuses), "Either dialect's name."),
                    param("template_id", "query", string(), "A cron template's runs."))),
        },
        one: {"get": operation("getBatch", "A job's status", tag="Batches", answer=ok(batch),
                               errors=by_job, parameters=JOB)},
        one + "/cancel": {"post": operation(
            "cancelBatch", "Cancel a scheduled, queued or running job", tag="Batches",
            answer=ok(batch), errors=(*by_job, 409, *WRITES), parameters=JOB)},
        one + "/results": {"get": operation(
            "getBatchResults", "Each row's content or error", tag="Batches",
            answer=ok(ref("ResultList")), errors=(400, *by_job), parameters=(
                JOB_ID, param("limit", "query", integer(minimum=1, maximum=RESULTS_PAGE_MOST),
                              "Page the rows; the answer adds has_more and last_id."),
                param("after", "query", string(), "The custom_id the page starts after "
                      "(also adds has_more and last_id).")))},
        one + "/dead_letter": {"get": operation(
            "getDeadLetter", "Rows that failed transiently after every retry and fallback",
            tag="Batches", answer=ok(ref("DeadLetterList")), errors=by_job, parameters=JOB)},
        one + "/dead_letter/retry": {"post": operation(
            "retryDeadLetter", "A new job from the dead-lettered rows", tag="Batches",
            answer=ok(batch), errors=(400, *by_job, 413, 429, *WRITES), parameters=JOB,
            body=json_body(ref("DeadLetterRetry"), required=False))},
        one + "/dead_letter/discard": {"post": operation(
            "discardDeadLetter", "Take open dead-lettered rows off the job's list",
            tag="Batches", answer=ok(ref("DeadLetterDiscarded")),
            errors=(400, *by_job, 413, 429, *WRITES), parameters=JOB,
            body=json_body(ref("DeadLetterDiscard"), required=False))},
        "/v1/dead_letter": {"get": operation(
            "listDeadLetter", "Dead-lettered rows of every job of the workspace",
            tag="Batches", answer=ok(ref("WorkspaceDeadLetterList")), errors=(400, 404),
            parameters=(param("state", "query", {**choice(*DEAD_LETTER_STATES),
                                                 "default": jobs.DL_OPEN}),
                        limit(100, 1000)),
            description="Newest job first, each job's rows in input order.")},
        one + "/rows/{custom_id}": {"get": operation(
            "getBatchRow", "One row: attempts, transcript, workflow state", tag="Batches",
            answer=ok(ref("RowDetail")), errors=by_job, parameters=(JOB_ID, CUSTOM_ID))},
        one + "/workflows": {"get": operation(
            "getBatchWorkflows", "A job's workflow records, summed", tag="Batches",
            answer=ok(ref("WorkflowCounters")), errors=by_job, parameters=JOB)},
    }


def file_paths() -> dict[str, Schema]:
    one, file_object = "/v1/files/{file_id}", ok(ref("FileObject"))
    jsonl = {"description": "The file's bytes.",
             "content": {"application/jsonl": {"schema": string()}}}
    return {
        "/v1/files": {
            "post": operation(
                "uploadFile", "Upload a JSONL batch input", tag="Files", answer=file_object,
                errors=(400, 404, 408, 413, 429, *WRITES), body={"required": True, "content": {
                    "multipart/form-data": {"schema": ref("FileUpload")}}}),
            "get": operation(
                "listFiles", "List files", tag="Files", answer=ok(ref("FileList")),
                errors=(400, 404), parameters=(
                    limit(100, 10_000), param("after", "query", string(), "A file id."),
                    param("purpose", "query", string(examples=[files.BATCH,
                                                               files.BATCH_OUTPUT]),
                          "Only files of this purpose (any other lists none)."),
                    param("order", "query", {**choice("asc", "desc"), "default": "desc"}))),
        },
        one: {
            "get": operation("getFile", "A file object", tag="Files", answer=file_object,
                             errors=(404,), parameters=(FILE_ID,)),
            "delete": operation("deleteFile", "Delete a file", tag="Files",
                                answer=ok(ref("FileDeleted")), errors=(404, *WRITES),
                                parameters=(FILE_ID,)),
        },
        one + "/content": {"get": operation(
            "getFileContent", "A file's content (streamed)", tag="Files", answer=jsonl,
            errors=(404,), parameters=(FILE_ID,))},
    }


EVENTS = {"stream.hello": "StreamHello", "job.snapshot": "JobEvent",
          "job.created": "JobEvent", "job.progress": "JobEvent", "job.ended": "JobEvent",
          "stream.dropped": "StreamDropped", "stream.closed": "StreamClosed"}


def service_paths() -> dict[str, Schema]:
    stream = {"description": "Server-sent events; each `data:` is JSON (see x-events).",
              "content": {"text/event-stream": {
                  "schema": string(),
                  "x-events": {name: ref(schema) for name, schema in EVENTS.items()}}}}
    health = operation("health", "Liveness and whether the store takes writes",
                       tag="Service", answer=ok(ref("Health")), errors=(503,), public=True)
    health["responses"]["503"] = {
        "description": "Shutting down (the error envelope), or degraded: the store cannot "
                       "write (probed every 5 s; ok again with the first good write), or "
                       "a core actor died (the process is about to exit with status 70).",
        "content": json_content({"anyOf": [ref("Error"), ref("Degraded"),
                                           ref("ActorDead")]})}
    return {
        "/healthz": {"get": health},
        "/openapi.json": {"get": operation(
            "openapi", "This document", tag="Service", answer=ok(free_object()), errors=(),
            public=True)},
        "/v1/models": {"get": operation("listModels", "The configured model aliases",
                                        tag="Service", answer=ok(ref("ModelList")),
                                        errors=())},
        "/v1/events": {"get": operation(
            "streamEvents", "The workspace's live job events", tag="Service", answer=stream,
            errors=(404,), description="stream.hello, then job.snapshot for each job that "
            "has not ended, then job.created, job.progress and job.ended as they happen.")},
    }


def stats_schemas() -> dict[str, Schema]:
    """`GET /v1/stats`: one workspace at a glance."""
    stamp = string("UTC, ISO 8601.", format="date-time")
    count = integer(minimum=0)
    by_class = closed({c: count for c in stats.ERROR_CLASSES})
    usage = {"input_tokens": count, "output_tokens": count, "cost_nano_usd": count,
             "cost_usd": number("cost_nano_usd / 1e9, at the config's prices.")}
    return {"Stats": closed({
        "object": choice("stats"), "workspace": string(), "generated_at": stamp,
        "window": closed({"since": stamp, "minutes": integer(minimum=1),
                          "bucket_seconds": integer(minimum=1)}),
        "throughput": array(closed({"at": stamp, "completed": count, "failed": count}),
                            "Rows finished in each bucket of the window, oldest first."),
        "models": array(closed({
            "model": string(), "attempts": count, "errors": by_class,
            "error_rates": closed({c: number() for c in stats.ERROR_CLASSES}),
            "latency_ms": closed({"p50": nullable(integer()), "p95": nullable(integer()),
                                  "samples": count},
                                 description="Over the successful attempts.")},
            {"dispatch": {**ref("ModelState"), "description": (
                "The model's dispatch now (GET /v1/models' `state`, shared by every "
                "workspace), with `max_concurrency` and `paused_until` in ISO 8601.")}}),
            "Upstream attempts of the rows finished in the window, by model."),
        "failing": array(closed({
            "model": string(), "error": choice(*stats.UPSTREAM_FAULTS),
            "share": number(), "attempts": count,
            "message": string(examples=["gpt-4o-mini: 100% connection errors"])}),
            "Models whose recent attempts (rows finished in the last 5 minutes) failed "
            "at least half the time for the upstream's sake."),
        "usage": closed({
            "total": closed(usage, description="Every job of the workspace."),
            "jobs": array(closed({"id": string(), "name": string(), "model": string(),
                                  **usage}),
                          "The window's jobs, newest first (at most 50).")}),
        "queue": array(closed({"priority": integer(), "jobs": count, "rows": count}),
                       "Jobs waiting to run, highest priority first."),
    })}


def node_schemas() -> dict[str, Schema]:
    """`GET /v1/nodes`: the relayd processes sharing the database."""
    stamp = string("UTC, ISO 8601.", format="date-time")
    return {"NodeList": closed({"object": choice("list"), "data": array(closed({
        "object": choice("node"),
        "id": string("The node's id: its host name and 8 hex digits, new at each start."),
        "address": string("How other nodes and operators reach it ([cluster] address)."),
        "version": string("Its relayd version."), "started_at": stamp,
        "heartbeat_at": stamp,
        "seconds_since_heartbeat": number("As the answering node's clock reads it."),
        "health": choice(cluster.HEALTHY, cluster.LATE, cluster.LOST, cluster.STOPPING,
                         description="healthy within two heartbeats; late until its "
                         "leases lapse ([cluster] lease_s); lost after (listed until "
                         "forgotten, a day later); stopping while it drains."),
        "self": boolean("The node that answered."),
        "jobs": array(closed({
            "id": string(), "name": string(), "dialect": string(),
            "status": choice(*jobs.STATUSES, description="The internal status.")}),
            "The caller's workspace's jobs among those the node runs (as of its last "
            "heartbeat); another workspace's are never listed."),
    }), "Every registered node, oldest start first.")})}


def operator_paths() -> dict[str, Schema]:
    metrics = operation(
        "metrics", "Prometheus metrics", tag="Service", errors=(401,), public=True,
        answer={"description": "The Prometheus text exposition format.",
                "content": {"text/plain": {"schema": string()}}},
        description="An operator's view of the whole daemon, with no API key: open when "
                    "[metrics] token is unset, `Authorization: Bearer <token>` when set.")
    return {
        "/metrics": {"get": metrics},
        "/v1/stats": {"get": operation(
            "getStats", "The workspace at a glance", tag="Service", answer=ok(ref("Stats")),
            errors=(400, 404), parameters=(param(
                "minutes", "query", integer(minimum=1, maximum=MOST_MINUTES,
                                            default=DEFAULT_MINUTES), "The window."),))},
        "/v1/nodes": {"get": operation(
            "listNodes", "The relayd nodes sharing the database", tag="Service",
            answer=ok(ref("NodeList")), errors=(404,),
            description="One node on SQLite; on PostgreSQL every node that has not been "
                        "forgotten, with its health and the caller's jobs it runs.")},
    }


@cache
def document() -> dict[str, Any]:
    """The whole OpenAPI 3.1 document."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Relay", "version": "1",
                 "description": "Relay's HTTP API: the Relay Batches API and the OpenRelay "
                                "batch API (OpenAI's Batch shape) on one /v1/batches."},
        "security": [{"bearer": []}],
        "tags": [{"name": "Batches"}, {"name": "Files"}, {"name": "Service"}],
        "paths": service_paths() | operator_paths() | batch_paths() | file_paths(),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "An API key (relayd keys create)."}},
            "schemas": error_schemas() | relay_schemas() | record_schemas()
                       | openai_schemas() | shared_schemas() | file_schemas()
                       | service_schemas() | stats_schemas() | node_schemas(),
            "responses": {name: error_response(status)
                          for status, (name, _) in ERRORS.items()},
        },
    }


@cache
def _encoded() -> bytes:
    return json.dumps(document()).encode()


async def serve(request: web.Request) -> web.Response:
    """`GET /openapi.json`."""
    return web.Response(body=_encoded(), content_type="application/json")
