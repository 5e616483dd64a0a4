"""The idempotency keys on every backend: insert-first reservation (of concurrent
requests exactly one reserves a key), the answer, release, and the 24-hour sweep."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from daemon.domain.idempotency import KEEP_S, StoredKey
from daemon.store.backend import SqlStore
from tests.store.conftest import NOW

ROUTE = "POST /v1/batches"


def reserve(repo: SqlStore, key: str = "k", *, sha: str = "a" * 64, workspace: int = 1,
            now: float = NOW) -> StoredKey | None:
    return repo.reserve_key(workspace, key, route=ROUTE, body_sha256=sha, now=now)


def test_the_first_request_reserves_and_later_ones_read_its_answer(repo: SqlStore) -> None:
    assert reserve(repo) is None
    pending = reserve(repo)
    assert pending is not None and pending.answer is None
    repo.answer_key(1, "k", status=200, content_type="application/json", answer=b'{"id": 1}')
    stored = reserve(repo, sha="b" * 64)
    assert stored == StoredKey(key="k", route=ROUTE, body_sha256="a" * 64, created_at=NOW,
                               status=200, content_type="application/json",
                               answer=b'{"id": 1}')
    assert reserve(repo, workspace=2) is None  # another workspace's key of the same name


def test_a_released_key_is_free_and_an_answered_one_is_not_released(repo: SqlStore) -> None:
    assert reserve(repo, "free") is None
    repo.release_key(1, "free")
    assert reserve(repo, "free") is None
    repo.answer_key(1, "free", status=200, content_type="application/json", answer=b"{}")
    repo.release_key(1, "free")
    found = reserve(repo, "free")
    assert found is not None and found.answer == b"{}"


def test_keys_older_than_24_hours_are_swept_or_taken_over(repo: SqlStore) -> None:
    assert reserve(repo, "old") is None
    assert reserve(repo, "new", now=NOW + 10) is None
    assert repo.sweep_keys(now=NOW + KEEP_S - 1) == 0
    assert repo.sweep_keys(now=NOW + KEEP_S) == 1
    assert reserve(repo, "old", now=NOW + KEEP_S) is None  # swept: anew
    assert reserve(repo, "new", now=NOW + 10 + KEEP_S) is None  # past its 24 h: taken over


def test_concurrent_reservations_of_one_key_leave_exactly_one_holder(repo: SqlStore) -> None:
    start = threading.Barrier(8)

    def attempt(_: int) -> StoredKey | None:
        start.wait(timeout=10)
        return reserve(repo, "race")

    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(attempt, range(8)))
    assert sum(1 for f in found if f is None) == 1
    assert all(f.body_sha256 == "a" * 64 for f in found if f is not None)
