"""The limited upstreams: a provider's rate limit and a loaded server's capacity.

- rate-limit: a simulator with `--rpm` (100 ms latency), Relay's model with the same
  `rpm`, side by side with the fixed-pacing reference (`fixed_pacing.py`) at that rpm.
- rate-learned: the same simulator, Relay's model without `rpm` (learned from the
  `x-ratelimit-*` headers); a fresh daemon per run, so every run learns it.
- capacity: `--capacity 16` at 100 ms, Relay (`max_concurrency` 64, adaptive) side by
  side with the bare reference 16 at once; a fresh daemon per run, so every run learns
  its concurrency.

429s are counted at the simulator (`/_sim/stats`, and `/_sim/requests` for when they
came), which forgets everything before each timed run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench import fixed_pacing, jobs, reference
from bench.harness import LATENCY_MS, Bench, job_timeout, side_by_side
from bench.jobs import job_body, prompts
from bench.procs import Simulator
from bench.report import Figure, at_least, at_most

CAPACITY = 16  # requests the capacity simulator serves at once; the reference's concurrency
EARLY_S = 1.0  # capacity: 429s this soon after the first request (learning) are not counted


@dataclass(frozen=True)
class Tally:
    """One timed run and what the upstream answered meanwhile."""

    seconds: float
    calls: int
    limited: int  # answered 429
    late_limited_pct: float  # % of the calls after the first `EARLY_S` answered 429

    @classmethod
    def of(cls, seconds: float, log: Sequence[Mapping[str, Any]]) -> Tally:
        """From the simulator's request log (`/_sim/requests`: `status`, `at`)."""
        statuses = [r["status"] for r in log]
        return cls(seconds, len(log), statuses.count(429), late_limited_pct(log))

    @property
    def limited_pct(self) -> float:
        return percent(self.limited, self.calls)


def percent(part: int, whole: int) -> float:
    return 100 * part / whole if whole else 0.0


def ideal_s(rows: int, rpm: int) -> float:
    """The fastest `rows` go at `rpm`: rows ÷ limit, in seconds."""
    return rows / rpm * 60


def late_limited_pct(log: Sequence[Mapping[str, Any]], *, after_s: float = EARLY_S) -> float:
    """Of the calls that arrived `after_s` or more after the first, the % answered 429
    (0 when none did)."""
    if not log:
        return 0.0
    late_from = min(r["at"] for r in log) + after_s
    late = [r["status"] for r in log if r["at"] >= late_from]
    return percent(late.count(429), len(late))


def tally(sim: Simulator, timed: Callable[[], float]) -> Tally:
    """Time `timed()`, then read what the simulator answered since its last reset."""
    seconds = timed()
    return Tally.of(seconds, sim.requests())


def figures() -> list[Figure]:
    ideal = "wall ÷ (rows ÷ rpm)"
    share = "share of upstream calls answered 429"
    return [
        Figure("rate_limit_ratio", "rate-limit", f"Relay {ideal}", "", at_most(1.05)),
        Figure("rate_limit_429_pct", "rate-limit", f"Relay: {share}", "%", at_most(1)),
        Figure("rate_limit_reference_ratio", "rate-limit", f"fixed-pacing reference {ideal}",
               ""),
        Figure("rate_limit_reference_429_pct", "rate-limit", f"fixed-pacing reference: {share}",
               "%"),
        Figure("rate_limit_vs_reference", "rate-limit",
               "Relay wall ÷ fixed-pacing reference wall", "", at_most(1.0)),
        Figure("rate_learned_ratio", "rate-learned", f"Relay, no rpm set, {ideal}", "",
               at_most(1.3)),
        Figure("rate_learned_429_pct", "rate-learned", f"Relay, no rpm set: {share}", "%",
               at_most(5)),
        Figure("capacity_vs_reference", "capacity",
               f"Relay rows/s ÷ reference rows/s ({CAPACITY} at once)", "", at_least(0.9)),
        Figure("capacity_late_429_pct", "capacity",
               f"Relay: {share}, after the first {EARLY_S:g} s", "%", at_most(2)),
        Figure("capacity_429_pct", "capacity", f"Relay: {share}, all", "%"),
        Figure("capacity_rows_per_s", "capacity", "Relay rows/s", "rows/s"),
    ]


def rate_sim(b: Bench) -> Simulator:
    return b.sim(LATENCY_MS, "--rpm", str(b.sizes.rate_rpm))


def rated_timeout(rows: int, rpm: int) -> float:
    """Generous: three times the ideal, and a minute."""
    return 60 + 3 * ideal_s(rows, rpm)


# --- the scenarios ----------------------------------------------------------------------


def rate_limit(b: Bench) -> None:
    """Relay paced to the upstream's rpm, and the fixed-pacing reference at that rpm."""
    n, rpm, sim = b.sizes.rate_rows, b.sizes.rate_rpm, rate_sim(b)
    ideal = ideal_s(n, rpm)
    with b.fresh({"paced": sim}, keys={"paced": {"rpm": rpm}}) as daemon:
        client = daemon.client()
        for i in range(b.runs["rate-limit"]):
            body = job_body("paced", prompts(n, f"rl{i}"), tag=f"rl{i}")
            relay, ref = side_by_side(
                i, sim,
                partial(tally, sim, partial(jobs.timed_job, client, body,
                                            timeout=rated_timeout(n, rpm))),
                partial(tally, sim, partial(fixed_pacing.run, sim.base_url,
                                            prompts(n, f"rlref{i}"), rpm=rpm)))
            b.figures["rate_limit_ratio"].add(relay.seconds / ideal)
            b.figures["rate_limit_429_pct"].add(relay.limited_pct)
            b.figures["rate_limit_reference_ratio"].add(ref.seconds / ideal)
            b.figures["rate_limit_reference_429_pct"].add(ref.limited_pct)
            b.figures["rate_limit_vs_reference"].add(relay.seconds / ref.seconds)
            b.say(f"[rate-limit] run {i + 1}: {n} rows at {rpm} rpm (ideal {ideal:.1f} s), "
                  f"Relay {relay.seconds:.2f} s ({relay.limited}/{relay.calls} calls 429), "
                  f"fixed pacing {ref.seconds:.2f} s ({ref.limited}/{ref.calls} 429)")


def rate_learned(b: Bench) -> None:
    """Relay without `rpm` on the same upstream: it paces by the headers' limit."""
    n, rpm, sim = b.sizes.rate_rows, b.sizes.rate_rpm, rate_sim(b)
    ideal = ideal_s(n, rpm)
    for i in range(b.runs["rate-learned"]):
        body = job_body("learned", prompts(n, f"rn{i}"), tag=f"rn{i}")
        with b.fresh({"learned": sim}) as daemon:
            sim.reset()
            relay = tally(sim, partial(jobs.timed_job, daemon.client(), body,
                                       timeout=rated_timeout(n, rpm)))
        b.figures["rate_learned_ratio"].add(relay.seconds / ideal)
        b.figures["rate_learned_429_pct"].add(relay.limited_pct)
        b.say(f"[rate-learned] run {i + 1}: {n} rows at {rpm} rpm (ideal {ideal:.1f} s), "
              f"Relay {relay.seconds:.2f} s ({relay.limited}/{relay.calls} calls 429)")


def capacity(b: Bench) -> None:
    """Relay (up to 64 at once) on a server that takes 16, and the bare reference at 16."""
    n, sim = b.sizes.capacity_rows, b.sim(LATENCY_MS, "--capacity", str(CAPACITY))
    for i in range(b.runs["capacity"]):
        body = job_body("capped", prompts(n, f"cap{i}"), tag=f"cap{i}")
        with b.fresh({"capped": sim}) as daemon:
            relay, ref = side_by_side(
                i, sim,
                partial(tally, sim, partial(jobs.timed_job, daemon.client(), body,
                                            timeout=job_timeout(n))),
                partial(tally, sim, partial(reference.run, sim.base_url,
                                            prompts(n, f"capref{i}"), concurrency=CAPACITY)))
        b.figures["capacity_vs_reference"].add(ref.seconds / relay.seconds)
        b.figures["capacity_late_429_pct"].add(relay.late_limited_pct)
        b.figures["capacity_429_pct"].add(relay.limited_pct)
        b.figures["capacity_rows_per_s"].add(n / relay.seconds)
        b.say(f"[capacity] run {i + 1}: {n} rows, Relay {relay.seconds:.2f} s "
              f"({relay.limited}/{relay.calls} calls 429, {relay.late_limited_pct:.2f} % "
              f"after {EARLY_S:g} s), reference at {CAPACITY} {ref.seconds:.2f} s")
