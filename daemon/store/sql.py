"""What every query group stands on: the database handle, the backend's way to open a
write transaction, and the few bulk statements written as raw SQL for speed.

The raw statements use `{p}` for a parameter and are formatted with the backend's
own marker (`db.param`: `?` for SQLite, `%s` for PostgreSQL), so they are the
same text on every backend.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from peewee import Database

INSERT_ROWS = (
    'INSERT INTO "row" (job_id, position, custom_id, model, body, status, error, error_code, '
    "finished_at, attempts, dead_letter, prompt_tokens, completion_tokens, cost_nano_usd) "
    "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, 0, 0, 0, 0, 0)")
COPY_ROWS = (
    'INSERT INTO "row" (job_id, position, custom_id, model, body, status, attempts, '
    "dead_letter, prompt_tokens, completion_tokens, cost_nano_usd) "
    "SELECT {p}, position, custom_id, model, body, {p}, 0, 0, 0, 0, 0 "
    'FROM "row" WHERE job_id = {p} ORDER BY position')
PENDING_ROWS = (
    'SELECT id, custom_id, model, body FROM "row" WHERE job_id = {p} AND status = {p} '
    "AND id > {p} ORDER BY id LIMIT {p}")
UPDATE_ROWS = (
    'UPDATE "row" SET status = {p}, attempts = {p}, response = {p}, status_code = {p}, '
    "error = {p}, error_code = {p}, dead_letter = {p}, answered_by = {p}, "
    "prompt_tokens = {p}, completion_tokens = {p}, cost_nano_usd = {p}, finished_at = {p} "
    "WHERE id = {p} AND status = {p}")
SAVE_ROUNDS = (  # a round already stored (its model turn alone) becomes the whole round
    'INSERT INTO "round" (row_id, number, model, prompt_tokens, completion_tokens, messages) '
    "VALUES ({p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT (row_id, number) DO UPDATE SET "
    "model = excluded.model, prompt_tokens = excluded.prompt_tokens, "
    "completion_tokens = excluded.completion_tokens, messages = excluded.messages")
SAVE_WORKFLOW = (
    'INSERT INTO "workflow" (row_id, state) VALUES ({p}, {p}) '
    "ON CONFLICT (row_id) DO UPDATE SET state = excluded.state")
SAVE_WORKFLOW_RESULT = (
    'INSERT INTO "workflow_result" (row_id, step, position, result) VALUES ({p}, {p}, {p}, {p}) '
    "ON CONFLICT (row_id, step, position) DO NOTHING")
INSERT_ATTEMPTS = (
    "INSERT INTO attempt (row_id, model, status_code, error, duration_ms, started_at, "
    "transient) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})")


class SqlBase:
    """The handle every query group (access, jobs, rows, files, webhooks) shares."""

    db: Database

    def write(self) -> AbstractContextManager[Any]:
        """A write transaction, taken the way this backend needs it."""
        raise NotImplementedError

    def sql(self, statement: str) -> str:
        """A raw statement in this backend's parameter style."""
        return statement.format(p=self.db.param)

    def close(self) -> None:
        self.db.close()
