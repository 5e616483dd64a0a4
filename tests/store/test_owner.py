"""One SQLite database, one process (store/owner.py): the lock beside the database,
who it names, and that it dies with its holder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.store.owner import DatabaseInUse, Holder, Ownership, in_use_message, lock_path, own
from daemon.testing import wait_until

HOLDER = Holder(pid=4242, address="http://127.0.0.1:8080", since=1_796_140_216.0)


def test_a_second_hold_on_one_database_is_refused_naming_the_holder(tmp_path: Path) -> None:
    database = tmp_path / "data" / "relay.db"
    first = own(database, HOLDER)
    try:
        with pytest.raises(DatabaseInUse) as refused:
            own(database, Holder(pid=99, address="http://127.0.0.1:9090", since=0.0))
        assert refused.value.holder == HOLDER
        message = str(refused.value)
        assert "pid 4242" in message and "http://127.0.0.1:8080" in message
        assert str(database) in message and "PostgreSQL" in message
    finally:
        first.release()


def test_a_released_database_is_taken_again_and_names_its_new_holder(tmp_path: Path) -> None:
    database = tmp_path / "relay.db"
    own(database, HOLDER).release()
    again = own(database, Holder(pid=7, address="http://h:1", since=1.0))
    try:
        assert Holder.parse(lock_path(database).read_text()) == Holder(7, "http://h:1", 1.0)
    finally:
        again.release()


def test_a_lock_file_left_by_a_dead_holder_blocks_nothing(tmp_path: Path) -> None:
    database = tmp_path / "relay.db"
    lock_path(database).write_text(HOLDER.text())  # what a kill -9 leaves: a name, no lock
    taken = own(database, Holder(pid=8, address="http://h:2", since=2.0))
    try:
        assert Holder.parse(lock_path(database).read_text()) == Holder(8, "http://h:2", 2.0)
    finally:
        taken.release()


def test_announce_renames_the_holder_for_the_next_refused(tmp_path: Path) -> None:
    database = tmp_path / "relay.db"
    held = own(database, Holder(pid=5, address="http://127.0.0.1:0", since=3.0))
    try:
        held.announce(Holder(pid=5, address="http://127.0.0.1:41234", since=3.0))
        with pytest.raises(DatabaseInUse) as refused:
            own(database, HOLDER)
        assert refused.value.holder == Holder(5, "http://127.0.0.1:41234", 3.0)
    finally:
        held.release()


def test_the_lock_dies_with_a_killed_holder_process(tmp_path: Path) -> None:
    database = tmp_path / "relay.db"
    script = ("import sys, time; from pathlib import Path; "
              "from daemon.store.owner import Holder, own; "
              f"own(Path({str(database)!r}), Holder(0, 'http://child:1', 0.0)); "
              "print('held', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        with pytest.raises(DatabaseInUse) as refused:
            own(database, HOLDER)
        assert refused.value.holder is not None
        assert refused.value.holder.address == "http://child:1"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        taken = wait_until(lambda: _try_own(database), timeout=5, message="the lock freed")
        taken.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


def _try_own(database: Path) -> Ownership | None:
    try:
        return own(database, HOLDER)
    except DatabaseInUse:
        return None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"pid": "x", "address": 1}', '{"pid": 1}'])
def test_a_lock_file_naming_nobody_parses_to_none(text: str) -> None:
    assert Holder.parse(text) is None


def test_the_message_without_a_name_still_says_what_to_do() -> None:
    message = in_use_message(Path("d/relay.db"), None)
    assert "in use by another process" in message and "one process" in message
