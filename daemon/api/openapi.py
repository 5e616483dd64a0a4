"""The HTTP API as an OpenAPI 3.1 document, served at `GET /openapi.json` (no key).

Generated, not written: the paths from the route table (api/table.py: every route
the app mounts, each with its operation) and the component schemas from the wire
shapes the renderers build (`daemon/domain/shapes.py`), so neither can drift from
the code. Each error status is answered in the envelope of the route's dialect;
`tests/api/test_openapi.py` checks real answers of every route against it.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from daemon.api.shapes import EVENTS as EVENT_SHAPES
from daemon.api.table import table
from daemon.dialects import DIALECTS, NATIVE, Dialect, Mounted
from daemon.domain.routes import Media, Param
from daemon.domain.shapes import Components, Schema

# Each event of `/v1/events`, and the component its `data` is.
EVENTS = {name: shape.__name__ for name, shape in EVENT_SHAPES.items()}

ERRORS = {
    400: ("BadRequest", "The request is invalid; `param` names the field."),
    401: ("Unauthorized", "Missing or unknown API key."),
    404: ("NotFound", "No such batch, row or file in the key's workspace (also when the "
                      "workspace has no Batch API access)."),
    408: ("UploadTimeout", "The upload sent nothing for too long (code upload_timeout)."),
    409: ("Conflict", "The batch cannot be changed so in its state."),
    413: ("TooLarge", "The body exceeds its limit (server.max_body_mb, or the dialect's "
                      "own; an upload's: max_upload_mb)."),
    429: ("Busy", "Too many uploads in progress, or the body-parsing memory budget is full "
                  "(code server_busy); retry after Retry-After seconds."),
    500: ("InternalError", "An unexpected error; the daemon's log has the details."),
    503: ("Unavailable", "The daemon is shutting down or could not dispatch, or its store "
                         "cannot write (code store_unavailable); retry."),
    507: ("InsufficientStorage", "The store is out of space (code insufficient_storage); "
                                 "nothing was kept."),
    529: ("Overloaded", "Anthropic's word for Relay's 503: shutting down, or the store "
                        "cannot write; retry."),
}


class Document:
    """The document being generated: its components, and each dialect's error
    responses (named after the dialect's envelope)."""

    def __init__(self) -> None:
        self.components = Components()
        self.responses: dict[str, Schema] = {}

    def error(self, dialect: Dialect, status: int) -> Schema:
        name, description = ERRORS[status]
        shape = dialect.error_shape
        if shape is not NATIVE.error_shape:
            name = shape.__name__ + name
        if name not in self.responses:
            response: Schema = {"description": description, "content": {
                "application/json": {"schema": self.components.schema(shape)}}}
            if status == 429:
                response["headers"] = {"Retry-After": {
                    "description": "Seconds to wait.", "required": True,
                    "schema": {"type": "integer", "minimum": 0}}}
            self.responses[name] = response
        return {"$ref": f"#/components/responses/{name}"}

    def operation(self, entry: Mounted) -> Schema:
        op, owner = entry.route.op, entry.owner
        relay_statuses = {*op.errors, 500} | (set() if op.public else {401})
        statuses = sorted({owner.error_status(s) for s in relay_statuses})
        responses: dict[str, Schema] = {"200": self.content(op.answer, op.answer_description)}
        for status in statuses:
            other = op.other_answers.get(status)
            responses[str(status)] = (self.content(*other) if other is not None
                                      else self.error(owner, status))
        found: Schema = {"operationId": op.id, "summary": op.summary, "tags": [op.tag],
                         "responses": responses}
        if op.description:
            found["description"] = op.description
        if op.params:
            found["parameters"] = [self.param(p) for p in op.params]
        if op.body is not None:
            found["requestBody"] = {"required": op.body_required,
                                    "content": self.content(op.body)["content"]}
        if op.public:
            found["security"] = []
        elif owner.auth.scheme != NATIVE.auth.scheme:
            found["security"] = [{owner.auth.scheme: []}]
        return found

    def content(self, shape: Any, description: str = "OK") -> Schema:
        if isinstance(shape, Media):
            media: Schema = {"schema": self.components.schema(shape.shape)}
            if shape.events is not None:
                media["x-events"] = {name: self.components.schema(event)
                                     for name, event in shape.events.items()}
            return {"description": shape.description, "content": {shape.type: media}}
        return {"description": description,
                "content": {"application/json": {"schema": self.components.schema(shape)}}}

    def param(self, param: Param) -> Schema:
        schema = self.components.schema(param.type)
        if param.default is not None:
            schema = {**schema, "default": param.default}
        found: Schema = {"name": param.name, "in": param.where, "schema": schema,
                         "required": param.where == "path" or bool(param.required)}
        if param.description:
            found["description"] = param.description
        return found


def generate(table: list[Mounted]) -> dict[str, Any]:
    """The whole OpenAPI 3.1 document of a route table."""
    doc = Document()
    paths: dict[str, dict[str, Schema]] = {}
    for entry in table:
        route = entry.route
        path = _template(route.path)
        paths.setdefault(path, {})[route.method.lower()] = doc.operation(entry)
    schemes = {d.auth.scheme: dict(d.auth.document) for d in DIALECTS.values()}
    webhooks = {f"{d.name}.batch_ended": {"post": {
        "summary": "When a job ends, POSTed to the URL it named (signed: Relay-Signature)",
        "requestBody": {"required": True,
                        "content": doc.content(d.webhook_shape)["content"]},
        "responses": {"200": {"description": "Any 2xx: received."}}}}
        for d in DIALECTS.values() if d.webhook_shape is not None}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Relay", "version": "1", "description": (
            f"Relay's HTTP API: the batch APIs of its dialects ({', '.join(DIALECTS)}) and "
            "Relay's own routes.")},
        "security": [{NATIVE.auth.scheme: []}],
        "tags": [{"name": "Batches"}, {"name": "Files"}, {"name": "Service"}],
        "paths": paths,
        "webhooks": webhooks,
        "components": {"securitySchemes": schemes, "schemas": doc.components.schemas,
                       "responses": doc.responses},
    }


def _template(path: str) -> str:
    """aiohttp's `{name:regex}` as OpenAPI's `{name}`."""
    parts = path.split("{")
    return parts[0] + "".join("{" + p.split("}")[0].split(":")[0] + "}" + p.split("}", 1)[1]
                              for p in parts[1:])


@cache
def document() -> dict[str, Any]:
    """The document of the app's route table."""
    return generate(table())


@cache
def encoded() -> bytes:
    """The document as `GET /openapi.json` serves it (api/service.py)."""
    return json.dumps(document()).encode()
