"""Peewee without psycopg on SQLite (`daemon/store/drivers.py`): each check runs in a
fresh interpreter, where nothing has imported either yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)


def run(code: str) -> object:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=50, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_daemon_starts_on_sqlite_without_importing_psycopg() -> None:
    assert run("import json, sys, daemon.runtime, daemon.cli\n"
               "print(json.dumps('psycopg' in sys.modules))") is False


def test_peewee_binds_no_psycopg_name_but_those_handed_to_it() -> None:
    """peewee imported as usual (psycopg present): every name of its module that holds
    something of psycopg is one `load_psycopg` sets, so none is left unset."""
    found = run("import json, peewee\n"
                "from daemon.store.drivers import PEEWEE_NAMES\n"
                "names = sorted(n for n, v in vars(peewee).items() if any(\n"
                "    str(getattr(v, a, '')).split('.')[0] == 'psycopg'\n"
                "    for a in ('__module__', '__name__')))\n"
                "print(json.dumps([names, sorted(PEEWEE_NAMES)]))")
    assert isinstance(found, list)
    assert found[0] == found[1]


def test_a_postgresql_database_gets_peewees_psycopg_adapter_after_load_psycopg() -> None:
    found = run("import json, sys, daemon.store, peewee\n"
                "from daemon.store.drivers import load_psycopg\n"
                "before = peewee.psycopg is None and 'psycopg' not in sys.modules\n"
                "load_psycopg()\n"
                "import psycopg\n"
                "db = peewee.PostgresqlDatabase('x', prefer_psycopg3=True)\n"
                "print(json.dumps([before, peewee.psycopg is psycopg,\n"
                "                  type(db._adapter).__name__]))")
    assert found == [True, True, "Psycopg3Adapter"]
