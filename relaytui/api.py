"""`RelayApi`: what the TUI's app, screens, widgets and watches ask of relayd.

They take this Protocol, not `RelayClient` itself. `RelayClient` satisfies it (checked
by mypy below), whether it talks HTTP to a relayd or, in the TUI's tests, to
`relaytui.testing.FakeRelay` over `httpx.MockTransport`. The watches ask for less
(each its own `Source`: `live.py`, `health.py`, `stats.py`, `nodes.py`); a `RelayApi`
is each of those too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from relaytui.client import Event, RelayClient


class Events(Protocol):
    """An open `GET /v1/events` stream; `close()` may come from another thread."""

    def __iter__(self) -> Iterator[Event]: ...

    def close(self) -> None: ...


class RelayApi(Protocol):
    url: str  # relayd's, as shown in the header

    def close(self) -> None: ...

    def health(self) -> dict[str, Any]: ...

    def models(self) -> dict[str, Any]: ...

    def stats(self, *, minutes: int | None = None) -> dict[str, Any]: ...

    def nodes(self) -> dict[str, Any]: ...

    def submit(self, *, model: str, requests: list[dict[str, Any]], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None, idempotency_key: str | None = None,
               **extra: Any) -> dict[str, Any]: ...

    def upload(self, filename: str, data: bytes, *,
               idempotency_key: str | None = None) -> dict[str, Any]: ...

    def create_batch(self, input_file_id: str, *, endpoint: str = ...,
                     metadata: dict[str, str] | None = None,
                     idempotency_key: str | None = None) -> dict[str, Any]: ...

    def job(self, job_id: str) -> dict[str, Any]: ...

    def jobs(self, *, limit: int = 100, after: str | None = None, status: str | None = None,
             template_id: str | None = None, dialect: str = "all") -> dict[str, Any]: ...

    def all_jobs(self, *, page: int = 100, most: int = 1000,
                 **filters: Any) -> list[dict[str, Any]]: ...

    def cancel(self, job_id: str) -> dict[str, Any]: ...
    def pause(self, job_id: str) -> dict[str, Any]: ...
    def resume(self, job_id: str) -> dict[str, Any]: ...

    def result_pages(self, job_id: str, *, page: int = ...) -> Iterator[dict[str, Any]]: ...
    def results_so_far(self, job_id: str, *, cursor: str = ...,
                       limit: int = ...) -> dict[str, Any]: ...

    def row(self, job_id: str, custom_id: str) -> dict[str, Any]: ...

    def workflows(self, job_id: str) -> dict[str, Any]: ...

    def dead_letter(self, job_id: str) -> dict[str, Any]: ...

    def all_dead_letter(self, *, state: str = "open", limit: int = 1000) -> dict[str, Any]: ...

    def retry_dead_letter(self, job_id: str, custom_ids: list[str] | None = None, *,
                          force: bool = False) -> dict[str, Any]: ...

    def discard_dead_letter(self, job_id: str,
                            custom_ids: list[str] | None = None) -> dict[str, Any]: ...

    def open_events(self, *, read_timeout: float = 60.0) -> Events: ...


# The real client is a RelayApi: mypy fails here the day one of them changes alone.
_client_is_an_api: type[RelayApi] = RelayClient
