"""Whether relayd's store takes writes, as the TUI watches it: `GET /healthz` every 5 s
in one thread, a `StoreHealth` posted whenever the answer changes. A relayd that cannot
be reached (or is shutting down) changes nothing here: the live feed says so, and the
last word on the store stands until relayd answers again. No Textual here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from relaytui.models import clock_text
from relaytui.watch import Watch

EVERY_S = 5.0


@dataclass(frozen=True)
class StoreHealth:
    """Ok (`reason` None), or degraded: `insufficient_storage` or `store_unavailable`
    (or `actor_dead`: relayd is about to exit and be restarted), relayd's detail, and
    since when (Unix seconds)."""

    reason: str | None = None
    detail: str = ""
    since: float | None = None

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> StoreHealth:
        if answer.get("status") != "degraded":
            return cls()
        since = answer.get("since")
        return cls(str(answer.get("reason") or "degraded"), str(answer.get("detail") or ""),
                   float(since) if isinstance(since, int | float) else None)

    @property
    def degraded(self) -> bool:
        return self.reason is not None

    def banner(self) -> str:
        """`relayd cannot write to its store: insufficient_storage — disk full (since
        2026-10-04 09:12:44Z)`; empty when the store is fine."""
        if self.reason is None:
            return ""
        if self.reason == "actor_dead":  # not the store: the process is about to restart
            return f"relayd is restarting: {self.detail or 'a core actor died'}"
        detail = f" — {self.detail}" if self.detail else ""
        since = f" (since {clock_text(self.since)})" if self.since is not None else ""
        return f"relayd cannot write to its store: {self.reason}{detail}{since}"


class Source(Protocol):
    """What the watch needs of `RelayClient`."""

    def health(self) -> dict[str, Any]: ...


class HealthWatch(Watch[StoreHealth]):
    """`GET /healthz` every `every` seconds, a `StoreHealth` posted when it changed."""

    def __init__(self, client: Source, post: Callable[[StoreHealth], object], *,
                 every: float = EVERY_S) -> None:
        super().__init__(lambda: StoreHealth.from_answer(client.health()), post,
                         every=every)
        self.client = client
