"""Stats: the aggregates behind `GET /v1/stats` (one workspace) and `GET /metrics` (the
daemon). Every query is one bounded statement that sums in SQL: the window's queries
reach rows through the jobs alive in the window (the job's workspace index, then each
job's rows, then each row's attempts), never a scan of all rows, and `/metrics` reads
the attempt log only past the mark of its last scrape.
"""

from __future__ import annotations

from typing import Any

from daemon.domain.estimate import History, median
from daemon.domain.jobs import (
    CANCELLING,
    FINALIZING,
    QUEUED,
    ROW_COMPLETED,
    RUNNING,
    SCHEDULED,
    VALIDATING,
)
from daemon.domain.stats import (
    AttemptCount,
    AttemptSample,
    DaemonCounts,
    JobUsage,
    Latency,
    QueueDepth,
    Usage,
    WorkspaceStats,
    attempt_class,
)
from daemon.store.sql import SqlBase

USAGE_JOBS = 50  # jobs listed with their usage, newest first
HISTORY_ROWS = 1000  # recent completed rows an estimate's median reads, per workspace

# The jobs of one workspace alive in the window ({p}: workspace, since), and their rows.
_WINDOW = ('FROM job j JOIN "row" r ON r.job_id = j.seq '
           "WHERE j.workspace_id = {p} AND (j.finished_at IS NULL OR j.finished_at >= {p}) "
           "AND r.finished_at >= {p}")
THROUGHPUT = (  # {bucket}: the whole part of (r.finished_at - since) / bucket_s
    "SELECT {bucket} AS bucket, "
    "SUM(CASE WHEN r.status = 'completed' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END) " + _WINDOW + " GROUP BY bucket")
# An attempt without an answer is written "timeout: …" or "connection: …": its first
# word is all that is grouped on (domain.stats.attempt_class reads it).
ATTEMPTS = (
    "SELECT a.model, a.status_code, a.error IS NULL, "
    "CASE WHEN a.status_code IS NULL THEN substr(a.error, 1, 10) ELSE '' END, COUNT(*) "
    + _WINDOW.replace("WHERE", "JOIN attempt a ON a.row_id = r.id WHERE")
    + " GROUP BY 1, 2, 3, 4")
LATENCY = (  # nearest rank: the ceil(p * n)-th fastest success
    "SELECT model, n, MIN(CASE WHEN rn * 100 >= n * 50 THEN duration_ms END), "
    "MIN(CASE WHEN rn * 100 >= n * 95 THEN duration_ms END) FROM ("
    "SELECT a.model AS model, a.duration_ms AS duration_ms, "
    "ROW_NUMBER() OVER (PARTITION BY a.model ORDER BY a.duration_ms) AS rn, "
    "COUNT(*) OVER (PARTITION BY a.model) AS n "
    + _WINDOW.replace("WHERE", "JOIN attempt a ON a.row_id = r.id WHERE")
    + " AND a.error IS NULL) AS ranked GROUP BY model, n")
RECENT_COMPLETIONS = (  # the workspace's newest completed rows
    "SELECT COALESCE(r.model, j.model), r.completion_tokens "
    + _WINDOW + " AND r.status = {p} ORDER BY r.finished_at DESC LIMIT {p}")
JOB_USAGE = (
    "SELECT id, name, model, input_tokens, output_tokens, cost_nano_usd FROM job "
    "WHERE workspace_id = {p} AND status != {p} AND (finished_at IS NULL OR finished_at >= {p}) "
    "ORDER BY seq DESC LIMIT {p}")
TOTAL_USAGE = (
    "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
    "COALESCE(SUM(cost_nano_usd), 0) FROM job WHERE workspace_id = {p}")
OUTPUTS = (
    "SELECT COALESCE(SUM(outputs_valid), 0), COALESCE(SUM(outputs_repaired), 0), "
    "COALESCE(SUM(outputs_invalid), 0) FROM job WHERE workspace_id = {p}")
OUTPUTS_BY_WORKSPACE = (
    "SELECT w.name, SUM(j.outputs_valid), SUM(j.outputs_repaired), SUM(j.outputs_invalid) "
    "FROM job j JOIN workspace w ON w.id = j.workspace_id GROUP BY w.name")
QUEUE = (
    "SELECT w.name, j.priority, COUNT(*), SUM(j.total - j.completed - j.failed) "
    "FROM job j JOIN workspace w ON w.id = j.workspace_id "
    "WHERE j.status IN ({p}, {p}) {where} GROUP BY w.name, j.priority "
    "ORDER BY j.priority DESC")
JOBS_BY_STATUS = (
    "SELECT w.name, j.status, COUNT(*) FROM job j JOIN workspace w ON w.id = j.workspace_id "
    "GROUP BY w.name, j.status")
ROWS_BY_MODEL = (
    "SELECT w.name, j.model, SUM(j.completed), SUM(j.failed - j.dead_letter), "
    "SUM(j.dead_letter) FROM job j JOIN workspace w ON w.id = j.workspace_id "
    "GROUP BY w.name, j.model")
PENDING = (
    "SELECT w.name, SUM(j.total - j.completed - j.failed) FROM job j "
    "JOIN workspace w ON w.id = j.workspace_id WHERE j.status IN ({p}, {p}, {p}) "
    "GROUP BY w.name")
WEBHOOKS = (
    "SELECT w.name, CASE WHEN j.webhook_state != 'done' THEN 'pending' "
    "WHEN {webhook_error} IS NULL THEN 'delivered' ELSE 'failed' END AS o, "
    "COUNT(*) FROM job j JOIN workspace w ON w.id = j.workspace_id "
    "WHERE j.webhook_state IS NOT NULL GROUP BY w.name, o")
ATTEMPTS_AFTER = (
    "SELECT a.id, w.name, a.model, a.status_code, substr(a.error, 1, 10), a.duration_ms, "
    "EXISTS (SELECT 1 FROM attempt b WHERE b.row_id = a.row_id AND b.model = a.model "
    "AND b.id < a.id) FROM attempt a JOIN \"row\" r ON r.id = a.row_id "
    "JOIN job j ON j.seq = r.job_id JOIN workspace w ON w.id = j.workspace_id "
    "WHERE a.id > {p} ORDER BY a.id LIMIT {p}")


def _three(values: tuple[Any, ...]) -> tuple[int, int, int]:
    valid, repaired, invalid = (int(v or 0) for v in values)
    return valid, repaired, invalid


class StatsQueries(SqlBase):
    """Aggregates for the operator's numbers."""

    def workspace_stats(self, workspace_id: int, *, now: float, since: float,
                        bucket_s: int, recent_since: float) -> WorkspaceStats:
        window = (workspace_id, since, since)
        return WorkspaceStats(
            now=now, since=since, bucket_s=bucket_s,
            throughput=[(int(b), int(c or 0), int(f or 0)) for b, c, f in
                        self._all(THROUGHPUT, (since, bucket_s, *window),
                                  bucket=self.whole("(r.finished_at - {p}) / {p}"))
                        if b is not None],
            attempts=self._attempts(window),
            recent=self._attempts((workspace_id, recent_since, recent_since)),
            latencies=[Latency(m, int(p50), int(p95), int(n))
                       for m, n, p50, p95 in self._all(LATENCY, window)],
            jobs=[JobUsage(i, name, model, Usage(int(t_in), int(t_out), int(cost)))
                  for i, name, model, t_in, t_out, cost in self._all(
                      JOB_USAGE, (workspace_id, SCHEDULED, since, USAGE_JOBS))],
            total=Usage(*(int(v) for v in self._all(TOTAL_USAGE, (workspace_id,))[0])),
            queue=[QueueDepth(int(p), int(n), int(rows or 0)) for _, p, n, rows
                   in self._all(QUEUE, (VALIDATING, QUEUED, workspace_id),
                                where="AND j.workspace_id = {p}")],
            outputs=_three(self._all(OUTPUTS, (workspace_id,))[0]),
        )

    def model_history(self, workspace_id: int, *, since: float) -> dict[str, History]:
        """Per model, the median completion tokens of the workspace's newest completed
        rows since `since` (at most `HISTORY_ROWS`) and the p50 latency of its calls."""
        window = (workspace_id, since, since)
        completions: dict[str, list[int]] = {}
        for model, tokens in self._all(RECENT_COMPLETIONS, (*window, ROW_COMPLETED,
                                                            HISTORY_ROWS)):
            if model and tokens:
                completions.setdefault(model, []).append(int(tokens))
        latency = {m: int(p50) / 1000 for m, _, p50, _ in self._all(LATENCY, window)
                   if p50 is not None}
        return {m: History(median(completions.get(m, [])), latency.get(m))
                for m in {*completions, *latency}}

    def daemon_counts(self) -> DaemonCounts:
        rows = []
        for ws, model, completed, failed, dead in self._all(ROWS_BY_MODEL, ()):
            rows += [(ws, model, "completed", int(completed or 0)),
                     (ws, model, "failed", int(failed or 0)),
                     (ws, model, "dead_letter", int(dead or 0))]
        return DaemonCounts(
            jobs=[(ws, status, int(n)) for ws, status, n in self._all(JOBS_BY_STATUS, ())],
            queue=[(ws, int(p), int(n), int(r or 0)) for ws, p, n, r in
                   self._all(QUEUE, (VALIDATING, QUEUED), where="")],
            rows=rows,
            pending=[(ws, int(n or 0)) for ws, n in
                     self._all(PENDING, (RUNNING, FINALIZING, CANCELLING))],
            webhooks=[(ws, o, int(n)) for ws, o, n in self._all(
                WEBHOOKS, (), webhook_error=self.json_text("j.webhook", "error"))],
            outputs=[(ws, outcome, int(n or 0)) for ws, *counts in
                     self._all(OUTPUTS_BY_WORKSPACE, ())
                     for outcome, n in zip(("valid", "repaired", "invalid"), counts,
                                           strict=True)],
        )

    def attempts_after(self, after_id: int, *, limit: int) -> list[AttemptSample]:
        """The attempt log past `after_id`, oldest first, at most `limit`."""
        return [AttemptSample(int(i), ws, model, attempt_class(status, error), int(ms),
                              bool(retry))
                for i, ws, model, status, error, ms, retry
                in self._all(ATTEMPTS_AFTER, (after_id, limit))]

    def last_attempt_id(self) -> int:
        return int(self._all("SELECT COALESCE(MAX(id), 0) FROM attempt", ())[0][0])

    def _attempts(self, window: tuple[Any, ...]) -> list[AttemptCount]:
        return [AttemptCount(model, attempt_class(status, None if ok else prefix), int(n))
                for model, status, ok, prefix, n in self._all(ATTEMPTS, window)]

    def _all(self, statement: str, params: tuple[Any, ...],
             **fragments: str) -> list[tuple[Any, ...]]:
        return list(self.db.execute_sql(self.sql(statement, **fragments), params).fetchall())
