"""The cluster scenario: several `relayd serve` nodes sharing one PostgreSQL database,
each group of nodes on a fresh schema of the bench's server, dropped afterwards.

- scaling: one job of `cluster_rows` rows on a 200 ms simulator, `batch_concurrency` 16
  per node, the model's cluster-wide `max_concurrency` 1,000 (never the bottleneck), on
  1, 2 and 3 fresh nodes, submitted through the first: rows/s with N nodes ÷ (N ×
  rows/s with one).
- store: the same job on one node with the default store (SQLite), in the same run:
  rows/s on PostgreSQL ÷ rows/s on SQLite.
- database cost: PostgreSQL's counters around the 3-node run (commits, WAL, rows
  written in the schema's tables, statements where pg_stat_statements is loaded) per
  1,000 rows; a probe's rate of single-row commits; their quotient, the rows/s the
  database could carry at this cost per row.
- takeover: `kill -9` of one of 3 nodes while it holds leased rows: seconds until no
  pending row is leased by it (its leases lapse `lease_s` after its last heartbeat).

The server is `RELAY_BENCH_POSTGRES_URL` (default postgresql://postgres@127.0.0.1:5432/test),
with a role that may create schemas. Where it cannot be reached the scenario says why
and its figures are not run; the rest of the bench goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, LiteralString

import psycopg

from bench import jobs
from bench.harness import Bench
from bench.jobs import job_body, prompts
from bench.procs import WORKSPACE, BenchError, Relayd, Simulator
from bench.report import Figure, at_least, at_most
from daemon import testing
from daemon.domain.cluster import lease_size
from daemon.domain.jobs import CANCELLED, COMPLETED, EXPIRED, FAILED, ROW_PENDING
from daemon.testing import create_schema, drop_schema, simulated_model, wait_until, with_params

SERVER_URL = os.environ.get("RELAY_BENCH_POSTGRES_URL",
                            "postgresql://postgres@127.0.0.1:5432/test")
ALIAS = "pooled"
LATENCY_MS = 200
CONCURRENCY = 16  # [gateway] batch_concurrency of each node
MODEL_LIMIT = 1_000  # the model's max_concurrency, split between the live nodes
NODES = (1, 2, 3)
TAKEOVER_MARGIN_S = 2  # the takeover's target: lease_s + this
# The takeover job is at least this big, so every node leases rows at tiny sizes.
TAKEOVER_MIN_ROWS = 2 * NODES[-1] * lease_size(CONCURRENCY)
PROBE_THREADS, PROBE_S = 4, 2.0
STATEMENTS = "cluster_db_statements_per_1k_rows"
OPTIONAL = frozenset({STATEMENTS})  # measured only where pg_stat_statements is loaded


def figures() -> list[Figure]:
    per_1k = "per 1,000 rows, 3 nodes"
    return [
        *(Figure(f"cluster_scaling_{n}", "cluster",
                 f"rows/s on {n} nodes ÷ ({n} × rows/s on 1)", "", at_least(0.9))
          for n in NODES[1:]),
        *(Figure(f"cluster_rows_per_s_{n}", "cluster",
                 f"rows/s on {n} node{'s' if n > 1 else ''} (PostgreSQL)", "rows/s")
          for n in NODES),
        Figure("cluster_sqlite_rows_per_s", "cluster", "rows/s on 1 node (SQLite)", "rows/s"),
        Figure("cluster_postgres_vs_sqlite", "cluster", "1 node: rows/s PostgreSQL ÷ SQLite",
               ""),
        Figure("cluster_db_commits_per_1k_rows", "cluster", f"PostgreSQL commits {per_1k}",
               "commits"),
        Figure("cluster_db_wal_kb_per_1k_rows", "cluster", f"WAL {per_1k}", "kB"),
        Figure("cluster_db_rows_written_per_1k_rows", "cluster",
               f"table rows written {per_1k}", "rows"),
        Figure(STATEMENTS, "cluster", f"statements {per_1k}", "statements"),
        Figure("cluster_db_commits_per_s", "cluster",
               f"probe: single-row commits/s ({PROBE_THREADS} connections)", "commits/s"),
        Figure("cluster_db_ceiling_rows_per_s", "cluster",
               "database ceiling: probe commits/s ÷ commits per row", "rows/s"),
        # The target follows the run's lease_s (quick runs use a shorter one).
        Figure("cluster_takeover_s", "cluster", "kill -9 → no pending row leased by it", "s",
               at_most(15 + TAKEOVER_MARGIN_S)),
    ]


# --- PostgreSQL -------------------------------------------------------------------------


def unreachable(server: str) -> str | None:
    """Why `server` cannot be used, or None when it can."""
    try:
        with psycopg.connect(server, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        said = " ".join(str(exc).split())
        return f"PostgreSQL at {server} is unreachable (set RELAY_BENCH_POSTGRES_URL): {said}"


@dataclass(frozen=True)
class Schema:
    """One schema of the server: the nodes' store URL puts their tables in it and names
    their connections after it (so the bench knows when they are all gone)."""

    server: str
    name: str

    @property
    def url(self) -> str:
        """The nodes' `[database] url`."""
        return with_params(self.server, options=f"-csearch_path={self.name}",
                           application_name=self.name)

    @property
    def bench_url(self) -> str:
        """The bench's own connections: the same tables, not counted as the nodes'."""
        return with_params(self.server, options=f"-csearch_path={self.name}")

    def query(self, text: LiteralString, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.bench_url, autocommit=True) as conn:
            return conn.execute(text, args).fetchall()

    def run(self, text: LiteralString, *args: Any) -> None:
        with psycopg.connect(self.bench_url, autocommit=True) as conn:
            conn.execute(text, args)

    def nodes_connected(self) -> int:
        ((count,),) = self.query("SELECT COUNT(*) FROM pg_stat_activity "
                                 "WHERE application_name = %s", self.name)
        return int(count)


@contextmanager
def fresh_schema(server: str) -> Iterator[Schema]:
    """A new, empty schema, dropped on exit (the store creates its tables in it)."""
    schema = Schema(server, create_schema(server, "relay_bench_"))
    try:
        yield schema
    finally:
        drop_schema(server, schema.name, lock_timeout_s=10)


COUNTERS = (
    "SELECT d.xact_commit, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, "
    "(SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint "
    " FROM pg_stat_user_tables WHERE schemaname = current_schema()) "
    "FROM pg_stat_database d WHERE d.datname = current_database()")
STATEMENT_CALLS = ("SELECT COALESCE(SUM(calls), 0)::bigint FROM pg_stat_statements "
                   "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())")


@dataclass(frozen=True)
class Counters:
    """What the server has counted so far: commits in the database, WAL bytes (the whole
    server), rows inserted, updated and deleted in the schema's tables, and statements
    (None without pg_stat_statements loaded)."""

    commits: int
    wal_bytes: int
    written: int
    statements: int | None

    @classmethod
    def read(cls, schema: Schema) -> Counters:
        ((commits, wal, written),) = schema.query(COUNTERS)
        return cls(int(commits), int(wal), int(written), statement_calls(schema))

    def since(self, before: Counters) -> Counters:
        statements = (None if self.statements is None or before.statements is None
                      else self.statements - before.statements)
        return Counters(self.commits - before.commits, self.wal_bytes - before.wal_bytes,
                        self.written - before.written, statements)


def statement_calls(schema: Schema) -> int | None:
    try:
        ((calls,),) = schema.query(STATEMENT_CALLS)
    except psycopg.Error:  # not created in this database, or not in shared_preload_libraries
        return None
    return int(calls)


def commits_per_s(schema: Schema) -> float:
    """`PROBE_THREADS` connections, each committing single-row UPDATEs of its own row of
    a scratch table for `PROBE_S` seconds: the commits per second of them all."""
    schema.run("CREATE TABLE bench_commit_probe (id INT PRIMARY KEY, n BIGINT NOT NULL)")
    schema.run("INSERT INTO bench_commit_probe SELECT i, 0 FROM generate_series(1, %s) i",
               PROBE_THREADS)
    conns = [psycopg.connect(schema.bench_url, autocommit=True) for _ in range(PROBE_THREADS)]
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(PROBE_THREADS) as pool:
            done = sum(pool.map(lambda k: updates(conns[k], k + 1, until=started + PROBE_S),
                                range(PROBE_THREADS)))
        return done / (time.perf_counter() - started)
    finally:
        for conn in conns:
            conn.close()


def updates(conn: psycopg.Connection[Any], key: int, *, until: float) -> int:
    done = 0
    while time.perf_counter() < until:
        conn.execute("UPDATE bench_commit_probe SET n = n + 1 WHERE id = %s", (key,))
        done += 1
    return done


# --- the nodes --------------------------------------------------------------------------


def node_tables(sim: Simulator, *, schema: Schema | None = None, shared: str = "",
                lease_s: int = 15) -> dict[str, Any]:
    """One node's config (`Relayd.write_config`'s keywords); with `schema`, on PostgreSQL
    with the other nodes' data dir (`shared`) and `lease_s`, else on SQLite."""
    tables: dict[str, Any] = {
        "gateway": {"batch_concurrency": CONCURRENCY, "max_running_jobs": 2},
        "models": [simulated_model(ALIAS, sim, max_concurrency=MODEL_LIMIT)]}
    if schema is None:
        return tables
    return {"server": {"data_dir": shared}, "database": {"url": schema.url},
            "cluster": {"lease_s": lease_s}, **tables}


@dataclass
class Nodes:
    """Nodes on one schema and one data dir, all on the same simulator."""

    schema: Schema
    members: list[Relayd]
    lease_s: int

    @classmethod
    def start(cls, b: Bench, sim: Simulator, schema: Schema, *, count: int,
              lease_s: int) -> Nodes:
        """`count` started nodes, each past the wait a joining node makes before it
        dispatches (for every other node's next beat: 1.5 heartbeats cover it), so all
        of them run a job submitted now."""
        shared = str(b.home / f"{schema.name}-data")
        members = [b.daemon({ALIAS: sim}).write_config(**node_tables(
            sim, schema=schema, shared=shared, lease_s=lease_s)) for _ in range(count)]
        key = testing.create_key(members[0].config, WORKSPACE)  # creates the tables too
        nodes = cls(schema, members, lease_s)
        for node in members:
            node.key = key
            node.spawn()
        try:
            for node in members:
                wait_until(node.healthy, timeout=30, message=f"relayd in {node.home}")
            nodes.wait_ready()
        except BaseException:
            nodes.kill()
            raise
        return nodes

    def wait_ready(self) -> None:
        def started() -> list[float]:
            live = self.schema.query("SELECT started_at FROM node WHERE heartbeat_at > %s",
                                     time.time() - self.lease_s)
            return [at for (at,) in live] if len(live) == len(self.members) else []

        last = max(wait_until(started, timeout=30,
                              message=f"{len(self.members)} live nodes"))
        if len(self.members) > 1:  # a heartbeat is lease_s / 3
            time.sleep(max(0.0, last + 0.5 * self.lease_s + 0.25 - time.time()))

    def node_id(self, node: Relayd) -> str:
        ((node_id,),) = self.schema.query("SELECT id FROM node WHERE address = %s", node.url)
        return str(node_id)

    def leased(self, node_id: str) -> int:
        """Pending rows leased by the node `node_id`."""
        ((count,),) = self.schema.query('SELECT COUNT(*) FROM "row" WHERE lease_node = %s '
                                        "AND status = %s", node_id, ROW_PENDING)
        return int(count)

    def kill(self) -> None:
        """SIGKILL every node, then wait until the server has closed their connections
        (a backend adds what it counted to the statistics as it exits)."""
        for node in self.members:
            node.kill()
            node.stop()
        wait_until(lambda: self.schema.nodes_connected() == 0, timeout=30,
                   message="the nodes' connections to close")


# --- the runs ---------------------------------------------------------------------------


def job_timeout(rows: int) -> float:
    """Generous: a quarter of one node's ideal rate (16 ÷ 0.2 s)."""
    return 60 + rows / 20


def on_sqlite(b: Bench, sim: Simulator, rows: int, *, tag: str) -> float:
    """Seconds from the 200 of the submit to the `GET` (every 50 ms) that sees it done."""
    daemon = b.daemon({ALIAS: sim}).write_config(**node_tables(sim)).start()
    try:
        body = job_body(ALIAS, prompts(rows, tag), tag=tag)
        return jobs.timed_job(daemon.client(), body, timeout=job_timeout(rows))
    finally:
        daemon.kill()
        daemon.stop()


ENDED = frozenset({COMPLETED, FAILED, EXPIRED, CANCELLED})
JOB_STATE = "SELECT status, completed, total FROM job WHERE id = %s"


def timed(nodes: Nodes, rows: int, *, tag: str) -> float:
    """Seconds from the 200 of the submit through the first node to the read (every
    50 ms) that sees the job completed. The job is read in the database, not through
    the API, and in one transaction rolled back at the end, so the bench adds no commit
    to what the nodes cost the database (a `GET` of a job costs it about two)."""
    body = job_body(ALIAS, prompts(rows, tag), tag=tag)
    job = jobs.submit(nodes.members[0].client(), body)
    started = time.perf_counter()
    deadline = started + job_timeout(rows)
    with psycopg.connect(nodes.schema.bench_url) as conn:
        while True:
            status, completed, total = conn.execute(JOB_STATE, (job["id"],)).fetchone() or (
                "missing", 0, rows)
            seen = time.perf_counter()
            if status in ENDED or seen > deadline:
                break
            time.sleep(jobs.POLL_S)
        conn.rollback()
    if status != COMPLETED or completed != total:
        raise BenchError(f"job {job['id']} {status} with {completed}/{total} rows completed")
    return seen - started


@dataclass(frozen=True)
class PostgresRun:
    seconds: float
    used: Counters  # from just before the submit until the nodes' connections closed
    commits_per_s: float | None  # the probe's, when asked for


def on_postgres(b: Bench, sim: Simulator, count: int, rows: int, *, tag: str,
                probe: bool = False) -> PostgresRun:
    with fresh_schema(SERVER_URL) as schema:
        nodes = Nodes.start(b, sim, schema, count=count, lease_s=b.sizes.cluster_lease_s)
        try:
            before = Counters.read(schema)
            seconds = timed(nodes, rows, tag=tag)
        finally:
            nodes.kill()
        used = Counters.read(schema).since(before)
        return PostgresRun(seconds, used, commits_per_s(schema) if probe else None)


def scaling_run(b: Bench, sim: Simulator, run: int) -> None:
    """SQLite on one node and PostgreSQL on 1, 2 and 3 (the order reversed every other
    run), each on fresh nodes; the database's cost of the 3-node run."""
    rows, most = b.sizes.cluster_rows, NODES[-1]
    sqlite_s = 0.0
    on_pg: dict[int, PostgresRun] = {}
    for count in [0, *NODES] if run % 2 == 0 else [*NODES[::-1], 0]:  # 0: SQLite
        sim.reset()  # its request log would only grow
        tag = f"cl{run}n{count}"
        if count == 0:
            sqlite_s = on_sqlite(b, sim, rows, tag=tag)
        else:
            on_pg[count] = on_postgres(b, sim, count, rows, tag=tag, probe=count == most)
    rates = {count: rows / done.seconds for count, done in on_pg.items()}
    for count in NODES:
        b.figures[f"cluster_rows_per_s_{count}"].add(rates[count])
        if count > 1:
            b.figures[f"cluster_scaling_{count}"].add(rates[count] / (count * rates[1]))
    b.figures["cluster_sqlite_rows_per_s"].add(rows / sqlite_s)
    b.figures["cluster_postgres_vs_sqlite"].add(sqlite_s / on_pg[1].seconds)
    b.say(f"[cluster] run {run + 1}: {rows} rows at {LATENCY_MS} ms; rows/s SQLite "
          f"{rows / sqlite_s:.1f}, PostgreSQL " + ", ".join(
              f"{n} node{'s' if n > 1 else ''} {rates[n]:.1f}" for n in NODES))
    database_cost(b, on_pg[most], rows)


def database_cost(b: Bench, done: PostgresRun, rows: int) -> None:
    used, per_1k = done.used, 1000 / rows
    per_row = used.commits / rows
    b.figures["cluster_db_commits_per_1k_rows"].add(used.commits * per_1k)
    b.figures["cluster_db_wal_kb_per_1k_rows"].add(used.wal_bytes / 1000 * per_1k)
    b.figures["cluster_db_rows_written_per_1k_rows"].add(used.written * per_1k)
    if used.statements is not None:
        b.figures[STATEMENTS].add(used.statements * per_1k)
    assert done.commits_per_s is not None
    b.figures["cluster_db_commits_per_s"].add(done.commits_per_s)
    b.figures["cluster_db_ceiling_rows_per_s"].add(done.commits_per_s / per_row)
    statements = ("pg_stat_statements not loaded: statements not counted"
                  if used.statements is None else f"{used.statements} statements")
    b.say(f"[cluster] database, {NODES[-1]} nodes: {used.commits} commits, "
          f"{used.wal_bytes / 1e6:.1f} MB WAL, {used.written} table rows written, "
          f"{statements}; probe {done.commits_per_s:.0f} commits/s → ceiling "
          f"{done.commits_per_s / per_row:,.0f} rows/s")


def takeover_run(b: Bench, sim: Simulator, run: int) -> None:
    """3 nodes on one job; SIGKILL the last once it holds leased rows; time until none
    of its pending rows is leased by it any more; then the job must complete."""
    rows, lease_s = max(b.sizes.cluster_rows, TAKEOVER_MIN_ROWS), b.sizes.cluster_lease_s
    sim.reset()
    with fresh_schema(SERVER_URL) as schema:
        nodes = Nodes.start(b, sim, schema, count=NODES[-1], lease_s=lease_s)
        try:
            first, victim = nodes.members[0], nodes.members[-1]
            victim_id = nodes.node_id(victim)
            client = first.client()
            job = jobs.submit(client, job_body(ALIAS, prompts(rows, f"to{run}"),
                                               tag=f"to{run}"))
            held = wait_until(lambda: nodes.leased(victim_id), timeout=job_timeout(rows),
                              every=0.02, message="the node to kill to lease rows")
            victim.kill()
            killed = time.monotonic()
            wait_until(lambda: nodes.leased(victim_id) == 0, timeout=lease_s + 60,
                       message="the killed node's rows to be leased again")
            seconds = time.monotonic() - killed
            jobs.wait_end(client, job["id"], timeout=job_timeout(rows))  # every row done
        finally:
            nodes.kill()
    b.figures["cluster_takeover_s"].add(seconds)
    b.say(f"[cluster] takeover {run + 1}: {rows} rows on {NODES[-1]} nodes, lease_s "
          f"{lease_s}; killed a node holding {held} pending rows; none leased by it "
          f"{seconds:.2f} s later")


def cluster(b: Bench) -> None:
    """Scaling, store and database cost in each run; the takeover every other run."""
    if reason := unreachable(SERVER_URL):
        b.say(f"[cluster] SKIPPED, its figures are not run: {reason}")
        return
    sim = b.sim(LATENCY_MS)
    runs = b.runs["cluster"]
    for run in range(runs):
        scaling_run(b, sim, run)
    b.figures["cluster_takeover_s"].target = at_most(b.sizes.cluster_lease_s
                                                     + TAKEOVER_MARGIN_S)
    for run in range(max(1, runs // 2)):
        takeover_run(b, sim, run)
