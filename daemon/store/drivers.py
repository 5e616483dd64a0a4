"""Peewee without psycopg until a store on PostgreSQL needs it.

Peewee imports psycopg at its own import whenever psycopg is installed, and Relay
installs it for PostgreSQL. On SQLite that import is never used and cost a quarter
of importing relayd (0.18 s of CPU of 0.72, best of 10: psycopg's C binding, its
error classes and adapters). Importing this module imports peewee with psycopg
hidden, so peewee takes it for absent; `load_psycopg` hands peewee what its own
import would have bound, before a PostgreSQL database is opened. `daemon.store`
imports this module before anything of its imports peewee.
"""

from __future__ import annotations

import sys

# The names peewee binds from psycopg at its import (peewee.py: `import psycopg`, then
# `TransactionStatus`, `Json` and `Jsonb` as these), and reads when a database opens.
PEEWEE_NAMES = ("psycopg", "TransactionStatus", "Json_pg3", "Jsonb_pg3")


def _import_peewee_alone() -> None:
    if "peewee" in sys.modules or "psycopg" in sys.modules:
        return  # imported already, with psycopg or without: nothing to save
    sys.modules["psycopg"] = None  # type: ignore[assignment]  # `import psycopg` fails
    try:
        import peewee  # noqa: F401
    finally:
        del sys.modules["psycopg"]


def load_psycopg() -> None:
    """Import psycopg and give peewee its names (a PostgreSQL store, before it opens)."""
    import peewee
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.types.json import Json, Jsonb

    if getattr(peewee, "psycopg", None) is None:
        for name, value in zip(PEEWEE_NAMES, (psycopg, TransactionStatus, Json, Jsonb),
                               strict=True):
            setattr(peewee, name, value)


_import_peewee_alone()
