"""The daemon's hold on its SQLite database (store/owner.py) as `Daemon.start` takes
it: one database reached by two paths is one lock, and a start that fails after taking
the lock gives it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.store import open_store
from daemon.store.backend import SqlStore
from daemon.store.owner import DatabaseInUse, Holder, own
from daemon.store.schema import SchemaError
from tests.actors.harness import FakeClock, Upstream, make_config, make_daemon, stop_daemon

SOMEONE = Holder(pid=1, address="http://127.0.0.1:1", since=0.0)


def test_a_database_reached_through_a_symlink_is_the_same_lock(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "real.db"
    real.parent.mkdir()
    open_store(f"sqlite:///{real}").close()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "relay.db").symlink_to(real)  # the config names the link
    upstream = Upstream()
    daemon = make_daemon(make_config(tmp_path / "data"), upstream, FakeClock())
    daemon.start()
    try:
        with pytest.raises(DatabaseInUse):
            own(real, SOMEONE)
    finally:
        stop_daemon(daemon, upstream)


def test_a_start_that_cannot_open_its_database_keeps_no_lock(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'relay.db'}")
    assert isinstance(store, SqlStore)
    store.db.execute_sql("UPDATE schema_version SET version = 999")  # from a newer relayd
    store.close()
    daemon = make_daemon(make_config(tmp_path), Upstream(), FakeClock())
    with pytest.raises(SchemaError):
        daemon.start()
    own(tmp_path / "relay.db", SOMEONE).release()  # free again
