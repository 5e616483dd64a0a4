"""`relayd simulate`: flags in, a server on a port and the SIMULATED MCP tool server on
the next one (`--mcp-port` another, `--no-mcp` none) until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys

from aiohttp import web

from daemon.simulator.app import (
    STATE,
    build_app,
)
from daemon.simulator.faults import (
    MAX_HUGE_MB,
    SimOptions,
)


def _rate(text: str) -> float:
    value = _non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a probability between 0 and 1, got {text}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _megabytes(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of MB: {text!r}") from None
    if not 1 <= size <= MAX_HUGE_MB:
        raise argparse.ArgumentTypeError(f"must be 1–{MAX_HUGE_MB} MB, got {size}")
    return size


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0–65535 (0 picks a free port), got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relayd simulate",
        description="Run a SIMULATED OpenAI-compatible upstream, which also serves "
                    "Anthropic's POST /v1/messages, for demos, tests and "
                    "benchmarks. Prompts may carry [sim:...] directives, e.g. "
                    "[sim:fail=503 times=1], [sim:huge=100] (a 100 MB answer) or "
                    "[sim:prompt_tokens=-5 completion_tokens=9223372036854775813] (an answer "
                    "reporting that usage, as an untrusted upstream might); in tool calls' "
                    "arguments [sim:tool_content=KB] (tool results that big), in a workflow "
                    "input [sim:wf_pad=KB] (map requests that much longer).")
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    add("--port", type=_port, required=True, help="port to bind; 0 picks a free one")
    add("--latency-ms", type=_non_negative, default=0.0, help="mean added latency")
    add("--jitter-ms", type=_non_negative, default=0.0, help="uniform ± spread around it")
    for fault in ("429", "5xx", "timeout", "reset"):
        add(f"--rate-{fault}", type=_rate, default=0.0, help=f"probability of a {fault} fault")
    add("--rate-huge", type=_rate, default=0.0,
        help="probability of a huge answer: a 200 whose valid JSON body is padded to "
             "--huge-mb, streamed without Content-Length (tests a client's response cap)")
    add("--huge-mb", type=_megabytes, default=100,
        help="size of a huge answer (--rate-huge, or a prompt's [sim:huge]) in MB of "
             "2^20 bytes, 1–4096 (default 100); [sim:huge=MB] names its own")
    add("--retry-after", type=_non_negative, default=1.0, help="Retry-After seconds on 429s")
    add("--timeout-s", type=_non_negative, default=30.0,
        help="how long a simulated timeout hangs before answering 504")
    add("--seed", type=int, default=None, help="seed for the random faults and jitter")
    add("--rpm", type=_positive, default=None,
        help="requests a minute per model; past it, 429 with Retry-After and "
             "x-ratelimit-* (on /v1/messages anthropic-ratelimit-*) headers (a bucket "
             "refilling continuously, 1 s of burst)")
    add("--tpm", type=_positive, default=None,
        help="tokens a minute per model (prompt words + max_tokens, corrected to usage)")
    add("--capacity", type=_positive, default=None,
        help="requests at once; past it, 429 with --retry-after (a loaded vLLM)")
    mcp = parser.add_mutually_exclusive_group()
    mcp.add_argument(
        "--mcp-port", type=_port, default=None,
        help="serve the SIMULATED MCP tool server (Streamable HTTP, path /mcp) on this "
             "port; 0 picks a free one (default: --port + 1, as the sample records expect "
             "with 9900 and 9901; a free one with --port 0)")
    mcp.add_argument("--no-mcp", action="store_true",
                     help="serve no MCP tool server (its SDK is not even loaded)")
    return parser


def mcp_port_of(port: int, mcp_port: int | None, *, no_mcp: bool) -> int | None:
    """Where the MCP tool server listens: `--mcp-port`, else the port after `--port`
    (a free one when `--port` is 0); None with `--no-mcp`."""
    if no_mcp:
        return None
    if mcp_port is not None:
        return mcp_port
    if port == 0:
        return 0
    if port == 65535:
        raise ValueError("--port 65535 leaves no port after it for the MCP tool server: "
                         "choose one with --mcp-port, or serve none with --no-mcp")
    return port + 1


def options_from(args: argparse.Namespace) -> SimOptions:
    return SimOptions(
        latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, rate_429=args.rate_429,
        rate_5xx=args.rate_5xx, rate_timeout=args.rate_timeout, rate_reset=args.rate_reset,
        rate_huge=args.rate_huge, huge_mb=args.huge_mb,
        retry_after_s=args.retry_after, timeout_s=args.timeout_s, seed=args.seed,
        rpm=args.rpm, tpm=args.tpm, capacity=args.capacity)


def main(argv: list[str] | None = None) -> int:
    """`relayd simulate`: serve until SIGINT or SIGTERM, then exit 0."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        options = options_from(args)
        mcp_port = mcp_port_of(args.port, args.mcp_port, no_mcp=args.no_mcp)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(_serve(build_app(options), args.host, args.port, mcp_port,
                           chosen=args.mcp_port is not None))
    except OSError as exc:
        print(f"relayd simulate: cannot listen on {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve(app: web.Application, host: str, port: int, mcp_port: int | None, *,
                 chosen: bool = True) -> None:
    """Serve until signalled. The upstream's line comes first, then (with an MCP port)
    the MCP server's, each printed once both servers listen. `chosen`: the MCP port was
    asked for (`--mcp-port`), not the default one after `--port`."""
    # Before anything listens: a SIGTERM sent as soon as the lines appear must not kill
    # the process with the default action.
    stop = _stop_on_signals()
    # handler_cancellation: a simulated timeout stops hanging once its client leaves.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                           shutdown_timeout=1.0)
    await runner.setup()
    mcp = None
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise OSError(f"{host}:{port}: {exc}") from exc
        if mcp_port is not None:
            from daemon.simulator.mcp_server import McpRunner  # the mcp SDK loads only here

            mcp = McpRunner(app[STATE], host, mcp_port)
            try:
                await mcp.start()
            except OSError as exc:
                mcp = None
                how = "" if chosen else (", the default one after --port: choose another "
                                         "with --mcp-port, or serve none with --no-mcp")
                raise OSError(f"{host}:{mcp_port} (MCP{how}): {exc}") from exc
        bound = runner.addresses[0][1]
        shown = f"[{host}]" if ":" in host else host
        print("relayd simulate: SIMULATED OpenAI-compatible upstream listening on "
              f"http://{shown}:{bound}/v1", flush=True)
        if mcp is not None:
            print(f"relayd simulate: SIMULATED MCP tool server listening on {mcp.url}",
                  flush=True)
        else:
            print("relayd simulate: no MCP tool server (--no-mcp)", flush=True)
        await stop.wait()
    finally:
        if mcp is not None:
            await mcp.stop()
        await runner.cleanup()


def _stop_on_signals() -> asyncio.Event:
    """An event SIGINT or SIGTERM sets."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


if __name__ == "__main__":
    sys.exit(main())
