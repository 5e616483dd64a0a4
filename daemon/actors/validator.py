"""Validator: parses a `validating` batch's input in the background.

A batch is created `validating` by a dialect that reads its input later (the
OpenRelay batch API); this actor opens its input file and has the job's dialect turn
it into rows (`parse_input`: record-level problems become failed rows) a chunk at a
time, storing each chunk before it reads the next (a million-record file is never in
memory whole), then queues the batch, or fails it with the file's `errors` list when
the file itself is wrong (the ending deletes the rows stored so far). Parsing a
200 MB file takes seconds: it happens here, never on the API's loop or in the
scheduler.

Among nodes, a batch is validated by the node that takes it first
(`Store.claim_validation`); every few seconds (`tick`) each validator takes the
batches a lost node was validating.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import pykka

from daemon.actors.contained import contained
from daemon.actors.ending import end_job
from daemon.actors.membership import Node
from daemon.actors.notifier import NotifierProxy
from daemon.actors.proxies import ActorProxyOf, message
from daemon.actors.scheduler import SchedulerProxy
from daemon.config import LimitsConfig
from daemon.dialects import dialect_of
from daemon.dialects.base import row_cap
from daemon.dialects.spending import least_cost, over_budget
from daemon.domain.budget import BUDGET_EXCEEDED
from daemon.domain.every import Every
from daemon.domain.jobs import FAILED, VALIDATING, Job, RowDraft, Staged
from daemon.domain.openai_input import FileError
from daemon.outbound.policy import Resolver, TargetCheck, system_resolver
from daemon.store.files import FileStore
from daemon.store.interface import Store

log = logging.getLogger("relay.validator")

WATCH_S = 5.0  # how often it looks for batches a lost node was validating


class Validator(pykka.ThreadingActor):
    def __init__(self, *, repo: Store, files: FileStore, scheduler: SchedulerProxy,
                 notifier: NotifierProxy, models: Collection[str], clock: Callable[[], float],
                 allow_private: bool = False, resolve: Resolver = system_resolver,
                 node: Node | None = None, limits: LimitsConfig | None = None,
                 prices: Mapping[str, float] | None = None) -> None:
        super().__init__()
        self.prices = dict(prices or {})  # each model's input price, for the budget check
        self.node = node or Node()
        self.limits = limits or LimitsConfig()
        self.watch = Every(WATCH_S)
        self.repo = repo
        self.files = files
        self.scheduler = scheduler
        self.notifier = notifier
        self.models = frozenset(models)
        self.clock = clock
        self.allow_private = allow_private
        self.resolve = resolve

    @contained
    def tick(self, now: float) -> None:
        """Batches a lost node was validating (or none has taken yet, or whose validation
        here failed on the way) are taken here."""
        if self.watch.due(now):
            for job in self.repo.unclaimed_validations(
                    node=self.node.id, alive_after=self.node.alive_after(now)):
                self.validate(job.seq)

    @contained
    def validate(self, seq: int) -> None:
        job = self.repo.job_by_seq(seq)
        node = self.node.id
        if job is None or job.status != VALIDATING or not self._holds(seq):
            return
        self._clear(seq)  # what a validation cut short (a restart, a lost node) stored
        now = self.clock()
        checked = self._read(job, now=now)
        if checked is None:  # no longer this node's to validate (cancelled, taken over)
            ended = self.repo.job_by_seq(seq)
            if ended is not None and ended.status != VALIDATING:
                self._clear(seq)  # cancelled: its rows go, as its ending would delete them
            return
        now = self.clock()
        if isinstance(checked, Staged):
            if self.repo.accept_validated(seq, checked, node=node, now=now) is not None:
                self.notifier.job_changed(seq)
                self.scheduler.wake()
            return
        if not self._holds(seq):  # taken over meanwhile: its new node decides
            return
        self._clear(seq)
        failed = end_job(self.repo, self.files, seq, FAILED, now=now,
                         error=checked[0].message, errors=[e.as_dict() for e in checked])
        if failed is not None:
            self.notifier.job_ended(failed)

    def _holds(self, seq: int) -> bool:
        """Take the batch's validation, or keep it: False once another live node has it."""
        return self.repo.claim_validation(seq, node=self.node.id,
                                          alive_after=self.node.alive_after(self.clock()))

    def _clear(self, seq: int) -> None:
        """Delete the rows a validation of the batch stored, a write at a time (a
        million of them never hold the database in one transaction)."""
        while self.repo.purge_rows(seq):
            pass

    def _read(self, job: Job, *, now: float) -> Staged | list[FileError] | None:
        """Read the batch's input a chunk at a time, each chunk stored before the next
        is read, so memory stays flat however many records it has: what they add up
        to, or the file's errors (its rows staged so far are deleted with it), or None
        once it is not this node's to validate any more."""
        file_id, workspace_id = job.input_file_id or "", job.workspace_id
        record = self.repo.file(file_id, workspace_id=workspace_id)
        if record is None:
            return _unreadable(f"The input file {file_id!r} no longer exists.")
        budget = self.repo.budget_state(workspace_id, now=now)
        tokens = least = 0
        dialect = dialect_of(job)
        discount = dialect.discount(job)
        try:
            with Path(record.path).open("rb") as data:
                check = TargetCheck(allow_private=self.allow_private, resolve=self.resolve)
                workspace = self.repo.workspace_by_id(workspace_id)
                stream = dialect.parse_input(
                    job, data, models=self.models, check_url=check,
                    workflows=workspace is not None and workspace.workflows,
                    max_rows=row_cap(dialect, self.limits),
                    earlier=_StoredRows(self.repo, job.seq))
                for chunk in stream.chunks():
                    if not self.repo.stage_rows(job.seq, chunk, after=stream.count - len(chunk),
                                                node=self.node.id, now=now):
                        return None
                    if budget is not None:
                        more, cost = least_cost(chunk, prices=self.prices, model=stream.model,
                                                discount=discount)
                        tokens, least = tokens + more, least + cost
        except OSError as exc:
            log.warning("input file %s unreadable: %s", file_id, exc)
            return _unreadable(f"The input file {file_id!r} could not be read: {exc.strerror}.")
        if stream.errors:
            return stream.errors
        problem = None if budget is None else over_budget(
            budget, tokens=tokens, least=least, now=now, param="input_file_id")
        if problem is not None:  # the check a dialect that reads its rows at submit makes
            return [FileError(BUDGET_EXCEEDED, problem.message, param="input_file_id")]
        return Staged(total=stream.count, failed=stream.failed,
                      refused_last=stream.refused_last, model=stream.model)


class _StoredRows:
    """The chunks a validation has stored, as its stream's `Earlier`: where a custom_id
    used again was first is read from the job's rows (an index lookup per chunk)."""

    def __init__(self, repo: Store, seq: int) -> None:
        self.repo, self.seq = repo, seq

    def positions(self, custom_ids: Collection[str]) -> Mapping[str, int]:
        return self.repo.staged_positions(self.seq, custom_ids)

    def add(self, rows: Sequence[RowDraft], *, start: int) -> None:
        pass  # stored by the validator before the next chunk is read


class ValidatorProxy(ActorProxyOf[Validator]):
    """What the API and the daemon tell the validator."""

    validate = message(Validator.validate)
    tick = message(Validator.tick)


def _unreadable(message: str) -> list[FileError]:
    return [FileError("invalid_file", message, param="input_file_id")]
