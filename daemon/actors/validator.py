"""Validator: parses a `validating` batch's input in the background.

A batch is created `validating` by a dialect that reads its input later (the
OpenRelay batch API); this actor opens its input file and has the job's dialect turn
it into rows (`parse_input`: record-level problems become failed rows), then queues
the batch, or fails it with the file's `errors` list when the file itself is wrong.
Parsing a 200 MB file takes seconds: it happens here, never on the API's loop
or in the scheduler.

Among nodes, a batch is validated by the node that takes it first
(`Store.claim_validation`); every few seconds (`tick`) each validator takes the
batches a lost node was validating.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
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
from daemon.dialects.spending import budget_problem
from daemon.domain.budget import BUDGET_EXCEEDED
from daemon.domain.every import Every
from daemon.domain.jobs import FAILED, VALIDATING, Job
from daemon.domain.openai_input import FileError, ParsedRecords
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
        if job is None or job.status != VALIDATING or not self.repo.claim_validation(
                seq, node=self.node.id, alive_after=self.node.alive_after(self.clock())):
            return
        parsed = self._parse(job)
        now = self.clock()
        if not parsed.errors:  # the budget check a dialect that reads its rows at submit makes
            problem = budget_problem(self.repo, job.workspace_id, parsed.rows,
                                     prices=self.prices, model=parsed.model,
                                     discount=dialect_of(job).discount(job), now=now,
                                     param="input_file_id")
            if problem is not None:
                parsed = ParsedRecords(errors=[FileError(BUDGET_EXCEEDED, problem.message,
                                                         param="input_file_id")])
        if parsed.errors:
            failed = end_job(self.repo, self.files, seq, FAILED, now=now,
                             error=parsed.errors[0].message,
                             errors=[e.as_dict() for e in parsed.errors])
            if failed is not None:
                self.notifier.job_ended(failed)
            return
        queued = self.repo.accept_validated(seq, parsed.rows, model=parsed.model, now=now)
        if queued is not None:
            self.notifier.job_changed(seq)
            self.scheduler.wake()

    def _parse(self, job: Job) -> ParsedRecords:
        file_id, workspace_id = job.input_file_id or "", job.workspace_id
        record = self.repo.file(file_id, workspace_id=workspace_id)
        if record is None:
            return _unreadable(f"The input file {file_id!r} no longer exists.")
        try:
            with Path(record.path).open("rb") as data:
                check = TargetCheck(allow_private=self.allow_private, resolve=self.resolve)
                workspace = self.repo.workspace_by_id(workspace_id)
                dialect = dialect_of(job)
                return dialect.parse_input(
                    job, data, models=self.models, check_url=check,
                    workflows=workspace is not None and workspace.workflows,
                    max_rows=row_cap(dialect, self.limits))
        except OSError as exc:
            log.warning("input file %s unreadable: %s", file_id, exc)
            return _unreadable(f"The input file {file_id!r} could not be read: {exc.strerror}.")


class ValidatorProxy(ActorProxyOf[Validator]):
    """What the API and the daemon tell the validator."""

    validate = message(Validator.validate)
    tick = message(Validator.tick)


def _unreadable(message: str) -> ParsedRecords:
    return ParsedRecords(errors=[FileError("invalid_file", message, param="input_file_id")])
