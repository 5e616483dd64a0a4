"""The one HTTP client of relayd (httpx), shared by the TUI, the scripting CLI and the
demo. Every call returns decoded JSON or raises `RelayError` with the daemon's own
message (or a clear "cannot reach relayd" when it is down). Nothing here imports
Textual or the daemon."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

RESULTS_PAGE = 1000  # results asked for at once: a 50,000-row job comes in 50 answers


class RelayError(Exception):
    """relayd answered with its error envelope, or could not be reached (`status` None)."""

    def __init__(self, status: int | None, message: str, param: str | None = None, *,
                 code: str | None = None) -> None:
        super().__init__(message if param is None else f"{message} (field: {param})")
        self.status = status
        self.message = message
        self.param = param
        self.code = code  # the envelope's machine-readable `code`, when it has one

    @property
    def unreachable(self) -> bool:
        return self.status is None


@dataclass(frozen=True)
class Event:
    """One server-sent event of `GET /v1/events`."""

    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class JobListing:
    """Jobs read from `GET /v1/batches`, newest first; `more`: relayd has older ones."""

    jobs: list[dict[str, Any]]
    more: bool


ANTHROPIC_VERSION = "2023-06-01"  # the `anthropic-version` header of a Message Batch


COMPLETION_WINDOW = "24h"  # the one OpenAI's Batch API knows


def inline_batch(records: list[dict[str, Any]], *, endpoint: str) -> dict[str, Any]:
    """An OpenAI batch's create body with its records inline (`requests`), as a dry run
    (`RelayClient.estimate`) reads it: nothing is uploaded."""
    return {"endpoint": endpoint, "completion_window": COMPLETION_WINDOW,
            "requests": records}


class RelayClient:
    def __init__(self, url: str, key: str, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout,
                                 headers={"Authorization": f"Bearer {key}"},
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RelayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def healthy(self) -> bool:
        """relayd is up: it answers `/healthz` ok, or degraded (up, but its store cannot
        write; `health()` says why)."""
        try:
            return self.health()["status"] in ("ok", "degraded")
        except RelayError:
            return False

    def health(self) -> dict[str, Any]:
        """`GET /healthz`: `{"status": "ok"}`, or while the store cannot write `{"status":
        "degraded", "reason", "detail", "since"}` (a 503 that is not an error); raises
        `RelayError` when relayd is down or shutting down."""
        try:
            reply = self.http.get("/healthz")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._unreachable(exc) from exc
        try:
            body = reply.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") in ("ok", "degraded"):
            return body
        self._raise_for(reply)
        raise RelayError(None, f"{self.url} answered /healthz with {reply.status_code}; "
                         "is it relayd?")

    # -- batches ---------------------------------------------------------------

    def submit(self, *, model: str, requests: list[dict[str, Any]], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None, idempotency_key: str | None = None,
               **extra: Any) -> dict[str, Any]:
        """A Relay-dialect batch (rows may also be OpenAI chat records); `extra`: more
        of its fields (e.g. `deadline`)."""
        body: dict[str, Any] = {"model": model, "requests": requests, "priority": priority}
        optional = {"name": name, "cron": cron, "webhookUrl": webhook_url, **extra}
        body.update({k: v for k, v in optional.items() if v is not None})
        return self._call("POST", "/v1/batches", json=body,
                          headers=_idempotency(idempotency_key))

    def estimate(self, body: dict[str, Any], *,
                 path: str = "/v1/batches") -> dict[str, Any]:
        """A submit body's estimate (`?dry_run=true`): nothing is created."""
        headers = {"anthropic-version": ANTHROPIC_VERSION} if "messages" in path else None
        return self._call("POST", path, json=body, params={"dry_run": "true"},
                          headers=headers)

    def upload(self, filename: str, data: bytes, *,
               idempotency_key: str | None = None) -> dict[str, Any]:
        """A JSONL input file for an OpenAI-dialect batch (`POST /v1/files`)."""
        return self._call("POST", "/v1/files", files={"file": (filename, data)},
                          data={"purpose": "batch"}, headers=_idempotency(idempotency_key))

    def create_batch(self, input_file_id: str, *,
                     endpoint: str = "/v1/chat/completions",
                     metadata: dict[str, str] | None = None,
                     idempotency_key: str | None = None) -> dict[str, Any]:
        """An OpenAI-dialect batch from an uploaded file."""
        body: dict[str, Any] = {"input_file_id": input_file_id, "endpoint": endpoint,
                                "completion_window": COMPLETION_WINDOW}
        if metadata:
            body["metadata"] = metadata
        return self._call("POST", "/v1/batches", json=body,
                          headers=_idempotency(idempotency_key))

    def create_message_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """An Anthropic Message Batch (`POST /v1/messages/batches`), with the key as the
        Bearer token relayd also reads there."""
        return self._call("POST", "/v1/messages/batches", json=body,
                          headers={"anthropic-version": ANTHROPIC_VERSION})

    def job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{job_id}")

    def jobs(self, *, limit: int = 100, after: str | None = None, status: str | None = None,
             template_id: str | None = None, dialect: str = "all") -> dict[str, Any]:
        """A page of jobs, newest first, each in its dialect's shape. relayd lists only
        OpenAI batches unless asked (its list is OpenAI's): operators see `all`."""
        params = {"limit": limit, "after": after, "status": status, "template_id": template_id,
                  "dialect": dialect}
        return self._call("GET", "/v1/batches",
                          params={k: v for k, v in params.items() if v is not None})

    def all_jobs(self, *, page: int = 100, most: int = 1000,
                 **filters: Any) -> list[dict[str, Any]]:
        """Newest first, following `after` until the list ends or `most` are read."""
        return self.job_listing(page=page, most=most, **filters).jobs

    def job_listing(self, *, page: int = 100, most: int = 1000,
                    **filters: Any) -> JobListing:
        """`all_jobs`, saying whether relayd has jobs past the last one read."""
        found: list[dict[str, Any]] = []
        after, more = None, False
        while len(found) < most:
            listing = self.jobs(limit=min(page, most - len(found)), after=after, **filters)
            found.extend(listing["data"])
            more = bool(listing["has_more"] and listing["data"])
            if not more:
                break
            after = listing["last_id"]
        return JobListing(found, more)

    def results(self, job_id: str, *, limit: int | None = None,
                after: str | None = None) -> dict[str, Any]:
        """A finished job's results in input order: all of them, or with `limit` one page
        (after the row whose custom_id is `after`) that says `has_more` and `last_id`."""
        params = {"limit": limit, "after": after}
        return self._call("GET", f"/v1/batches/{job_id}/results",
                          params={k: v for k, v in params.items() if v is not None})

    def result_pages(self, job_id: str, *, page: int = RESULTS_PAGE) -> Iterator[dict[str, Any]]:
        """Each answer of `results`, a page at a time, until `has_more` is false (a job
        that has not ended answers one empty page)."""
        after = None
        while True:
            answer = self.results(job_id, limit=page, after=after)
            yield answer
            if not answer.get("has_more") or not answer["data"]:
                return
            after = answer["last_id"]

    def results_so_far(self, job_id: str, *, cursor: str = "",
                       limit: int = RESULTS_PAGE) -> dict[str, Any]:
        """A page of the rows finished so far, oldest finish first, after `cursor` (a
        `next_cursor`): `data`, `has_more`, `next_cursor`, and the job's `status` as
        read before the rows."""
        return self._call("GET", f"/v1/batches/{job_id}/results",
                          params={"partial": "true", "cursor": cursor, "limit": limit})

    def follow_results(self, job_id: str, *, ended: Collection[str],
                       wait: Callable[[float], None], every_s: float = 1.0,
                       ) -> Iterator[dict[str, Any]]:
        """Each row's result as it finishes, each once, until the job's status is one of
        `ended` and no row is left; `wait(every_s)` between polls that found nothing
        new."""
        cursor = ""
        while True:
            page = self.results_so_far(job_id, cursor=cursor)
            yield from page["data"]
            cursor = page["next_cursor"]
            if page["has_more"]:
                continue
            if page["status"] in ended:
                return
            wait(every_s)

    def row(self, job_id: str, custom_id: str) -> dict[str, Any]:
        """One row in full (`batch.row`): its request (secrets shown as `***`), final
        response or last error, every attempt and, for a tool-calling record, the
        transcript of its tool rounds (for a workflow record, `workflow`: where it
        stands). A custom_id may hold any character, `/` too."""
        return self._call("GET", f"/v1/batches/{job_id}/rows/{quote(custom_id, safe='')}")

    def workflows(self, job_id: str) -> dict[str, Any]:
        """How the job's workflow records stand (`batch.workflows`): how many started,
        ended, are running a step, waiting or calling back, and their steps, requests
        and tokens summed; all zeros for a job without workflow records."""
        return self._call("GET", f"/v1/batches/{job_id}/workflows")

    def dead_letter(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{job_id}/dead_letter")

    def retry_dead_letter(self, job_id: str, custom_ids: list[str] | None = None, *,
                          force: bool = False) -> dict[str, Any]:
        """A new job of the job's open dead-lettered rows (or `custom_ids`); `force`
        takes rows re-driven or discarded already too."""
        body: dict[str, Any] = {"custom_ids": custom_ids} if custom_ids else {}
        if force:
            body["force"] = True
        return self._call("POST", f"/v1/batches/{job_id}/dead_letter/retry", json=body)

    def discard_dead_letter(self, job_id: str,
                            custom_ids: list[str] | None = None) -> dict[str, Any]:
        """Take open dead-lettered rows (all, or `custom_ids`) off the job's list."""
        body = {"custom_ids": custom_ids} if custom_ids else {}
        return self._call("POST", f"/v1/batches/{job_id}/dead_letter/discard", json=body)

    def all_dead_letter(self, *, state: str = "open", limit: int = 1000) -> dict[str, Any]:
        """`GET /v1/dead_letter`: dead-lettered rows of every job, each with `batch_id`."""
        return self._call("GET", "/v1/dead_letter", params={"state": state, "limit": limit})

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/batches/{job_id}/cancel")

    def pause(self, job_id: str) -> dict[str, Any]:
        """Hold a job (of any dialect) back from running: rows in flight finish."""
        return self._call("POST", f"/v1/batches/{job_id}/pause")

    def resume(self, job_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/batches/{job_id}/resume")

    def models(self) -> dict[str, Any]:
        return self._call("GET", "/v1/models")

    def stats(self, *, minutes: int | None = None) -> dict[str, Any]:
        """`GET /v1/stats`: the workspace at a glance over the last `minutes` (relayd's
        default: an hour): rows finished per bucket, each model's error rates and
        latency, the models failing now, tokens and cost, the queue by priority."""
        params = {} if minutes is None else {"minutes": minutes}
        return self._call("GET", "/v1/stats", params=params)

    def nodes(self) -> dict[str, Any]:
        """`GET /v1/nodes`: the relayd processes sharing the database (one on SQLite),
        oldest first: each one's address, version, heartbeat, `health` (healthy, late,
        lost, stopping), whether it answered (`self`), and the workspace's jobs it runs."""
        return self._call("GET", "/v1/nodes")

    def file_content(self, file_id: str) -> bytes:
        try:
            reply = self.http.get(f"/v1/files/{file_id}/content")
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        self._raise_for(reply)
        return reply.content

    # -- live events -------------------------------------------------------------

    def open_events(self, *, read_timeout: float = 60.0) -> EventStream:
        """`GET /v1/events` as an iterable of `Event`s; raises `RelayError` if the daemon
        cannot be reached. Keep-alive comments arrive every 15 s, so a read timeout of a
        minute means the daemon is gone. `close()` may be called from another thread and
        ends a read that is waiting (the TUI stops its feed so at exit)."""
        return EventStream(self, read_timeout=read_timeout)

    # -- plumbing ------------------------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            reply = self.http.request(method, path, **kwargs)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._unreachable(exc) from exc
        self._raise_for(reply)
        try:
            answer: dict[str, Any] = reply.json()
            return answer
        except ValueError as exc:  # something that is not relayd answered
            raise RelayError(None, f"{self.url} answered {reply.status_code} with a body "
                             "that is not JSON; is it relayd?") from exc

    def _unreachable(self, exc: Exception) -> RelayError:
        return RelayError(None, f"cannot reach relayd at {self.url}: {exc}")

    @staticmethod
    def _raise_for(reply: httpx.Response) -> None:
        if reply.is_success:
            return
        try:
            err = reply.json()["error"]
            message, param, code = err["message"], err.get("param"), err.get("code")
        except (ValueError, KeyError, TypeError):
            message, param, code = reply.text[:200] or reply.reason_phrase, None, None
        raise RelayError(reply.status_code, message, param, code=code)


class EventStream:
    """One `GET /v1/events` connection: iterate it for `Event`s (raising `RelayError`
    when relayd cannot be reached); after `close()` the iteration just ends."""

    def __init__(self, client: RelayClient, *, read_timeout: float) -> None:
        self._client = client
        self._timeout = httpx.Timeout(10.0, read=read_timeout)
        self._reply: httpx.Response | None = None
        self._closed = False

    def __iter__(self) -> Iterator[Event]:
        client = self._client
        try:
            with client.http.stream("GET", "/v1/events", timeout=self._timeout) as reply:
                self._reply = reply
                if self._closed:
                    return
                if not reply.is_success:
                    reply.read()
                    client._raise_for(reply)
                yield from _parse_sse(reply.iter_lines())
        except httpx.HTTPError as exc:
            if not self._closed:
                raise client._unreachable(exc) from exc
        finally:
            self._reply = None

    def close(self) -> None:
        """Thread-safe: shut the socket down so a blocked read wakes up."""
        self._closed = True
        reply = self._reply
        stream = reply.extensions.get("network_stream") if reply is not None else None
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: nothing to wake
                sock.shutdown(socket.SHUT_RDWR)


def _parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    kind = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield Event(kind, json.loads("\n".join(data)))
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def _idempotency(key: str | None) -> dict[str, str]:
    """The `Idempotency-Key` header of a create, when it has a key."""
    return {"Idempotency-Key": key} if key else {}
