"""Relay's configuration: a TOML file loaded into frozen, validated dataclasses.

Every key is optional; an unknown key or a bad value is a `ConfigError` that
names the key, so `relayd serve` stops at start with a message a person can act on.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast
from urllib.parse import urlsplit


class ConfigError(ValueError):
    """A configuration value that `relayd` refuses to start with; `errors`: each one
    found (the message is the first; `parse` reads every section and model before it
    gives up, so one run of `relayd config check` lists them all)."""

    def __init__(self, message: str, *, errors: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.errors: tuple[str, ...] = tuple(errors or (message,))


T = TypeVar("T")


class _Errors:
    """The errors of the parts of a config read one after another: each part that
    fails adds its error and gives None, so the next part is read all the same."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def part(self, build: Callable[..., T], *args: Any) -> T | None:
        try:
            return build(*args)
        except ConfigError as exc:
            self.found.extend(exc.errors)
            return None

    def raise_any(self) -> None:
        if self.found:
            raise ConfigError(self.found[0], errors=self.found)


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = Path("relay-data")
    max_body_mb: int = 64
    max_upload_mb: int = 200
    max_concurrent_uploads: int = 4
    header_timeout_s: float = 10.0  # a request head slower than this closes its connection
    body_timeout_s: float = 30.0  # a request body with no byte for this long is cut off
    max_connections: int = 1024  # open at once; past it, connections not in a request close
    max_parsing_mb: int = 128  # request bodies read at once, in MB (default 2 * max_body_mb)
    public_url: str = ""  # how clients reach it behind a proxy (absolute URLs in answers)


# The upstream HTTP clients `[gateway] transport` may name (daemon/upstream/clients.py).
TRANSPORTS = ("aiohttp", "pyreqwest")
# What `[gateway] cpu_policy` may name (daemon/cpu_policy.py).
CPU_POLICIES = ("batch", "normal")
# What `[gateway] cpu_affinity` may name besides a list of CPUs (daemon/cpu_affinity.py).
CPU_AFFINITIES = ("auto", "none")


@dataclass(frozen=True)
class GatewayConfig:
    batch_concurrency: int = 4
    max_running_jobs: int = 2
    completion_window_s: int = 86_400  # OpenAI batches expire this long after creation
    transport: str = "pyreqwest"
    max_response_mb: int = 8  # the largest answer read from an upstream or a user's URL
    cpu_policy: str = "batch"  # relayd's own threads under SCHED_BATCH (`cpu_policy.py`)
    # "auto": relayd's threads on one core; "none"; or the CPUs (`cpu_affinity.py`)
    cpu_affinity: str | tuple[int, ...] = "auto"

    @property
    def max_response_bytes(self) -> int:
        return self.max_response_mb * 1024 * 1024


@dataclass(frozen=True)
class SecurityConfig:
    allow_private_targets: bool = False


@dataclass(frozen=True)
class ToolsConfig:
    """Calls to the users' tool executors (`openrelay.tool_config`)."""

    max_concurrency_per_host: int = 16  # executor calls at once to one host, all jobs
    mcp_sessions_per_job: int = 8  # MCP sessions a job keeps open at most


@dataclass(frozen=True)
class LimitsConfig:
    """Bounds on what one record may hold."""

    # A multi-call record's transcript or workflow state, as stored and sent: past it the
    # record fails `record_too_large` (so a row's memory and rows in the store are bounded).
    max_record_mb: int = 32
    # A batch's rows, at most (files, Relay requests, Message Batches, re-drives): None
    # is each dialect's own cap (`Dialect.max_rows`); OpenAI's inline `requests` stay
    # at 50,000 whatever this says.
    max_batch_rows: int | None = None

    @property
    def max_record_bytes(self) -> int:
        return self.max_record_mb * 1024 * 1024


@dataclass(frozen=True)
class RetentionConfig:
    """How long ended jobs are kept (`domain/retention.py`): None keeps them forever."""

    days: int | None = None


@dataclass(frozen=True)
class MetricsConfig:
    """`GET /metrics`: an operator's view, with no workspace key."""

    token: str | None = None  # unset: open (bind to a private interface); set: Bearer token
    per_workspace: bool = False  # label series by workspace too


@dataclass(frozen=True)
class ClusterConfig:
    """Nodes sharing one database (docs/deployment.md). A node's leases on rows last
    `lease_s` past its last heartbeat; it beats every `lease_s / 3`."""

    lease_s: float = 15.0
    address: str = ""  # how other nodes and operators reach this node; "" = from [server]

    @property
    def heartbeat_s(self) -> float:
        return self.lease_s / 3


@dataclass(frozen=True)
class RetryConfig:
    """How the router retries one model before it falls back to the next."""

    attempts: int = 3
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 60.0
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 120.0


# The protocols an upstream may speak (`[[models]] api`): OpenAI's chat completions
# (and completions, embeddings) or Anthropic's Messages API.
Api = Literal["openai", "anthropic"]
APIS: tuple[Api, ...] = ("openai", "anthropic")
DEFAULT_MAX_TOKENS = 4096  # what a row without max_tokens asks of an Anthropic upstream
# The OpenAI endpoints an `api = "openai"` upstream may serve (`[[models]] endpoints`), and
# those it is taken to serve when the key is unset.
OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                    "/v1/responses", "/v1/moderations")
DEFAULT_ENDPOINTS = OPENAI_ENDPOINTS[:3]
MAX_DEFAULT_MAX_TOKENS = 10**9  # no model writes more in one call


@dataclass(frozen=True)
class ModelConfig:
    alias: str
    base_url: str
    model: str
    api_key: str | None = None
    fallbacks: tuple[str, ...] = ()
    max_concurrency: int = 32
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    rpm: int | None = None  # requests a minute this model takes, shared by all jobs
    tpm: int | None = None  # tokens a minute (estimated before a call, corrected after)
    adaptive: bool = True  # learn the concurrency the upstream holds, up to max_concurrency
    api: Api = "openai"  # the upstream's protocol
    default_max_tokens: int = DEFAULT_MAX_TOKENS  # for rows without one, on an Anthropic upstream
    # The OpenAI endpoints the upstream serves (api = "openai"); what it lacks, the router
    # translates (`/v1/responses` to chat) or refuses (`upstream/protocols.py`).
    endpoints: tuple[str, ...] = DEFAULT_ENDPOINTS


@dataclass(frozen=True)
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    database_url: str = ""
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    retry: RetryConfig = field(default_factory=RetryConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    models: tuple[ModelConfig, ...] = ()

    @property
    def store_url(self) -> str:
        """The database the store opens: `[database] url`, else SQLite under data_dir."""
        return self.database_url or f"sqlite:///{self.server.data_dir / 'relay.db'}"


_SECTIONS = {"server", "database", "gateway", "security", "retry", "tools", "metrics",
             "cluster", "limits", "retention", "models"}


def load(path: str | Path | None, *, environ: dict[str, str] | None = None) -> Config:
    """Read the TOML file at `path` (None: all defaults) into a `Config`."""
    if path is None:
        return parse({}, environ=environ)
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return parse(raw, environ=environ)


def parse(raw: dict[str, Any], *, environ: dict[str, str] | None = None) -> Config:
    """Validate an already-decoded TOML document: every section and every model is
    read, and a ConfigError lists each one's first error."""
    errors = _Errors()
    errors.part(_reject_unknown, raw, _SECTIONS, "")
    env = os.environ if environ is None else environ

    def section(name: str, build: Callable[[dict[str, Any]], T]) -> T | None:
        return errors.part(lambda: build(_table(raw, name)))

    parts: dict[str, Any] = {
        "server": section("server", _server), "database_url": section("database", _url),
        "gateway": section("gateway", _gateway), "security": section("security", _security),
        "retry": section("retry", _retry), "tools": section("tools", _tools),
        "metrics": section("metrics", _metrics), "cluster": section("cluster", _cluster),
        "limits": section("limits", _limits), "retention": section("retention", _retention),
        "models": errors.part(_models, raw.get("models", []), env)}
    errors.raise_any()
    return Config(**parts)  # none is None: no part failed


def _url(database: dict[str, Any]) -> str:
    _reject_unknown(database, {"url"}, "database.")
    url: str = _typed(database, "url", str, "", "database.")
    if url and "://" not in url:
        raise ConfigError(f"database.url: must be a URL such as sqlite:///relay-data/relay.db "
                          f"or postgresql://user@host:5432/relay, got {url!r}")
    return url


def _server(t: dict[str, Any]) -> ServerConfig:
    _reject_unknown(t, {"host", "port", "data_dir", "max_body_mb", "max_upload_mb",
                        "max_concurrent_uploads", "header_timeout_s", "body_timeout_s",
                        "max_connections", "max_parsing_mb", "public_url"}, "server.")
    port = _typed(t, "port", int, 8080, "server.")
    if not 0 <= port <= 65535:
        raise ConfigError(f"server.port: must be 0–65535, got {port}")
    sizes = {key: _typed(t, key, int, default, "server.") for key, default in
             (("max_body_mb", 64), ("max_upload_mb", 200), ("max_concurrent_uploads", 4),
              ("max_connections", 1024))}
    # Unset, the parsing budget is two bodies of the largest size; set, it must hold one.
    sizes["max_parsing_mb"] = _typed(t, "max_parsing_mb", int, 2 * sizes["max_body_mb"],
                                     "server.")
    for key, value in sizes.items():
        if value < 1:
            raise ConfigError(f"server.{key}: must be at least 1, got {value}")
    if sizes["max_parsing_mb"] < sizes["max_body_mb"]:
        raise ConfigError(f"server.max_parsing_mb: must be at least server.max_body_mb "
                          f"({sizes['max_body_mb']}), or a body of the largest size could "
                          f"never be read; got {sizes['max_parsing_mb']}")
    head_s, body_s = (_seconds(t, key, default) for key, default in
                      (("header_timeout_s", 10.0), ("body_timeout_s", 30.0)))
    public_url = _typed(t, "public_url", str, "", "server.")
    if public_url and urlsplit(public_url).scheme not in ("http", "https"):
        raise ConfigError(f"server.public_url: must be an http(s) URL, got {public_url!r}")
    return ServerConfig(
        public_url=public_url,
        host=_typed(t, "host", str, "127.0.0.1", "server."),
        port=port,
        data_dir=Path(_typed(t, "data_dir", str, "relay-data", "server.")),
        header_timeout_s=head_s,
        body_timeout_s=body_s,
        **sizes,
    )


def _seconds(t: dict[str, Any], key: str, default: float) -> float:
    value = _number(t, key, default, "server.")
    if value <= 0:
        raise ConfigError(f"server.{key}: must be positive, got {value}")
    return value


def _gateway(t: dict[str, Any]) -> GatewayConfig:
    _reject_unknown(t, {"batch_concurrency", "max_running_jobs", "completion_window_s",
                        "transport", "max_response_mb", "cpu_policy", "cpu_affinity"},
                    "gateway.")
    concurrency = _typed(t, "batch_concurrency", int, 4, "gateway.")
    running = _typed(t, "max_running_jobs", int, 2, "gateway.")
    window = _typed(t, "completion_window_s", int, 86_400, "gateway.")
    if running < 1:
        raise ConfigError(f"gateway.max_running_jobs: must be at least 1, got {running}")
    if window < 1:
        raise ConfigError(f"gateway.completion_window_s: must be at least 1, got {window}")
    response_mb = _typed(t, "max_response_mb", int, 8, "gateway.")
    if response_mb < 1:
        raise ConfigError(f"gateway.max_response_mb: must be at least 1, got {response_mb}")
    transport = _one_of(t, "transport", TRANSPORTS, "pyreqwest", "gateway.")
    cpu_policy = _one_of(t, "cpu_policy", CPU_POLICIES, "batch", "gateway.")
    return GatewayConfig(batch_concurrency=min(32, max(1, concurrency)),
                         max_running_jobs=running, completion_window_s=window,
                         transport=transport, max_response_mb=response_mb,
                         cpu_policy=cpu_policy, cpu_affinity=_cpu_affinity(t))


def _cpu_affinity(t: dict[str, Any]) -> str | tuple[int, ...]:
    """`"auto"`, `"none"`, or a non-empty list of distinct CPU numbers."""
    value = t.get("cpu_affinity", "auto")
    if value in CPU_AFFINITIES:
        return str(value)
    if not isinstance(value, list) or not value or any(
            isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in value):
        raise ConfigError("gateway.cpu_affinity: must be \"auto\", \"none\" or a non-empty "
                          f"array of CPU numbers (0 and up), got {value!r}")
    if len(set(value)) != len(value):
        twice = next(c for i, c in enumerate(value) if c in value[:i])
        raise ConfigError(f"gateway.cpu_affinity: CPU {twice} is listed twice")
    return tuple(value)


def _cluster(t: dict[str, Any]) -> ClusterConfig:
    _reject_unknown(t, {"lease_s", "address"}, "cluster.")
    lease_s = _number(t, "lease_s", 15.0, "cluster.")
    if not 1 <= lease_s <= 600:
        raise ConfigError(f"cluster.lease_s: must be 1–600 seconds, got {lease_s}")
    address = _typed(t, "address", str, "", "cluster.")
    if address and not address.startswith(("http://", "https://")):
        raise ConfigError(f"cluster.address: must be an http:// or https:// URL, "
                          f"got {address!r}")
    return ClusterConfig(lease_s=float(lease_s), address=address.rstrip("/"))


MAX_RECORD_MB = 4096


MAX_BATCH_ROWS = 100_000_000


def _limits(t: dict[str, Any]) -> LimitsConfig:
    _reject_unknown(t, {"max_record_mb", "max_batch_rows"}, "limits.")
    record_mb = _typed(t, "max_record_mb", int, LimitsConfig.max_record_mb, "limits.")
    if not 1 <= record_mb <= MAX_RECORD_MB:
        raise ConfigError(f"limits.max_record_mb: must be 1–{MAX_RECORD_MB}, got {record_mb}")
    batch_rows = None
    if "max_batch_rows" in t:
        batch_rows = _typed(t, "max_batch_rows", int, 0, "limits.")
        if not 1 <= batch_rows <= MAX_BATCH_ROWS:
            raise ConfigError(f"limits.max_batch_rows: must be 1–{MAX_BATCH_ROWS:,}, "
                              f"got {batch_rows}")
    return LimitsConfig(max_record_mb=record_mb, max_batch_rows=batch_rows)


MAX_RETENTION_DAYS = 36_500


def _retention(t: dict[str, Any]) -> RetentionConfig:
    _reject_unknown(t, {"days"}, "retention.")
    if "days" not in t:
        return RetentionConfig()
    days = _typed(t, "days", int, 0, "retention.")
    if not 1 <= days <= MAX_RETENTION_DAYS:
        raise ConfigError(f"retention.days: must be 1–{MAX_RETENTION_DAYS}, got {days}")
    return RetentionConfig(days=days)


def _security(t: dict[str, Any]) -> SecurityConfig:
    _reject_unknown(t, {"allow_private_targets"}, "security.")
    return SecurityConfig(
        allow_private_targets=_typed(t, "allow_private_targets", bool, False, "security.")
    )


def _retry(t: dict[str, Any]) -> RetryConfig:
    defaults = RetryConfig()
    _reject_unknown(t, set(defaults.__dataclass_fields__), "retry.")
    attempts = _typed(t, "attempts", int, defaults.attempts, "retry.")
    if not 1 <= attempts <= 20:
        raise ConfigError(f"retry.attempts: must be 1–20, got {attempts}")
    seconds = {}
    for key in ("backoff_base_s", "backoff_cap_s", "retry_after_cap_s",
                "connect_timeout_s", "request_timeout_s"):
        value = _number(t, key, getattr(defaults, key), "retry.")
        if value < 0 or (key.endswith("timeout_s") and value == 0):
            raise ConfigError(f"retry.{key}: must be positive, got {value}")
        seconds[key] = value
    return RetryConfig(attempts=attempts, **seconds)


def _tools(t: dict[str, Any]) -> ToolsConfig:
    defaults = ToolsConfig()
    _reject_unknown(t, set(defaults.__dataclass_fields__), "tools.")
    values = {key: _typed(t, key, int, getattr(defaults, key), "tools.")
              for key in defaults.__dataclass_fields__}
    for key, value in values.items():
        if value < 1:
            raise ConfigError(f"tools.{key}: must be at least 1, got {value}")
    return ToolsConfig(**values)


def _metrics(t: dict[str, Any]) -> MetricsConfig:
    _reject_unknown(t, {"token", "per_workspace"}, "metrics.")
    token = _typed(t, "token", str, "", "metrics.")
    if token and token != token.strip():
        raise ConfigError("metrics.token: must not start or end with spaces")
    return MetricsConfig(token=token or None,
                         per_workspace=_typed(t, "per_workspace", bool, False, "metrics."))


_MODEL_KEYS = {
    "alias", "base_url", "model", "api_key_env", "fallbacks", "max_concurrency",
    "input_usd_per_mtok", "output_usd_per_mtok", "rpm", "tpm", "adaptive", "api",
    "default_max_tokens", "endpoints",
}


def _models(raw: Any, env: os._Environ[str] | dict[str, str]) -> tuple[ModelConfig, ...]:
    if not isinstance(raw, list):
        raise ConfigError("models: must be an array of tables ([[models]])")
    errors = _Errors()  # each model's first error
    read = [errors.part(_model, i, t, env) for i, t in enumerate(raw)]
    errors.raise_any()
    models = tuple(m for m in read if m is not None)
    aliases = [m.alias for m in models]
    for i, alias in enumerate(aliases):
        if alias in aliases[:i]:
            raise ConfigError(f"models[{i}].alias: duplicate alias {alias!r}")
    for i, m in enumerate(models):
        for name in m.fallbacks:
            if name not in aliases:
                raise ConfigError(f"models[{i}].fallbacks: unknown alias {name!r}")
            if name == m.alias:
                raise ConfigError(f"models[{i}].fallbacks: {name!r} cannot fall back to itself")
    return models


# A price at which one call at the usage limit (10^9 tokens each way) costs at most
# 2·10^18 nano-USD: any one call's cost fits a 64-bit column.
MAX_USD_PER_MTOK = 1_000_000


def _model(i: int, t: Any, env: os._Environ[str] | dict[str, str]) -> ModelConfig:
    where = f"models[{i}]."
    if not isinstance(t, dict):
        raise ConfigError(f"models[{i}]: must be a table")
    _reject_unknown(t, _MODEL_KEYS, where)
    alias = _typed(t, "alias", str, "", where)
    if not alias.strip():
        raise ConfigError(f"{where}alias: required, a non-empty string")
    base_url = _typed(t, "base_url", str, "", where)
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}base_url: required, an http:// or https:// URL")
    fallbacks = t.get("fallbacks", [])
    if not isinstance(fallbacks, list) or not all(isinstance(f, str) for f in fallbacks):
        raise ConfigError(f"{where}fallbacks: must be an array of aliases")
    concurrency = _typed(t, "max_concurrency", int, 32, where)
    if concurrency < 1:
        raise ConfigError(f"{where}max_concurrency: must be at least 1, got {concurrency}")
    key_env = _typed(t, "api_key_env", str, "", where)
    prices = {k: _number(t, k, 0.0, where) for k in ("input_usd_per_mtok", "output_usd_per_mtok")}
    for key, value in prices.items():
        if not 0 <= value <= MAX_USD_PER_MTOK:  # NaN fails too
            raise ConfigError(f"{where}{key}: must be 0–{MAX_USD_PER_MTOK:,.0f}, got {value}")
    return ModelConfig(
        alias=alias,
        base_url=base_url.rstrip("/"),
        model=_typed(t, "model", str, alias, where) or alias,
        api_key=env.get(key_env) or None if key_env else None,
        fallbacks=tuple(fallbacks),
        max_concurrency=concurrency,
        input_usd_per_mtok=prices["input_usd_per_mtok"],
        output_usd_per_mtok=prices["output_usd_per_mtok"],
        rpm=_rate_limit(t, "rpm", where),
        tpm=_rate_limit(t, "tpm", where),
        adaptive=_typed(t, "adaptive", bool, True, where),
        api=_api(t, where),
        default_max_tokens=_default_max_tokens(t, where),
        endpoints=_endpoints(t, where),
    )


def _api(t: dict[str, Any], where: str) -> Api:
    api = _typed(t, "api", str, "openai", where)
    if api not in APIS:
        raise ConfigError(f"{where}api: must be one of {', '.join(APIS)} (the upstream's "
                          f"protocol), got {api!r}")
    return cast(Api, api)


def _endpoints(t: dict[str, Any], where: str) -> tuple[str, ...]:
    """`endpoints`: a non-empty array of distinct OpenAI endpoints, on an OpenAI-protocol
    model only (an Anthropic one serves its Messages API, nothing to choose)."""
    if "endpoints" not in t:
        return DEFAULT_ENDPOINTS
    if t.get("api", "openai") != "openai":
        raise ConfigError(f'{where}endpoints: only for api = "openai" models (an Anthropic '
                          f"model serves the Messages API)")
    value = t["endpoints"]
    allowed = ", ".join(OPENAI_ENDPOINTS)
    if not isinstance(value, list) or not value or not all(isinstance(e, str) for e in value):
        raise ConfigError(f"{where}endpoints: must be a non-empty array of endpoints "
                          f"({allowed}), got {value!r}")
    for endpoint in value:
        if endpoint not in OPENAI_ENDPOINTS:
            raise ConfigError(f"{where}endpoints: {endpoint!r} is not one of {allowed}")
    if len(set(value)) != len(value):
        twice = next(e for i, e in enumerate(value) if e in value[:i])
        raise ConfigError(f"{where}endpoints: {twice!r} is listed twice")
    return tuple(value)


def _default_max_tokens(t: dict[str, Any], where: str) -> int:
    value: int = _typed(t, "default_max_tokens", int, DEFAULT_MAX_TOKENS, where)
    if not 1 <= value <= MAX_DEFAULT_MAX_TOKENS:
        raise ConfigError(f"{where}default_max_tokens: must be 1–{MAX_DEFAULT_MAX_TOKENS:,}, "
                          f"got {value}")
    return value


def _rate_limit(t: dict[str, Any], key: str, where: str) -> int | None:
    """`rpm` or `tpm`: unset means no limit of Relay's own (the upstream's headers may
    still announce one)."""
    if key not in t:
        return None
    value: int = _typed(t, key, int, None, where)
    if value < 1:
        raise ConfigError(f"{where}{key}: must be at least 1, got {value}")
    return value


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: must be a table ([{name}])")
    return value


def _reject_unknown(t: dict[str, Any], known: set[str], where: str) -> None:
    """Every key of `t` that is not `known`, each an error (a typo is rarely alone)."""
    unknown = [f"{where}{key}: unknown key (known: {', '.join(sorted(known))})"
               for key in t if key not in known]
    if unknown:
        raise ConfigError(unknown[0], errors=unknown)


def _typed(t: dict[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    value = t.get(key, default)
    # bool is an int in Python; a port of `true` is still a mistake.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}{key}: must be {kind.__name__}, got {value!r}")
    return value


def _one_of(t: dict[str, Any], key: str, choices: Sequence[str], default: str,
            where: str) -> str:
    """A string setting that names one of `choices`."""
    value: str = _typed(t, key, str, default, where)
    if value not in choices:
        raise ConfigError(f"{where}{key}: must be one of {', '.join(choices)}, "
                          f"got {value!r}")
    return value


def _number(t: dict[str, Any], key: str, default: float, where: str) -> float:
    value = t.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}{key}: must be a number, got {value!r}")
    return float(value)
