"""`relayd serve` with a way in for a test to kill one of its actors (a test seam:
test code, nothing of it in the product).

`python -m tests.e2e.actor_killer CLASS serve --config PATH` runs relayd's own entry
point (`daemon.cli.main`, as the `relayd` script does) and, on SIGUSR1, tells every
actor of class CLASS a message it fails on, unhandled: Pykka kills such an actor, as
it would for a bug in one of its messages."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import pykka

from daemon import cli


def crash(class_name: str) -> None:
    for ref in pykka.ActorRegistry.get_all():
        if ref.actor_class.__name__ == class_name:
            ref.tell(pykka.messages.ProxyCall(attr_path=("no_such_message",), args=(),
                                              kwargs={}))


def main(argv: list[str]) -> int:
    victim, relayd_args = argv[0], argv[1:]

    def on_signal(signum: int, frame: FrameType | None) -> None:
        crash(victim)

    signal.signal(signal.SIGUSR1, on_signal)
    return cli.main(relayd_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
