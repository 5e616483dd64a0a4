"""API keys: shown once, stored only as a sha256, revocable by prefix."""

from __future__ import annotations

import hashlib

import pytest

from daemon.domain import ids
from daemon.store.backend import SqlStore
from daemon.store.interface import Store

NOW = 1_700_000_000.0


def stored_key_columns(repo: SqlStore) -> list[tuple[object, ...]]:
    return list(repo.db.execute_sql("SELECT * FROM api_key"))


def test_create_key_returns_plain_rk_key(repo: Store) -> None:
    plain = repo.create_key("acme", now=NOW)
    assert plain.startswith("rk_")
    assert len(plain) > 30
    assert repo.workspace("acme") is not None


def test_only_the_hash_is_stored(repo: SqlStore) -> None:
    plain = repo.create_key("acme", now=NOW)
    rows = stored_key_columns(repo)
    assert len(rows) == 1
    assert all(plain not in str(value) for value in rows[0])
    digest = hashlib.sha256(plain.encode()).hexdigest()
    (stored,) = repo.db.execute_sql("SELECT key_hash FROM api_key").fetchone()
    assert stored == digest


def test_authenticate(repo: Store) -> None:
    plain = repo.create_key("acme", now=NOW)
    other = repo.create_key("globex", now=NOW)
    acme = repo.authenticate(plain)
    assert acme is not None and acme.name == "acme"
    globex = repo.authenticate(other)
    assert globex is not None and globex.name == "globex"
    assert acme.id != globex.id


@pytest.mark.parametrize("guess", ["", "rk_", "rk_unknown", "Bearer x"])
def test_authenticate_unknown_key(repo: Store, guess: str) -> None:
    repo.create_key("acme", now=NOW)
    assert repo.authenticate(guess) is None


def test_authenticate_is_exact(repo: Store) -> None:
    plain = repo.create_key("acme", now=NOW)
    assert repo.authenticate(plain[:-1]) is None
    assert repo.authenticate(plain + "x") is None
    assert repo.authenticate(plain.upper()) is None


def test_revoked_key_no_longer_authenticates(repo: Store) -> None:
    plain = repo.create_key("acme", now=NOW)
    keep = repo.create_key("acme", now=NOW)
    assert repo.revoke_key(plain[:10], now=NOW + 5) == 1
    assert repo.authenticate(plain) is None
    assert repo.authenticate(keep) is not None
    assert repo.revoke_key(plain[:10], now=NOW + 6) == 0  # already revoked


def test_list_keys(repo: Store) -> None:
    a = repo.create_key("acme", now=NOW)
    repo.create_key("globex", now=NOW + 1)
    repo.revoke_key(a, now=NOW + 2)
    keys = repo.list_keys()
    assert [(k.workspace, k.created_at) for k in keys] == [("acme", NOW), ("globex", NOW + 1)]
    assert keys[0].prefix == a[:10]
    assert keys[0].revoked_at == NOW + 2
    assert keys[1].revoked_at is None
    assert [k.workspace for k in repo.list_keys("globex")] == ["globex"]
    assert repo.list_keys("nobody") == []


@pytest.mark.parametrize("prefix", ["", "r", "rk_", "rk_ab"])
def test_revoke_needs_six_characters(repo: Store, prefix: str) -> None:
    repo.create_key("acme", now=NOW)
    assert repo.revoke_key(prefix, now=NOW) == 0
    assert all(k.revoked_at is None for k in repo.list_keys())


def test_revoke_by_full_key(repo: Store) -> None:
    plain = repo.create_key("acme", now=NOW)
    assert repo.revoke_key(plain, now=NOW) == 1
    assert repo.authenticate(plain) is None


def test_revoke_prefix_is_case_sensitive(repo: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys are base64url: "rk_AbCdEfG…" and "rk_abcdefg…" are different keys, and revoking
    # one must not revoke the other.
    plains = iter(["rk_AbCdEfG" + "1" * 33, "rk_abcdefg" + "2" * 33])
    monkeypatch.setattr(ids, "api_key", lambda: next(plains))
    upper = repo.create_key("acme", now=NOW)
    lower = repo.create_key("acme", now=NOW)
    assert repo.revoke_key(upper[:10], now=NOW) == 1
    assert repo.authenticate(upper) is None
    assert repo.authenticate(lower) is not None


def test_revoke_prefix_underscore_is_not_a_wildcard(repo: Store,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    plains = iter(["rk_a_b_c_d" + "1" * 33, "rk_axbxcxd" + "2" * 33])
    monkeypatch.setattr(ids, "api_key", lambda: next(plains))
    underscored = repo.create_key("acme", now=NOW)
    plain = repo.create_key("acme", now=NOW)
    assert repo.revoke_key(underscored[:10], now=NOW) == 1
    assert repo.authenticate(plain) is not None
