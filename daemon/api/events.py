"""The in-process event hub behind `GET /v1/events`.

Actors publish from their own threads; the hub hops onto the aiohttp loop with
`call_soon_threadsafe` and fans out to per-client bounded queues. A client that
does not keep up loses events (counted, then told), never stalls the daemon.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

QUEUE_SIZE = 1000


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any]

    def encode(self, event_id: str) -> bytes:
        return (f"id: {event_id}\nevent: {self.type}\ndata: {json.dumps(self.data)}\n\n"
                .encode())


@dataclass(eq=False)  # compared and hashed by identity: it lives in a set
class Subscription:
    """One client's stream. Its event ids are its own (a random token and a counter),
    so they tell nothing of another workspace's activity."""

    workspace_id: int
    queue: asyncio.Queue[Event] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))
    dropped: int = 0
    closed: bool = False  # relayd is stopping: the stream ends
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    sent: int = 0

    def next_id(self) -> str:
        self.sent += 1
        return f"{self.token}-{self.sent}"

    def encode(self, event: Event) -> bytes:
        return event.encode(self.next_id())

    def offer(self, event: Event) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    def take_dropped(self) -> int:
        dropped, self.dropped = self.dropped, 0
        return dropped


class EventHub:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.subscribers: dict[int, set[Subscription]] = defaultdict(set)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def publish(self, workspace_id: int, type: str, data: dict[str, Any]) -> None:
        """Thread-safe: called from actors."""
        if self.loop is None or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._fan_out, workspace_id, type, data)

    def _fan_out(self, workspace_id: int, type: str, data: dict[str, Any]) -> None:
        event = Event(type, data)
        for sub in self.subscribers.get(workspace_id, ()):
            sub.offer(event)

    def listens(self, workspace_id: int) -> bool:
        """Whether a stream is open for the workspace (read from any thread)."""
        return bool(self.subscribers.get(workspace_id))

    def subscribe(self, workspace_id: int) -> Subscription:
        sub = Subscription(workspace_id)
        self.subscribers[workspace_id].add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self.subscribers[sub.workspace_id].discard(sub)

    def close_all(self) -> None:
        """relayd is stopping: every stream ends now (on the loop), rather than hold the
        listener's shutdown until its grace period runs out."""
        for subs in self.subscribers.values():
            for sub in subs:
                sub.closed = True
                sub.offer(Event("stream.closed", {"reason": "relayd is stopping"}))
