"""Keeping actors alive: a message that raises is logged, never fatal. A store that
cannot be reached or written (a storage fault) is one line; anything else, a bug, is a
traceback."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from daemon.store.faults import log_failure

log = logging.getLogger("relay.actors")

F = TypeVar("F", bound=Callable[..., Any])


def contained(method: F) -> F:
    """Log and swallow any exception of an actor message, so the actor keeps serving."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            log_failure(log, f"{type(self).__name__}.{method.__name__} failed", exc)
            return None

    return wrapper  # type: ignore[return-value]


def attempt(step: Callable[..., Any], *args: Any) -> None:
    """Run one step of a message, logging and swallowing its failure, so the message's
    next steps still run."""
    try:
        step(*args)
    except Exception as exc:
        log_failure(log, f"{getattr(step, '__qualname__', step)} failed", exc)
