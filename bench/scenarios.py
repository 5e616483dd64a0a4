"""The scenarios. Each runs its repetitions and adds one sample per run to its figures.
Which processes serve which scenario: `bench/harness.py`; the limited-upstream
scenarios (rate-limit, rate-learned, capacity): `bench/limited.py`; several nodes on
PostgreSQL (cluster): `bench/cluster.py`.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import httpx

from bench import (
    cluster,
    jobs,
    limited,
    many_jobs,
    profile,
    reference,
    retention,
    scale,
    validation,
)
from bench.harness import CONCURRENCY, LATENCY_MS, Bench, job_timeout, side_by_side
from bench.jobs import (
    FLOW_REQUESTS,
    FLOW_STEPS,
    TOOL_ROUNDS,
    job_body,
    prompts,
    tool_job_body,
    workflow_file,
)
from bench.procs import BenchError, Relayd, counting_switches
from bench.report import Figure, at_least, at_most
from daemon.testing import wait_until

SUBMITTERS = 16  # threads submitting the one-row jobs
STATUS_PAUSE_S = 0.01  # between two status reads
RESTART_IDEAL_S = 4.0  # the restart job takes at least this long at full speed


def figures() -> dict[str, Figure]:
    """Every figure, in table order."""
    ideal = f"rows/s ÷ ({CONCURRENCY} ÷ {LATENCY_MS / 1000:g} s)"
    listed = [
        Figure("latency_ratio", "latency", f"Relay {ideal}", "", at_least(0.97)),
        Figure("latency_reference_ratio", "latency", f"reference {ideal}", ""),
        Figure("latency_vs_reference", "latency", "Relay rows/s ÷ reference rows/s", "",
               at_least(0.98)),
        Figure("latency_rows_per_s", "latency", "Relay rows/s", "rows/s"),
        Figure("overhead_ratio", "overhead", "Relay rows/s ÷ reference rows/s", "",
               at_least(0.65)),
        Figure("overhead_rows_per_s", "overhead", "Relay rows/s", "rows/s"),
        Figure("simulator_ceiling_rows_per_s", "overhead",
               "simulator ceiling (reference, 0 ms)", "rows/s"),
        Figure("overhead_cpu_s_per_1k_rows", "overhead", "relayd CPU per 1,000 rows", "s"),
        Figure("reference_cpu_s_per_1k_rows", "overhead", "reference CPU per 1,000 rows",
               "s"),
        Figure("overhead_cpu_vs_reference", "overhead",
               "relayd CPU per row ÷ reference CPU per row", "", at_most(1.6)),
        Figure("overhead_relayd_switches_per_row", "overhead",
               "relayd context switches per row (all threads)", ""),
        Figure("overhead_reference_switches_per_row", "overhead",
               "reference context switches per row", ""),
        Figure("overhead_sim_preempted_relay", "overhead",
               "simulator preempted per row, Relay's job", ""),
        Figure("overhead_sim_preempted_reference", "overhead",
               "simulator preempted per row, the reference's run", ""),
        Figure("partial_read_ratio", "partial-read",
               "rows/s with a partial-results reader ÷ rows/s without", "", at_least(0.95)),
        Figure("partial_read_cpu_ratio", "partial-read",
               "relayd CPU with the reader ÷ without", ""),
        Figure("partial_read_rows_per_s", "partial-read",
               "rows/s with a reader polling every second", "rows/s"),
        Figure("submit_s", "submit", "seconds to the 200", "s", at_most(2.0)),
        Figure("peak_rss_mb", "rss", "relayd peak RSS (VmHWM)", "MB", at_most(250)),
        Figure("status_p50_ms", "status", "GET /v1/batches/{id} p50", "ms"),
        Figure("status_p99_ms", "status", "GET /v1/batches/{id} p99", "ms", at_most(20)),
        Figure("small_jobs_per_s", "small-jobs", "one-row jobs completed per second",
               "jobs/s"),
        Figure("restart_first_request_s", "restart", "start → first upstream request", "s",
               at_most(2.0)),
        Figure("tools_records_per_s", "tools", f"tool records/s ({TOOL_ROUNDS} rounds each)",
               "records/s"),
        Figure("tools_cpu_ms_per_round", "tools", "relayd CPU per round", "ms"),
        Figure("tools_cpu_ms_per_row", "tools", "relayd CPU per plain row", "ms"),
        Figure("tools_round_vs_row", "tools", "CPU per round ÷ CPU per plain row", "",
               at_most(2.0)),
        Figure("workflow_records_per_s", "workflows",
               f"workflow records/s ({FLOW_STEPS} steps, {FLOW_REQUESTS} requests)",
               "records/s"),
        Figure("workflow_cpu_ms_per_step", "workflows",
               "relayd CPU per step, beyond its requests", "ms"),
        *client_figures(),
        *validation.figures(),
        *limited.figures(),
        *cluster.figures(),
        *retention.figures(),
        *many_jobs.figures(),
        *scale.figures(),
    ]
    return {f.name: f for f in listed}


# --- the scenarios --------------------------------------------------------------------


def latency(b: Bench) -> None:
    """Upstream answers in 100 ms: can Relay keep 32 rows in flight all the time?"""
    n, sim, client = b.sizes.latency_rows, b.sim(LATENCY_MS), b.shared().client()
    ideal = CONCURRENCY / (LATENCY_MS / 1000)
    for i in range(b.runs["latency"]):
        body = job_body("slow", prompts(n, f"lat{i}"), tag=f"lat{i}")
        relay_s, ref_s = side_by_side(
            i, sim, partial(jobs.timed_job, client, body, timeout=job_timeout(n)),
            partial(reference.run, sim.base_url, prompts(n, f"latref{i}"),
                    concurrency=CONCURRENCY))
        b.figures["latency_ratio"].add(n / relay_s / ideal)
        b.figures["latency_reference_ratio"].add(n / ref_s / ideal)
        b.figures["latency_vs_reference"].add(ref_s / relay_s)
        b.figures["latency_rows_per_s"].add(n / relay_s)
        b.say(f"[latency] run {i + 1}: {n} rows, Relay {relay_s:.2f} s, "
              f"reference {ref_s:.2f} s (ideal {n / ideal:.2f} s)")


def overhead(b: Bench) -> None:
    """Upstream answers at once: how close does Relay get to a bare client?"""
    n, sim, daemon = b.sizes.overhead_rows, b.sim(0), b.shared()
    client = daemon.client()
    for i in range(b.runs["overhead"]):
        body = job_body("fast", prompts(n, f"ovh{i}"), tag=f"ovh{i}")
        cpu: list[float] = []

        def relay(body: bytes = body, cpu: list[float] = cpu) -> float:
            before = daemon.cpu_seconds()
            with counting_switches(daemon.pid) as switched, \
                    counting_switches(sim.proc.pid, every_s=None) as upstream:
                seconds = jobs.timed_job(client, body, timeout=job_timeout(n))
            cpu.append(daemon.cpu_seconds() - before)
            b.figures["overhead_relayd_switches_per_row"].add(
                (switched.voluntary + switched.involuntary) / n)
            b.figures["overhead_sim_preempted_relay"].add(upstream.involuntary / n)
            return seconds

        ref_cpu_s: list[float] = []

        def ref(i: int = i, cpu: list[float] = ref_cpu_s) -> float:
            before = time.process_time()  # the reference runs here, in the bench process
            was = resource.getrusage(resource.RUSAGE_SELF)
            with counting_switches(sim.proc.pid, every_s=None) as upstream:
                seconds = reference.run(sim.base_url, prompts(n, f"ovhref{i}"),
                                        concurrency=CONCURRENCY)
            now = resource.getrusage(resource.RUSAGE_SELF)
            cpu.append(time.process_time() - before)
            b.figures["overhead_reference_switches_per_row"].add(
                (now.ru_nvcsw - was.ru_nvcsw + now.ru_nivcsw - was.ru_nivcsw) / n)
            b.figures["overhead_sim_preempted_reference"].add(upstream.involuntary / n)
            return seconds

        relay_s, ref_s = side_by_side(i, sim, relay, ref)
        relay_cpu, ref_cpu = cpu[0], ref_cpu_s[0]
        b.figures["overhead_ratio"].add(ref_s / relay_s)
        b.figures["overhead_rows_per_s"].add(n / relay_s)
        b.figures["simulator_ceiling_rows_per_s"].add(n / ref_s)
        b.figures["overhead_cpu_s_per_1k_rows"].add(relay_cpu / n * 1000)
        b.figures["reference_cpu_s_per_1k_rows"].add(ref_cpu / n * 1000)
        b.figures["overhead_cpu_vs_reference"].add(relay_cpu / ref_cpu)
        b.say(f"[overhead] run {i + 1}: {n} rows, Relay {relay_s:.2f} s "
              f"({relay_cpu:.2f} CPU s), reference {ref_s:.2f} s ({ref_cpu:.2f} CPU s)")
    if b.profile_dir is not None:
        profiled_overhead(b, n)


def partial_read(b: Bench) -> None:
    """The overhead job, alone and with a reader of its partial results polling every
    second (`?partial=true`, following `next_cursor`), alternating: reading results
    while a job runs must not slow it. The reader must meet every row exactly once."""
    n, daemon = b.sizes.overhead_rows, b.shared()
    client = daemon.client()
    b.sim(0)
    for i in range(b.runs["partial-read"]):
        def without(i: int = i) -> float:
            return jobs.timed_job(client, job_body("fast", prompts(n, f"pra{i}"),
                                                   tag=f"pra{i}"), timeout=job_timeout(n))

        def read_along(i: int = i) -> float:
            job = jobs.submit(client, job_body("fast", prompts(n, f"prr{i}"), tag=f"prr{i}"))
            started = time.perf_counter()
            with ThreadPoolExecutor(1) as pool:
                seen = pool.submit(follow_partial, daemon.client(), job["id"])
                ended, _ = jobs.wait_end(client, job["id"], timeout=job_timeout(n))
                ids = seen.result(timeout=job_timeout(n))
            if len(ids) != n or len(set(ids)) != n:
                raise BenchError(f"[partial-read] the reader saw {len(ids)} rows "
                                 f"({len(set(ids))} distinct) of {n}")
            return ended - started

        first, second = (without, read_along) if i % 2 == 0 else (read_along, without)
        times, cpu = {}, {}
        for run in (first, second):  # in turn, the order alternating
            before = daemon.cpu_seconds()
            times[run] = run()
            cpu[run] = daemon.cpu_seconds() - before
        alone, read = times[without], times[read_along]
        b.figures["partial_read_cpu_ratio"].add(cpu[read_along] / cpu[without])
        b.figures["partial_read_ratio"].add(alone / read)
        b.figures["partial_read_rows_per_s"].add(n / read)
        b.say(f"[partial-read] run {i + 1}: {n} rows, alone {alone:.2f} s, with a reader "
              f"{read:.2f} s")


def follow_partial(client: httpx.Client, job_id: str, every_s: float = 1.0) -> list[str]:
    """The custom_ids of a job's rows as a poller of its partial results meets them."""
    seen: list[str] = []
    cursor = ""
    while True:
        page = client.get(f"/v1/batches/{job_id}/results", params={
            "partial": "true", "cursor": cursor, "limit": 10_000}).raise_for_status().json()
        seen += [r["custom_id"] for r in page["data"]]
        cursor = page["next_cursor"]
        if page["has_more"]:
            continue
        if page["status"] in ("completed", "failed", "canceled", "expired"):
            return seen
        time.sleep(every_s)


def profiled_overhead(b: Bench, n: int) -> None:
    """One more overhead job under py-spy; its timing is not a sample of any figure."""
    daemon = b.shared()
    body = job_body("fast", prompts(n, "prof"), tag="prof")
    assert b.profile_dir is not None
    with profile.recording(daemon.pid, b.profile_dir / "overhead") as paths:
        seconds = jobs.timed_job(daemon.client(), body, timeout=job_timeout(n) * 3)
    b.say(f"[overhead] profiled run: {n} rows in {seconds:.2f} s (not counted); "
          f"wrote {', '.join(str(p) for p in paths)}")
    b.say(profile.summary(paths[-1]))


def status(b: Bench) -> None:
    """Status reads while a job runs: the API must stay quick under load."""
    n, daemon = b.sizes.status_rows, b.shared()
    submitter, reader = daemon.client(), daemon.client(pool=1)
    for i in range(b.runs["status"]):
        job = jobs.submit(submitter, job_body("fast", prompts(n, f"st{i}"), tag=f"st{i}"))
        took = read_until_end(reader, job["id"], timeout=job_timeout(n))
        p50, p99 = jobs.percentile(took, 50), jobs.percentile(took, 99)
        b.figures["status_p50_ms"].add(p50)
        b.figures["status_p99_ms"].add(p99)
        b.say(f"[status] run {i + 1}: {len(took)} reads during a {n}-row job, "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(took):.1f} ms")


def read_until_end(client: httpx.Client, job_id: str, *, timeout: float) -> list[float]:
    """Milliseconds of each `GET /v1/batches/{id}`, one after another, until the end."""
    took: list[float] = []
    deadline = time.perf_counter() + timeout
    while True:
        started = time.perf_counter()
        job = jobs.status(client, job_id)
        took.append((time.perf_counter() - started) * 1000)
        if job["status"] in jobs.ENDED:
            jobs.check_completed(job)
            return took
        if started > deadline:
            raise BenchError(f"status job still {job['status']} after {timeout:g}s")
        time.sleep(STATUS_PAUSE_S)


def small_jobs(b: Bench) -> None:
    """Many one-row jobs at once: the cost of a job's life (admit, start, finalize)."""
    n, daemon = b.sizes.small_jobs, b.shared()
    client = daemon.client(pool=SUBMITTERS)
    for i in range(b.runs["small-jobs"]):
        bodies = [job_body("fast", [f"Classify: fine product sj{i}-{k}"], tag=f"sj{i}-{k}")
                  for k in range(n)]
        started = time.perf_counter()
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            ids = [job["id"] for job in pool.map(lambda body: jobs.submit(client, body),
                                                 bodies)]
        wait_until(lambda: nothing_left(client), timeout=job_timeout(n * 10),
                   every=jobs.POLL_S, message="all one-row jobs to end")
        seconds = time.perf_counter() - started
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            for job in pool.map(lambda job_id: jobs.status(client, job_id), ids):
                jobs.check_completed(job)
        b.figures["small_jobs_per_s"].add(n / seconds)
        b.say(f"[small-jobs] run {i + 1}: {n} one-row jobs in {seconds:.2f} s")


def nothing_left(client: httpx.Client) -> bool:
    """No job of the workspace (of either dialect) is queued or running."""
    return all(not client.get("/v1/batches", params={"status": s, "limit": 1,
                                                     "dialect": "all"}).json()["data"]
               for s in ("queued", "running"))


def submit(b: Bench) -> None:
    """Submit one big job: the 200 must come back fast (parse, check, store)."""
    n = b.sizes.submit_rows
    for i in range(b.runs["submit"]):
        with b.fresh({"fast": b.sim(0)}) as daemon:
            client = daemon.client()
            warm = jobs.submit(client, job_body("fast", ["Classify: warm up"], tag="warm"))
            jobs.wait_end(client, warm["id"], timeout=30)
            body = job_body("fast", prompts(n, f"sub{i}"), tag=f"sub{i}")
            started = time.perf_counter()
            jobs.submit(client, body)
            seconds = time.perf_counter() - started
        b.figures["submit_s"].add(seconds)
        b.say(f"[submit] run {i + 1}: {n} rows ({len(body) / 1e6:.1f} MB) → 200 in "
              f"{seconds:.2f} s")


def rss(b: Bench) -> None:
    """Run one big job in a fresh daemon and read its lifetime peak RSS."""
    n = b.sizes.rss_rows
    for i in range(b.runs["rss"]):
        with b.fresh({"fast": b.sim(0)}) as daemon:
            client = daemon.client()
            seconds = jobs.timed_job(client, job_body("fast", prompts(n, f"rss{i}"),
                                                      tag=f"rss{i}"), timeout=job_timeout(n))
            peak = daemon.peak_rss_mb()
        b.figures["peak_rss_mb"].add(peak)
        b.say(f"[rss] run {i + 1}: {n}-row job in {seconds:.1f} s, peak RSS {peak:.0f} MB")


def restart(b: Bench) -> None:
    """SIGKILL relayd half-way through a big job; time the restart to the first request."""
    n = b.sizes.restart_rows
    sim = b.sim(restart_latency_ms(n))
    for i in range(b.runs["restart"]):
        daemon = b.daemon({"fast": sim}).start()
        try:
            done = kill_half_way(daemon, n, tag=f"rst{i}")
            time.sleep(0.2)  # let requests already on the wire land before the reset
            sim.reset()
            daemon.spawn()
            wait_until(lambda: sim.stats()["requests"] > 0, timeout=30, every=0.01,
                       message="a request after the restart")
            first = min(r["at"] for r in sim.requests() if r["at"] >= daemon.started_at)
        finally:
            daemon.kill()
            daemon.stop()
        seconds = first - daemon.started_at
        b.figures["restart_first_request_s"].add(seconds)
        b.say(f"[restart] run {i + 1}: killed at {done}/{n} rows; first upstream request "
              f"{seconds:.2f} s after the new process started")


def kill_half_way(daemon: Relayd, n: int, *, tag: str) -> int:
    client = daemon.client()
    job = jobs.submit(client, job_body("fast", prompts(n, tag), tag=tag))
    deadline = time.monotonic() + job_timeout(n)
    while (seen := jobs.status(client, job["id"]))["completed"] < n / 2:
        if seen["status"] in jobs.ENDED or time.monotonic() > deadline:
            raise BenchError(f"restart job {seen['status']} at {seen['completed']}/{n}")
        time.sleep(0.02)
    daemon.kill()
    return int(seen["completed"])


def tools(b: Bench) -> None:
    """Tool-calling records, 2 rounds each, the HTTP executor on loopback: what a round
    (one model call, one executor call, its stored turns) costs next to a plain row."""
    n, sim, daemon = b.sizes.tool_records, b.sim(0), b.shared()
    client = daemon.client()
    for i in range(b.runs["tools"]):
        plain = job_body("fast", prompts(n, f"row{i}"), tag=f"row{i}")
        tooled = tool_job_body("fast", prompts(n, f"tool{i}"), tag=f"tool{i}",
                               executor=sim.tools_url)
        row_cpu, _ = cpu_of(daemon, partial(
            jobs.timed_job, client, plain, timeout=job_timeout(n)))
        tool_cpu, tool_s = cpu_of(daemon, partial(
            jobs.timed_job, client, tooled, timeout=job_timeout(n * (TOOL_ROUNDS + 1))))
        per_row = row_cpu / n
        per_round = (tool_cpu / n - per_row) / TOOL_ROUNDS  # a record = its rounds + a row
        b.figures["tools_records_per_s"].add(n / tool_s)
        b.figures["tools_cpu_ms_per_round"].add(per_round * 1000)
        b.figures["tools_cpu_ms_per_row"].add(per_row * 1000)
        b.figures["tools_round_vs_row"].add(per_round / per_row)
        b.say(f"[tools] run {i + 1}: {n} records in {tool_s:.2f} s ({tool_cpu:.2f} CPU s); "
              f"{n} plain rows {row_cpu:.2f} CPU s; a round {per_round * 1000:.3f} ms, "
              f"a row {per_row * 1000:.3f} ms")


def workflows(b: Bench) -> None:
    """Workflow records on the simulator's map-reduce callback (2 steps, fan-out 4): a
    step's own cost (its callback event, its stored state) beyond its requests'."""
    n, sim, daemon = b.sizes.workflow_records, b.sim(0), b.shared()
    client = daemon.client()
    for i in range(b.runs["workflows"]):
        plain = job_body("fast", prompts(n * FLOW_REQUESTS, f"wrow{i}"), tag=f"wrow{i}")
        data = workflow_file("fast", n, tag=f"flow{i}", callback=sim.workflow_url)
        row_cpu, _ = cpu_of(daemon, partial(
            jobs.timed_job, client, plain, timeout=job_timeout(n * FLOW_REQUESTS)))
        flow_cpu, flow_s = cpu_of(daemon, partial(
            jobs.timed_batch, client, data, timeout=job_timeout(n * FLOW_REQUESTS * 2)))
        per_step = (flow_cpu - row_cpu) / n / FLOW_STEPS  # beyond the same requests as rows
        b.figures["workflow_records_per_s"].add(n / flow_s)
        b.figures["workflow_cpu_ms_per_step"].add(per_step * 1000)
        b.say(f"[workflows] run {i + 1}: {n} records in {flow_s:.2f} s ({flow_cpu:.2f} CPU s);"
              f" their {n * FLOW_REQUESTS} requests as rows {row_cpu:.2f} CPU s; a step "
              f"{per_step * 1000:.3f} ms beyond its requests")


def cpu_of(daemon: Relayd, timed: Callable[[], float]) -> tuple[float, float]:
    """relayd's CPU seconds over `timed()`, and what `timed()` returned."""
    before = daemon.cpu_seconds()
    seconds = timed()
    return daemon.cpu_seconds() - before, seconds


# --- the upstream clients ([gateway] transport) side by side ---------------------------

CLIENTS = ("aiohttp", "pyreqwest")  # the second is compared with the first


def client_figures() -> list[Figure]:
    per_client = [fig for name in CLIENTS for fig in (
        Figure(f"clients_{name}_rows_per_s", "clients", f"{name}: Relay rows/s", "rows/s"),
        Figure(f"clients_{name}_cpu_s_per_1k_rows", "clients",
               f"{name}: relayd CPU per 1,000 rows", "s"))]
    new, old = CLIENTS[1], CLIENTS[0]
    return [*per_client,
            Figure("clients_rows_ratio", "clients", f"rows/s, {new} ÷ {old}", ""),
            Figure("clients_cpu_ratio", "clients", f"relayd CPU per row, {new} ÷ {old}", "")]


def clients(b: Bench) -> None:
    """The overhead job through one relayd per upstream client, on the same zero-latency
    simulator, one after the other (the order alternating between runs)."""
    n, sim = b.sizes.overhead_rows, b.sim(0)
    daemons = {name: b.daemon({"fast": sim}, transport=name).start() for name in CLIENTS}
    for i in range(b.runs["clients"]):
        took: dict[str, tuple[float, float]] = {}  # CPU seconds, wall seconds
        for name in CLIENTS if i % 2 == 0 else CLIENTS[::-1]:
            body = job_body("fast", prompts(n, f"cl{i}{name}"), tag=f"cl{i}{name}")
            client = daemons[name].client()
            sim.reset()
            took[name] = cpu_of(daemons[name], partial(
                jobs.timed_job, client, body, timeout=job_timeout(n)))
        for name, (cpu, seconds) in took.items():
            b.figures[f"clients_{name}_rows_per_s"].add(n / seconds)
            b.figures[f"clients_{name}_cpu_s_per_1k_rows"].add(cpu / n * 1000)
        (old_cpu, old_s), (new_cpu, new_s) = took[CLIENTS[0]], took[CLIENTS[1]]
        b.figures["clients_rows_ratio"].add(old_s / new_s)
        b.figures["clients_cpu_ratio"].add(new_cpu / old_cpu)
        b.say(f"[clients] run {i + 1}: {n} rows, " + ", ".join(
            f"{name} {s:.2f} s ({cpu:.2f} CPU s)" for name, (cpu, s) in took.items()))


SCENARIOS: dict[str, Callable[[Bench], None]] = {
    "latency": latency,
    "overhead": overhead,
    "partial-read": partial_read,
    "status": status,
    "small-jobs": small_jobs,
    "submit": submit,
    "rss": rss,
    "restart": restart,
    "tools": tools,
    "workflows": workflows,
    "clients": clients,
    "validation": validation.validation,
    "rate-limit": limited.rate_limit,
    "rate-learned": limited.rate_learned,
    "capacity": limited.capacity,
    "cluster": cluster.cluster,
    "retention": retention.retention,
    "many-jobs": many_jobs.many_jobs,
    "scale": scale.scale,
}
ON_REQUEST = frozenset({"scale"})  # minutes long: run with `--only scale`, not by default


def restart_latency_ms(n: int) -> float:
    """Slow enough that the job cannot end before the kill, even at tiny sizes."""
    return max(10.0, math.ceil(RESTART_IDEAL_S * CONCURRENCY / n * 1000))
