"""Typed actor proxies.

Pykka's `ActorProxy[A]` answers every attribute as `Any`. So each actor that others
message declares, next to itself, a small `...Proxy(ActorProxyOf[TheActor])` (a
`pykka.ActorProxy[TheActor]`, as Mopidy's `CoreProxy` is) listing those messages,
each typed from the actor's own method by `message`: `proxy.tick(now)` is then checked
against `TheActor.tick` and returns a `pykka.Future` of its result, `proxy.tick.defer(now)`
(a tell) is checked too, and a message the proxy does not list is an error. Pykka's
`pykka.typing.proxy_method` types the call but not `defer`, which the ticker and the
actors use.

A started actor's proxy, typed: `SchedulerProxy.of(Scheduler.start(...))` (mypy
checks that the ref is the proxy's actor's). At run time it is Pykka's own proxy: the
typed class only informs mypy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, Self, TypeVar, cast

import pykka

A = TypeVar("A", bound=pykka.Actor)
P = ParamSpec("P")
T = TypeVar("T")


class ActorProxyOf(pykka.ActorProxy[A]):
    """An actor's typed proxy: only the messages it declares, and `actor_ref`."""

    if TYPE_CHECKING:
        # pykka.ActorProxy.__getattr__ answers any name as Any, so a misspelt message
        # would pass; declared None here, mypy reports it as a missing attribute.
        __getattr__: None  # type: ignore[assignment, misc]

    @classmethod
    def of(cls, ref: pykka.ActorRef[A]) -> Self:
        """`ref`'s proxy, typed as this class."""
        return cast(Self, ref.proxy())


class Message(Protocol[P, T]):
    """An actor's method seen through its proxy: called, an ask (its result comes in a
    future); deferred, a tell (nothing comes back, a failure goes to `on_failure`)."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> pykka.Future[T]: ...

    def defer(self, *args: P.args, **kwargs: P.kwargs) -> None: ...


class _Member(Protocol[P, T]):
    def __get__(self, instance: Any, owner: type | None = None) -> Message[P, T]: ...


def message(method: Callable[Concatenate[Any, P], T]) -> _Member[P, T]:
    """Declare `method` (the actor's, unbound) as a message of the actor's proxy."""
    return cast("_Member[P, T]", method)
