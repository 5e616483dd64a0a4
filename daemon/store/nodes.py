"""Nodes and leases: the relayd processes sharing this database, and which of them runs
each pending row.

A node leases a job's rows a chunk at a time (`lease_rows`): pending rows no live
node holds, taken `FOR UPDATE SKIP LOCKED` on PostgreSQL so nodes leasing at once
take different rows without waiting. A lease lives as long as its node's heartbeat
(`beat`) is younger than `lease_s`: renewing every lease is one update of the node's
own row. A stored outcome ends the row's lease; a node that stops gives its leases
back (`leave`); a node that dies loses them when its heartbeat ages past `lease_s`,
and its rows are leasable again. A batch to validate is claimed the same way
(`claim_validation`), and is taken again once its node is lost.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from daemon.domain.cluster import NodeRecord, Share
from daemon.domain.jobs import QUEUED, ROW_PENDING, RUNNING, VALIDATING, Job, RowWork
from daemon.store.models import NodeModel
from daemon.store.records import job_of, job_record
from daemon.store.rows import works
from daemon.store.sql import ADMISSION_ORDER, WORK_COLUMNS, SqlBase, chunks, in_list, padded

# A row anyone may lease: pending, and no live node (beaten after {p}) holds it.
FREE_ROW = ("status = {p} AND (lease_node IS NULL "
            "OR lease_node NOT IN (SELECT id FROM node WHERE heartbeat_at > {p}))")
LEASABLE = 'SELECT id FROM "row" WHERE job_id = {p} AND ' + FREE_ROW + " ORDER BY id LIMIT {p}"
# Raw, as the scheduler reads it at every tick (Peewee took about a millisecond to
# build it): queued jobs and running ones with a free row, in the cluster's order.
JOINABLE_JOBS = (
    "SELECT * FROM job WHERE (status = {p} OR (status = {p} AND EXISTS ("
    'SELECT 1 FROM "row" WHERE job_id = job.seq AND ' + FREE_ROW + "))) "
    "AND paused_at IS NULL AND budget_paused_at IS NULL{excluded}{held} "
    "ORDER BY " + ADMISSION_ORDER + " LIMIT {p}")
# Each lease moves the row's token on: whoever held it before can no longer start it
# or store anything of it (fencing; `fenced`).
JOB_STATUS = "SELECT status FROM job WHERE seq = {p}{lock}"
LEASE = ('UPDATE "row" SET lease_node = {p}, lease_token = lease_token + 1 WHERE id IN ('
         + LEASABLE + f"{{skip_locked}}) RETURNING {WORK_COLUMNS}")
# The same in steps, where there is no RETURNING (or it costs: the SQLite backend's).
LEASE_BY_ID = 'UPDATE "row" SET lease_node = {p}, lease_token = lease_token + 1 WHERE id IN ({ids})'
LEASED = f'SELECT {WORK_COLUMNS} FROM "row" WHERE id IN ({{ids}})'


class NodeQueries(SqlBase):
    """Queries over nodes and row leases."""

    def register_node(self, node: NodeRecord) -> None:
        with self.write():
            self.NodeModel.delete().where(self.NodeModel.id == node.id).execute()
            self.NodeModel.create(id=node.id, address=node.address, version=node.version,
                                  started_at=node.started_at, heartbeat_at=node.heartbeat_at,
                                  stopping=node.stopping, jobs=json.dumps(list(node.jobs)))

    def beat(self, node_id: str, *, now: float, jobs: Collection[int],
             stopping: bool = False) -> bool:
        """Renew a node's heartbeat (and with it every lease it holds); False if its row
        is gone (another node forgot it as long lost): it must register again."""
        with self.write():
            return (self.NodeModel.update(heartbeat_at=now, jobs=json.dumps(sorted(jobs)),
                                          stopping=stopping)
                    .where(self.NodeModel.id == node_id).execute()) == 1

    def leave(self, node_id: str) -> int:
        """A node stops: its leases go back at once and its row goes; the rows released."""
        with self.write():
            released = self._release([node_id])
            self.NodeModel.delete().where(self.NodeModel.id == node_id).execute()
        return released

    def nodes(self) -> list[NodeRecord]:
        return [_node(n) for n in self.NodeModel.select()
                .order_by(self.NodeModel.started_at, self.NodeModel.id)]

    def forget_nodes(self, *, keep: str, before: float | None = None,
                     address: str | None = None) -> int:
        """Drop the rows of other nodes silent since `before` (long lost), or at
        `address` (an earlier process of the node starting there: two cannot listen on
        one address), giving back their leases."""
        with self.write():
            found = self.NodeModel.select(self.NodeModel.id).where(self.NodeModel.id != keep)
            if before is not None:
                found = found.where(self.NodeModel.heartbeat_at < before)
            if address is not None:
                found = found.where(self.NodeModel.address == address)
            gone = [n.id for n in found]
            if gone:
                self._release(gone)
                self.NodeModel.delete().where(self.NodeModel.id.in_(gone)).execute()
        return len(gone)

    def sole_node(self, node_id: str) -> int:
        """This node is the only one (SQLite: one process holds the file's lock,
        store/owner.py): every lease and row of a node before it goes. Returns the
        leases released."""
        with self.write():
            released = (self.RowModel.update(lease_node=None)
                        .where(self.RowModel.lease_node.is_null(False)).execute())
            self.NodeModel.delete().where(self.NodeModel.id != node_id).execute()
        return released

    def lease_rows(self, job: Job, *, node: str, limit: int, alive_after: float,
                   epoch: int = 0) -> list[RowWork]:
        """Lease up to `limit` of a running job's pending rows that no live node (one
        that beat after `alive_after`) holds, lowest ids first, in the node's lease
        `epoch`; [] once the job is not running (it ends, or was cancelled)."""
        with self.write():  # the job shared: an ending waits, other leases do not
            current = self.db.execute_sql(self.sql(JOB_STATUS, lock=self.FOR_SHARE),
                                          (job.seq,)).fetchone()
            if current is None or current[0] != RUNNING:
                return []
            if self.RETURNING:
                leased = self.db.execute_sql(
                    self.sql(LEASE, skip_locked=self.SKIP_LOCKED),
                    (node, job.seq, ROW_PENDING, alive_after, limit)).fetchall()
            else:  # the same in three statements (the transaction holds the database)
                leased = self._lease_in_steps(job.seq, node=node, limit=limit,
                                              alive_after=alive_after)
        return works(self, job, leased, epoch=epoch)

    def _lease_in_steps(self, job_seq: int, *, node: str, limit: int, alive_after: float
                        ) -> list[tuple[int, str, str | None, str, int]]:
        ids = [rid for (rid,) in self.fetch_all(
            self.sql(LEASABLE), (job_seq, ROW_PENDING, alive_after, limit), columns="id")]
        leased = []
        for part in chunks(ids):
            values = padded(part)
            self.db.execute_sql(self.sql(LEASE_BY_ID, ids=in_list(values)), (node, *values))
            leased += self.fetch_all(self.sql(LEASED, ids=in_list(values)), values,
                                     columns=WORK_COLUMNS)
        return leased

    def release_rows(self, job_seq: int, *, node: str, keep: Collection[int] = ()) -> int:
        """Give back a node's leases on one job's pending rows but `keep` (a drain keeps
        the rows still in flight until the process is gone)."""
        with self.write():
            self.hold_job(job_seq)  # the job before its rows, as every writer of both
            return self._release([node], job_seq=job_seq, keep=keep)

    def settle_share(self, job_seq: int, *, node: str, alive_after: float,
                     finishing: bool = True) -> Share:
        """A node is done with a job: its leases on it go back, and in the same
        transaction, under the job's lock, it learns who else is on it. If it leaves
        (`HELD`; or `OPEN` when `finishing` normally: the rows left are for the next
        free slot) the job also leaves the node's list, so the next node to settle sees
        the truth; one that stays to end the job stays listed until it has. Nodes that
        settle at once take turns, so exactly one finds the job no longer `HELD`."""
        with self.write():
            self.hold_job(job_seq)
            self._release([node], job_seq=job_seq)
            share = self._share(job_seq, node=node, alive_after=alive_after)
            if share is Share.HELD or (share is Share.OPEN and finishing):
                self._unlist(node, job_seq)
            return share

    def _unlist(self, node: str, job_seq: int) -> None:
        mine = self.locked(self.NodeModel.select().where(self.NodeModel.id == node)).first()
        if mine is not None and job_seq in (jobs := json.loads(mine.jobs)):
            jobs.remove(job_seq)
            (self.NodeModel.update(jobs=json.dumps(jobs))
             .where(self.NodeModel.id == node).execute())

    def release_strays(self, node: str, *, running: Collection[int]) -> int:
        """Give back a node's leases on jobs it does not run (a supervisor that died
        and whose release failed): else no node would take those rows again."""
        query = (self.RowModel.update(lease_node=None)
                 .where(self.RowModel.lease_node == node,
                        self.RowModel.status == ROW_PENDING))
        if running:
            query = query.where(self.RowModel.job.not_in(list(running)))
        with self.write():
            return query.execute()

    def claim_validation(self, job_seq: int, *, node: str, alive_after: float) -> bool:
        """Take a batch to validate: one still validating that no other live node has
        taken (a lost node's batch is taken again). False if another live node has it."""
        with self.write():
            others = self._live_nodes(alive_after, but=node)
            return (self.JobModel.update(validating_node=node)
                    .where(self.JobModel.seq == job_seq, self.JobModel.status == VALIDATING,
                           self.JobModel.validating_node.is_null()
                           | self.JobModel.validating_node.not_in(others))
                    .execute()) == 1

    def unclaimed_validations(self, *, node: str, alive_after: float) -> list[Job]:
        """Batches validating that no other live node has taken: their node was lost,
        or it is `node` (its validation failed on the way: it tries again)."""
        others = self._live_nodes(alive_after, but=node)
        query = (self.JobModel.select()
                 .where(self.JobModel.status == VALIDATING,
                        self.JobModel.validating_node.is_null()
                        | self.JobModel.validating_node.not_in(others))
                 .order_by(self.JobModel.seq))
        return [job_record(r) for r in query]

    def job_share(self, job_seq: int, *, node: str, alive_after: float) -> Share:
        """Where a job stands for a node that does not run it."""
        return self._share(job_seq, node=node, alive_after=alive_after)

    def _share(self, job_seq: int, *, node: str, alive_after: float) -> Share:
        others = self._live_nodes(alive_after, but=node)
        listing = any(job_seq in json.loads(n.jobs) for n in self.NodeModel.select(
            self.NodeModel.jobs).where(self.NodeModel.id.in_(others)))
        pending = self.RowModel.select(self.RowModel.id).where(
            self.RowModel.job == job_seq, self.RowModel.status == ROW_PENDING)
        if listing or pending.where(self.RowModel.lease_node.in_(others)).exists():
            return Share.HELD
        return Share.OPEN if pending.exists() else Share.DONE

    def joinable_jobs(self, limit: int, *, exclude: Collection[int], alive_after: float,
                      held_workspaces: Collection[int] = ()) -> list[Job]:
        """The next jobs a node with free slots takes, in the cluster's one order
        (`ADMISSION_ORDER`): queued ones, and running ones with pending rows no live
        node holds (a large job spreads over every node; a lost node's work is taken
        over). A paused job is never one of them, nor any job of the `held_workspaces`
        (their budget is spent)."""
        excluded, held = list(exclude), list(held_workspaces)  # exact: NULL fails NOT IN
        found = self.many(
            JOINABLE_JOBS,
            (QUEUED, RUNNING, ROW_PENDING, alive_after, *excluded, *held, limit),
            excluded=f" AND seq NOT IN ({in_list(excluded)})" if excluded else "",
            held=f" AND workspace_id NOT IN ({in_list(held)})" if held else "")
        return [job_of(job) for job in found]


    def _live_nodes(self, alive_after: float, *, but: str | None = None) -> Any:
        """The ids of the nodes alive (beaten after `alive_after`), `but` one, as a
        subquery."""
        query = (self.NodeModel.select(self.NodeModel.id)
                 .where(self.NodeModel.heartbeat_at > alive_after))
        return query if but is None else query.where(self.NodeModel.id != but)

    def _release(self, nodes: Sequence[str], *, job_seq: int | None = None,
                 keep: Collection[int] = ()) -> int:
        """Give back the `nodes`' leases on pending rows (of one job; but `keep`), inside
        the caller's transaction; the rows released."""
        query = (self.RowModel.update(lease_node=None)
                 .where(self.RowModel.lease_node.in_(list(nodes)),
                        self.RowModel.status == ROW_PENDING))
        if job_seq is not None:
            query = query.where(self.RowModel.job == job_seq)
        if keep:
            query = query.where(self.RowModel.id.not_in(list(keep)))
        return int(query.execute())


def _node(n: NodeModel) -> NodeRecord:
    return NodeRecord(id=n.id, address=n.address, version=n.version,
                      started_at=n.started_at, heartbeat_at=n.heartbeat_at,
                      stopping=bool(n.stopping), jobs=tuple(json.loads(n.jobs)))
