"""`GET /v1/nodes`: the relayd processes sharing this database (one on SQLite), their
health as this node sees it, and the jobs each runs, of the caller's workspace only:
a node's list holds every workspace's jobs, and another workspace's are never named."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from daemon.api import respond
from daemon.api.context import SERVICES
from daemon.api.middleware import WORKSPACE
from daemon.domain.cluster import NodeRecord
from daemon.domain.errors import no_batch_access
from daemon.domain.jobs import Job
from daemon.domain.stamps import iso
from daemon.store.interface import Store, WorkspaceRecord


async def nodes(request: web.Request) -> web.Response:
    workspace: WorkspaceRecord = request[WORKSPACE]
    if not workspace.batch_access:
        raise no_batch_access()
    services = request.app[SERVICES]
    found, jobs = await asyncio.to_thread(read, services.repo, workspace.id)
    now = services.clock()  # after the read: no heartbeat is younger than the answer
    data = [render(node, jobs, now=now, lease_s=services.config.cluster.lease_s,
                   answering=services.node.id) for node in found]
    return respond.json({"object": "list", "data": data})


def read(repo: Store, workspace_id: int) -> tuple[list[NodeRecord], dict[int, Job]]:
    """Every node, oldest first, and the workspace's own jobs among those they list."""
    found = repo.nodes()
    listed = sorted({seq for node in found for seq in node.jobs})
    jobs = (repo.job_by_seq(seq) for seq in listed)
    return found, {job.seq: job for job in jobs
                   if job is not None and job.workspace_id == workspace_id}


def render(node: NodeRecord, jobs: Mapping[int, Job], *, now: float, lease_s: float,
           answering: str) -> dict[str, Any]:
    """One node; `jobs` are the caller's, by seq (a seq not in it is not theirs)."""
    return {
        "object": "node",
        "id": node.id,
        "address": node.address,
        "version": node.version,
        "started_at": iso(node.started_at),
        "heartbeat_at": iso(node.heartbeat_at),
        "seconds_since_heartbeat": round(max(now - node.heartbeat_at, 0.0), 1),
        "health": node.health(now, lease_s),
        "self": node.id == answering,
        "jobs": [job_ref(jobs[seq]) for seq in node.jobs if seq in jobs],
    }


def job_ref(job: Job) -> dict[str, Any]:
    """A job as a node lists it: its internal status, as `/v1/events` tells it."""
    return {"id": job.id, "status": job.status, "name": job.name, "dialect": job.dialect}
