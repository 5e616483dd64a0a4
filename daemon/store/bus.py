"""Messages between the nodes sharing a database: PostgreSQL's `LISTEN`/`NOTIFY`.

A node tells the others what they cannot see in time by reading the store: that a
job changed (each node with a `GET /v1/events` stream open for the job's workspace
reads it and sends the event) and that a job was cancelled (the node running it
stops at once). A message is small JSON naming the job; the store stays the truth,
so a message lost while a node reconnects costs only latency (the watchdog reads
cancels from the store; a progress event is followed by the next).

On SQLite there is one node and nothing to tell: `NoBus`.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("relay.bus")

RECONNECT_S = (0.5, 1.0, 2.0, 5.0)  # waits between reconnects, the last repeated
Receive = Callable[[dict[str, Any]], None]


class Bus(Protocol):
    def publish(self, message: dict[str, Any]) -> None: ...
    def start(self, receive: Receive) -> None: ...
    def stop(self) -> None: ...


class NoBus:
    """One node: every message would be for itself."""

    def publish(self, message: dict[str, Any]) -> None:
        pass

    def start(self, receive: Receive) -> None:
        pass

    def stop(self) -> None:
        pass


class PgBus:
    """`NOTIFY` from a sender thread (so no actor waits on the database to tell the
    others), `LISTEN` on another connection, read by its own thread. `origin` marks
    this node's messages, which it skips."""

    def __init__(self, url: str, *, origin: str) -> None:
        self.url = url
        self.origin = origin
        self.channel = ""  # "relay_" and the schema: nodes of one schema hear each other
        self.outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.sending = threading.Thread(target=self._send, name="relay-bus-send",
                                        daemon=True)
        self.sending.start()

    def publish(self, message: dict[str, Any]) -> None:
        """Queue a message for the other nodes; never blocks."""
        self.outbox.put(json.dumps({**message, "origin": self.origin}))

    def _send(self) -> None:
        sender: Any = None
        while (payload := self.outbox.get()) is not None:
            try:
                if sender is None or sender.closed:
                    sender = self._connect()
                sender.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
            except Exception as exc:  # the store is the truth: a lost message is latency
                log.warning("could not tell the other nodes: %s", exc)
                sender = None
                self.stopped.wait(RECONNECT_S[0])
        if sender is not None:
            sender.close()

    def start(self, receive: Receive) -> None:
        self.thread = threading.Thread(target=self._listen, args=(receive,),
                                       name="relay-bus", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.outbox.put(None)  # after what is queued: those messages still go
        self.sending.join(timeout=2)
        if self.thread is not None:
            self.thread.join(timeout=2)

    def _listen(self, receive: Receive) -> None:
        failures = 0
        while not self.stopped.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f'LISTEN "{self.channel}"')
                    failures = 0
                    while not self.stopped.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._deliver(receive, note.payload)
            except Exception as exc:
                wait = RECONNECT_S[min(failures, len(RECONNECT_S) - 1)]
                failures += 1
                log.warning("listening to the other nodes failed (%s); again in %g s",
                            exc, wait)
                self.stopped.wait(wait)

    def _deliver(self, receive: Receive, payload: str) -> None:
        try:
            message = json.loads(payload)
            if message.get("origin") != self.origin:
                receive(message)
        except Exception:
            log.exception("a message from another node could not be handled: %.200s",
                          payload)


    def _connect(self) -> Any:
        import psycopg  # only a node on PostgreSQL gets here

        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        if not self.channel:
            (schema,) = conn.execute("SELECT current_schema()").fetchone() or ("public",)
            self.channel = f"relay_{schema}"
        return conn
