"""The HTTP face of `relaytui.testing.FakeRelay`: an `httpx.MockTransport` handler that
routes a request to the canned relayd's answer for it and gives it back as relayd would
on the wire: a JSON body, relayd's error envelope for a refusal (`RelayError`), or the
server-sent events of `GET /v1/events`. So `RelayClient`'s own code runs in every TUI
test, and what it is served can be checked against relayd's OpenAPI document (each
answer is offered to the relay's `observe` hook). No Textual, no daemon."""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

import httpx

from relaytui.client import Event, RelayError

Body = dict[str, Any]


class CannedRelayd(Protocol):
    """What a canned relayd answers (`relaytui.testing.FakeRelay` is one): one method a route."""

    health_answer: Body
    replayed: threading.Event

    def observe(self, method: str, path: str, status: int, body: Any,
                event: str | None) -> None: ...
    def replay(self) -> Iterator[Event]: ...
    def models(self) -> Body: ...
    def stats(self, *, minutes: int | None = None) -> Body: ...
    def nodes(self) -> Body: ...
    def all_dead_letter(self, *, state: str = ..., limit: int = ...) -> Body: ...
    def jobs(self, *, limit: int = ..., after: str | None = None, status: str | None = None,
             template_id: str | None = None, dialect: str = ...) -> Body: ...
    def job(self, job_id: str) -> Body: ...
    def submit(self, *, model: str, requests: list[Body], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None) -> Body: ...
    def estimate(self, body: Body) -> Body: ...
    def upload(self, filename: str, data: bytes) -> Body: ...
    def create_batch(self, input_file_id: str, *, endpoint: str = ...,
                     metadata: dict[str, str] | None = None) -> Body: ...
    def cancel(self, job_id: str) -> Body: ...
    def pause(self, job_id: str) -> Body: ...
    def resume(self, job_id: str) -> Body: ...
    def results(self, job_id: str, *, limit: int | None = None,
                after: str | None = None) -> Body: ...
    def results_so_far(self, job_id: str, *, cursor: str = "",
                       limit: int = ...) -> Body: ...
    def row(self, job_id: str, custom_id: str) -> Body: ...
    def workflows(self, job_id: str) -> Body: ...
    def dead_letter(self, job_id: str) -> Body: ...
    def retry_dead_letter(self, job_id: str, custom_ids: list[str] | None = None, *,
                          force: bool = False) -> Body: ...
    def discard_dead_letter(self, job_id: str,
                            custom_ids: list[str] | None = None) -> Body: ...


Answer = Callable[[CannedRelayd, httpx.Request, dict[str, str]], Any]

# relayd's error `type` by status (daemon/api/middleware.py).
_TYPES = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
          503: "service_unavailable", 507: "server_error"}


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    answer: Answer


def _query(request: httpx.Request, name: str) -> str | None:
    value: str | None = request.url.params.get(name)
    return value


def _number(request: httpx.Request, name: str) -> int | None:
    value = _query(request, name)
    return None if value is None else int(value)


def _body(request: httpx.Request) -> dict[str, Any]:
    raw = request.content
    return json.loads(raw) if raw else {}


def _list_jobs(relay: CannedRelayd, request: httpx.Request, _: dict[str, str]) -> Any:
    return relay.jobs(limit=_number(request, "limit") or 20, after=_query(request, "after"),
                      status=_query(request, "status"),
                      template_id=_query(request, "template_id"),
                      dialect=_query(request, "dialect") or "openai")


def _submit(relay: CannedRelayd, request: httpx.Request, _: dict[str, str]) -> Any:
    body = _body(request)
    if _query(request, "dry_run") == "true":  # either dialect: the estimate
        return relay.estimate(body)
    if "input_file_id" in body:  # the OpenAI dialect
        return relay.create_batch(body["input_file_id"],
                                  endpoint=body.get("endpoint") or "/v1/chat/completions",
                                  metadata=body.get("metadata"))
    return relay.submit(model=body["model"], requests=body["requests"],
                        name=body.get("name"), priority=body.get("priority") or 0,
                        cron=body.get("cron"), webhook_url=body.get("webhookUrl"))


def _upload(relay: CannedRelayd, request: httpx.Request, _: dict[str, str]) -> Any:
    """`POST /v1/files`: the multipart form's `file` part."""
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        head + request.content)
    for part in form.iter_parts():
        data = part.get_payload(decode=True)
        if part.get_param("name", header="content-disposition") == "file" and isinstance(
                data, bytes):
            return relay.upload(part.get_filename() or "input.jsonl", data)
    raise RelayError(400, "Missing 'file' in the form.", "file")


def _results(relay: CannedRelayd, request: httpx.Request, at: dict[str, str]) -> Any:
    if _query(request, "partial") == "true":  # the rows finished so far
        return relay.results_so_far(at["job"], cursor=_query(request, "cursor") or "",
                                    limit=_number(request, "limit") or 1000)
    return relay.results(at["job"], limit=_number(request, "limit"),
                         after=_query(request, "after"))


def _retry(relay: CannedRelayd, request: httpx.Request, at: dict[str, str]) -> Any:
    body = _body(request)
    return relay.retry_dead_letter(at["job"], body.get("custom_ids"),
                                   force=bool(body.get("force")))


def _discard(relay: CannedRelayd, request: httpx.Request, at: dict[str, str]) -> Any:
    return relay.discard_dead_letter(at["job"], _body(request).get("custom_ids"))


def _stats(relay: CannedRelayd, request: httpx.Request, _: dict[str, str]) -> Any:
    return relay.stats(minutes=_number(request, "minutes"))


def _route(method: str, path: str, answer: Answer) -> Route:
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)
    return Route(method, re.compile(pattern), answer)


ROUTES = (
    _route("GET", "/v1/models", lambda relay, _r, _a: relay.models()),
    _route("GET", "/v1/stats", _stats),
    _route("GET", "/v1/nodes", lambda relay, _r, _a: relay.nodes()),
    _route("GET", "/v1/dead_letter", lambda relay, r, _a: relay.all_dead_letter(
        state=_query(r, "state") or "open", limit=_number(r, "limit") or 100)),
    _route("GET", "/v1/batches", _list_jobs),
    _route("POST", "/v1/batches", _submit),
    _route("POST", "/v1/files", _upload),
    _route("GET", "/v1/batches/{job}", lambda relay, _r, at: relay.job(at["job"])),
    _route("POST", "/v1/batches/{job}/cancel", lambda relay, _r, at: relay.cancel(at["job"])),
    _route("POST", "/v1/batches/{job}/pause", lambda relay, _r, at: relay.pause(at["job"])),
    _route("POST", "/v1/batches/{job}/resume", lambda relay, _r, at: relay.resume(at["job"])),
    _route("GET", "/v1/batches/{job}/results", _results),
    _route("GET", "/v1/batches/{job}/rows/{row}",
           lambda relay, _r, at: relay.row(at["job"], at["row"])),
    _route("GET", "/v1/batches/{job}/workflows",
           lambda relay, _r, at: relay.workflows(at["job"])),
    _route("GET", "/v1/batches/{job}/dead_letter",
           lambda relay, _r, at: relay.dead_letter(at["job"])),
    _route("POST", "/v1/batches/{job}/dead_letter/retry", _retry),
    _route("POST", "/v1/batches/{job}/dead_letter/discard", _discard),
)


def error_envelope(exc: RelayError) -> dict[str, Any]:
    """relayd's error envelope of a refusal (the same for both dialects)."""
    status = exc.status or 500
    return {"error": {"message": exc.message,
                      "type": _TYPES.get(status, "invalid_request_error"),
                      "param": exc.param, "code": exc.code}}


def serve(relay: CannedRelayd, request: httpx.Request) -> httpx.Response:
    """The canned answer to `request`. A `RelayError` without a status is relayd being
    down: the client meets a connection error, as it would."""
    method = request.method
    path = request.url.raw_path.decode().partition("?")[0]  # still quoted: "/" in an id
    if method == "GET" and path == "/healthz":
        return _health(relay, path)
    if method == "GET" and path == "/v1/events":
        return _events(relay, path)
    for route in ROUTES:
        found = route.pattern.fullmatch(path)
        if route.method == method and found:
            try:
                at = {name: unquote(part) for name, part in found.groupdict().items()}
                body = route.answer(relay, request, at)
            except RelayError as exc:
                if exc.status is None:
                    raise httpx.ConnectError(exc.message, request=request) from exc
                return _json(relay, method, path, exc.status, error_envelope(exc))
            return _json(relay, method, path, 200, body)
    return _json(relay, method, path, 404, error_envelope(RelayError(404, "Not Found")))


def _json(relay: CannedRelayd, method: str, path: str, status: int,
          body: Any) -> httpx.Response:
    relay.observe(method, path, status, body, None)
    return httpx.Response(status, json=body)


def _health(relay: CannedRelayd, path: str) -> httpx.Response:
    answer = relay.health_answer
    status = 200 if answer.get("status") == "ok" else 503
    return _json(relay, "GET", path, status, answer)


class EventBody(httpx.SyncByteStream):
    """The bytes of `GET /v1/events`: the replay as SSE frames, then nothing until the
    client closes the stream (through the socket it finds in `network_stream`, as on a
    real connection)."""

    def __init__(self, relay: CannedRelayd, path: str) -> None:
        self.relay = relay
        self.path = path
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        for event in self.relay.replay():
            self.relay.observe("GET", self.path, 200, event.data, event.type)
            yield frame(event)
        self.relay.replayed.set()
        self.closed.wait()

    def close(self) -> None:
        self.closed.set()

    # what `EventStream.close` reaches for: the socket, to shut it down
    def get_extra_info(self, name: str) -> Any:
        return self if name == "socket" else None

    def shutdown(self, how: int) -> None:
        self.closed.set()


def frame(event: Event) -> bytes:
    return f"event: {event.type}\ndata: {json.dumps(event.data)}\n\n".encode()


def _events(relay: CannedRelayd, path: str) -> httpx.Response:
    body = EventBody(relay, path)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body,
                          extensions={"network_stream": body})
