"""Telling a service manager (systemd) how relayd is doing, by its notify protocol
(sd_notify(3)): one datagram of `KEY=VALUE` lines to the AF_UNIX socket named by
`NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace).

relayd says `READY=1` once it accepts work, `STOPPING=1` when it begins to drain, and,
when the manager asks for a watchdog (`WATCHDOG_USEC`), `WATCHDOG=1` at every tick
that is due while its core parts are alive. The pings ride on the daemon's ticker, so a
ticker that stopped stops them too; a store fault being waited out does not (the
daemon is alive, waiting). Without `NOTIFY_SOCKET`, nothing here runs.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Mapping

from daemon.actors.health import Health
from daemon.actors.vitals import dead_parts

log = logging.getLogger("relay.notify")

SEND_TIMEOUT_S = 1.0  # a manager that does not read its queue never stalls the ticker long


def message(**fields: str | int) -> bytes:
    """One notification: `message(READY=1, STATUS="serving")` -> b"READY=1\\nSTATUS=serving".
    A value's line breaks become spaces (a line is a field)."""
    lines = (f"{key}={' '.join(str(value).splitlines())}" for key, value in fields.items())
    return "\n".join(lines).encode()


def socket_address(value: str) -> str | None:
    """Where `NOTIFY_SOCKET` says to send: a path, or `@name` for the abstract
    namespace ("\\0name"); None for what this does not speak (empty, `vsock:...`)."""
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    return None


def watchdog_every(env: Mapping[str, str], *, pid: int) -> float | None:
    """How often to ping, in seconds: half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
    advises; None when no watchdog is asked of this process (unset, not a positive
    number, or `WATCHDOG_PID` naming another process)."""
    owner = env.get("WATCHDOG_PID", "")
    if owner and owner != str(pid):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2_000_000 if usec > 0 else None


def ping_due(now: float, *, last: float | None, every: float, tick: float) -> bool:
    """Whether this tick pings: the first one does, and then the last tick before the
    next one would be late (ticks `tick` seconds apart). A clock that went back pings
    at once rather than wait for it to catch up."""
    return last is None or now < last or now - last + tick >= every


def serving(parts: Mapping[str, Callable[[], bool]], health: Health) -> bool:
    """Whether the process is alive for its manager: every core part lives and none was
    found dead. A store fault (`health.fault`) is waited out, so it does not count."""
    return health.death is None and not dead_parts(parts)


class NotifySocket:
    """The manager's notify socket. `send` never raises: a manager that went away must
    not stop the daemon (a failure is logged once until a send works again)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.failing = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NotifySocket | None:
        """The socket `NOTIFY_SOCKET` names, or None when unset (or not a form spoken)."""
        value = env.get("NOTIFY_SOCKET", "")
        address = socket_address(value)
        if address is None and value:
            log.warning("NOTIFY_SOCKET=%s is not a path or an @name: systemd is not told "
                        "when relayd is ready", value)
        return None if address is None else cls(address)

    def send(self, data: bytes) -> None:
        try:  # a socket per message, as sd_notify does: nothing held open between them
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.settimeout(SEND_TIMEOUT_S)
                sock.sendto(data, self.address)
        except OSError as exc:
            if not self.failing:
                log.warning("cannot notify the service manager at %s: %s",
                            os.environ.get("NOTIFY_SOCKET", self.address), exc)
            self.failing = True
        else:
            self.failing = False


class Watchdog:
    """Pings at each `tick(now)` (a ticker target, ticking every `tick` seconds, at most
    `every`) that `ping_due` says, while `alive()`."""

    def __init__(self, send: Callable[[bytes], object], *, every: float, tick: float,
                 alive: Callable[[], bool]) -> None:
        self.send = send
        self.every = every
        self.tick_s = tick
        self.alive = alive
        self.last: float | None = None

    def tick(self, now: float) -> None:
        if not self.alive():
            return  # wedged or dying: the manager's watchdog is the one to act
        if ping_due(now, last=self.last, every=self.every, tick=self.tick_s):
            self.send(message(WATCHDOG=1))
            self.last = now
