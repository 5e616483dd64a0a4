"""Configuration: TOML -> frozen, validated dataclasses; every refusal names its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.config import Config, ConfigError, load, parse

ROOT = Path(__file__).resolve().parents[2]


def make_model(**overrides: Any) -> dict[str, Any]:
    return {"alias": "small", "base_url": "http://127.0.0.1:9900/v1", **overrides}


def refusal(raw: dict[str, Any], **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        parse(raw, **kwargs)
    return str(info.value)


def test_empty_document_gives_documented_defaults() -> None:
    config = parse({}, environ={})
    assert config.server.host == "127.0.0.1"
    assert config.server.port == 8080
    assert config.server.data_dir == Path("relay-data")
    assert config.server.max_body_mb == 64
    assert config.gateway.batch_concurrency == 4
    assert config.gateway.max_running_jobs == 2
    assert config.security.allow_private_targets is False
    assert config.retry.attempts == 3
    assert config.models == ()
    assert config.store_url == "sqlite:///relay-data/relay.db"


def test_load_none_is_all_defaults() -> None:
    assert load(None, environ={}) == Config()


def test_every_section_is_read() -> None:
    config = parse({
        "server": {"host": "0.0.0.0", "port": 9000, "data_dir": "/srv/relay",
                   "max_body_mb": 8},
        "database": {"url": "sqlite:////srv/relay/db.sqlite"},
        "gateway": {"batch_concurrency": 16, "max_running_jobs": 5},
        "security": {"allow_private_targets": True},
        "retry": {"attempts": 5},
        "models": [make_model()],
    }, environ={})
    assert (config.server.host, config.server.port) == ("0.0.0.0", 9000)
    assert config.server.data_dir == Path("/srv/relay")
    assert config.server.max_body_mb == 8
    assert config.gateway.batch_concurrency == 16
    assert config.gateway.max_running_jobs == 5
    assert config.security.allow_private_targets is True
    assert config.retry.attempts == 5
    assert [m.alias for m in config.models] == ["small"]


def test_config_is_frozen() -> None:
    config = parse({}, environ={})
    with pytest.raises(AttributeError):
        config.server.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(("raw", "key"), [
    ({"bogus": 1}, "bogus"),
    ({"server": {"bogus": 1}}, "server.bogus"),
    ({"database": {"bogus": 1}}, "database.bogus"),
    ({"gateway": {"bogus": 1}}, "gateway.bogus"),
    ({"security": {"bogus": 1}}, "security.bogus"),
    ({"retry": {"bogus": 1}}, "retry.bogus"),
    ({"models": [make_model(bogus=1)]}, "models[0].bogus"),
    ({"models": [make_model(), make_model(alias="b", colour="red")]}, "models[1].colour"),
])
def test_unknown_key_is_refused_by_name(raw: dict[str, Any], key: str) -> None:
    message = refusal(raw, environ={})
    assert message.startswith(f"{key}:")
    assert "unknown key" in message


@pytest.mark.parametrize(("raw", "key"), [
    ({"server": {"port": "8080"}}, "server.port"),
    ({"server": {"port": True}}, "server.port"),
    ({"server": {"host": 127}}, "server.host"),
    ({"server": {"data_dir": 1}}, "server.data_dir"),
    ({"server": {"max_body_mb": 1.5}}, "server.max_body_mb"),
    ({"database": {"url": 3}}, "database.url"),
    ({"gateway": {"batch_concurrency": "4"}}, "gateway.batch_concurrency"),
    ({"gateway": {"max_running_jobs": 2.0}}, "gateway.max_running_jobs"),
    ({"security": {"allow_private_targets": "yes"}}, "security.allow_private_targets"),
    ({"security": {"allow_private_targets": 1}}, "security.allow_private_targets"),
    ({"retry": {"attempts": 2.5}}, "retry.attempts"),
    ({"retry": {"backoff_base_s": "fast"}}, "retry.backoff_base_s"),
    ({"retry": {"request_timeout_s": True}}, "retry.request_timeout_s"),
    ({"models": [make_model(alias=5)]}, "models[0].alias"),
    ({"models": [make_model(base_url=None)]}, "models[0].base_url"),
    ({"models": [make_model(model=1)]}, "models[0].model"),
    ({"models": [make_model(api_key_env=1)]}, "models[0].api_key_env"),
    ({"models": [make_model(fallbacks="backup")]}, "models[0].fallbacks"),
    ({"models": [make_model(fallbacks=[1])]}, "models[0].fallbacks"),
    ({"models": [make_model(max_concurrency="8")]}, "models[0].max_concurrency"),
    ({"models": [make_model(input_usd_per_mtok="0.1")]}, "models[0].input_usd_per_mtok"),
    ({"models": [make_model(output_usd_per_mtok=False)]}, "models[0].output_usd_per_mtok"),
    ({"models": [make_model(adaptive="no")]}, "models[0].adaptive"),
    ({"models": [make_model(adaptive=0)]}, "models[0].adaptive"),
])
def test_wrong_type_is_refused_by_name(raw: dict[str, Any], key: str) -> None:
    assert refusal(raw, environ={}).startswith(f"{key}:")


@pytest.mark.parametrize(("raw", "key"), [
    ({"server": 1}, "server"),
    ({"gateway": []}, "gateway"),
    ({"models": {"alias": "x"}}, "models"),
    ({"models": ["x"]}, "models[0]"),
])
def test_section_of_wrong_shape_is_refused_by_name(raw: dict[str, Any], key: str) -> None:
    assert refusal(raw, environ={}).startswith(f"{key}:")


@pytest.mark.parametrize(("raw", "key"), [
    ({"server": {"port": 70000}}, "server.port"),
    ({"server": {"port": -1}}, "server.port"),
    ({"server": {"max_body_mb": 0}}, "server.max_body_mb"),
    ({"gateway": {"max_running_jobs": 0}}, "gateway.max_running_jobs"),
    ({"retry": {"attempts": 0}}, "retry.attempts"),
    ({"retry": {"attempts": 21}}, "retry.attempts"),
    ({"retry": {"backoff_base_s": -0.1}}, "retry.backoff_base_s"),
    ({"retry": {"connect_timeout_s": 0}}, "retry.connect_timeout_s"),
    ({"retry": {"request_timeout_s": 0}}, "retry.request_timeout_s"),
    ({"models": [make_model(alias=" ")]}, "models[0].alias"),
    ({"models": [{"base_url": "http://x/v1"}]}, "models[0].alias"),
    ({"models": [{"alias": "a"}]}, "models[0].base_url"),
    ({"models": [make_model(base_url="ftp://x/v1")]}, "models[0].base_url"),
    ({"models": [make_model(max_concurrency=0)]}, "models[0].max_concurrency"),
    ({"models": [make_model(input_usd_per_mtok=-1)]}, "models[0].input_usd_per_mtok"),
    # Past a million USD per million tokens one call's cost could overflow 64 bits.
    ({"models": [make_model(output_usd_per_mtok=1_000_001)]}, "models[0].output_usd_per_mtok"),
    ({"models": [make_model(input_usd_per_mtok=float("inf"))]}, "models[0].input_usd_per_mtok"),
    ({"models": [make_model(input_usd_per_mtok=float("nan"))]}, "models[0].input_usd_per_mtok"),
])
def test_out_of_range_value_is_refused_by_name(raw: dict[str, Any], key: str) -> None:
    assert refusal(raw, environ={}).startswith(f"{key}:")


@pytest.mark.parametrize(("given", "used"), [(0, 1), (-5, 1), (1, 1), (7, 7), (32, 32),
                                             (33, 32), (99, 32)])
def test_batch_concurrency_is_clamped_to_1_32(given: int, used: int) -> None:
    config = parse({"gateway": {"batch_concurrency": given}}, environ={})
    assert config.gateway.batch_concurrency == used


def test_duplicate_alias_is_refused() -> None:
    message = refusal({"models": [make_model(alias="a"), make_model(alias="b"),
                                  make_model(alias="a")]}, environ={})
    assert message.startswith("models[2].alias:")
    assert "duplicate" in message


def test_unknown_fallback_alias_is_refused() -> None:
    message = refusal({"models": [make_model(alias="a", fallbacks=["ghost"])]}, environ={})
    assert message.startswith("models[0].fallbacks:")
    assert "'ghost'" in message


def test_fallback_to_itself_is_refused() -> None:
    message = refusal({"models": [make_model(alias="a", fallbacks=["a"])]}, environ={})
    assert message.startswith("models[0].fallbacks:")


def test_model_defaults_and_fields() -> None:
    config = parse({"models": [
        make_model(alias="a", base_url="https://api.example.com/v1/", fallbacks=["b"],
                   max_concurrency=8, input_usd_per_mtok=1, output_usd_per_mtok=2.5),
        make_model(alias="b", model="upstream-b"),
    ]}, environ={})
    a, b = config.models
    assert a.model == "a"  # defaults to the alias
    assert a.base_url == "https://api.example.com/v1"  # trailing slash dropped
    assert a.fallbacks == ("b",)
    assert a.max_concurrency == 8
    assert (a.input_usd_per_mtok, a.output_usd_per_mtok) == (1.0, 2.5)
    assert isinstance(a.input_usd_per_mtok, float)
    assert b.model == "upstream-b"
    assert (b.max_concurrency, b.fallbacks, b.api_key) == (32, (), None)


def test_adaptive_concurrency_is_on_unless_turned_off() -> None:
    config = parse({"models": [make_model(alias="a"), make_model(alias="b", adaptive=False)]},
                   environ={})
    assert [m.adaptive for m in config.models] == [True, False]


def test_api_key_is_read_from_the_given_environ() -> None:
    raw = {"models": [make_model(alias="a", api_key_env="RELAY_TEST_KEY"),
                      make_model(alias="b", api_key_env="RELAY_TEST_ABSENT"),
                      make_model(alias="c", api_key_env="RELAY_TEST_EMPTY"),
                      make_model(alias="d")]}
    config = parse(raw, environ={"RELAY_TEST_KEY": "sk-123", "RELAY_TEST_EMPTY": ""})
    assert [m.api_key for m in config.models] == ["sk-123", None, None, None]


def test_api_key_is_not_read_from_the_process_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_TEST_KEY", "from-process")
    config = parse({"models": [make_model(api_key_env="RELAY_TEST_KEY")]}, environ={})
    assert config.models[0].api_key is None


def test_database_url_is_the_store_url() -> None:
    config = parse({"database": {"url": "sqlite:///var/relay/relay.db"},
                    "server": {"data_dir": "elsewhere"}}, environ={})
    assert config.store_url == "sqlite:///var/relay/relay.db"


def test_store_url_defaults_to_sqlite_under_data_dir() -> None:
    config = parse({"server": {"data_dir": "/srv/relay"}}, environ={})
    assert config.store_url == "sqlite:////srv/relay/relay.db"


def test_database_url_without_a_scheme_is_refused() -> None:
    message = refusal({"database": {"url": "relay.db"}}, environ={})
    assert message.startswith("database.url:")


def test_retry_values_are_read_as_floats() -> None:
    config = parse({"retry": {"attempts": 7, "backoff_base_s": 1, "backoff_cap_s": 4.5,
                              "retry_after_cap_s": 9, "connect_timeout_s": 2,
                              "request_timeout_s": 30}}, environ={})
    retry = config.retry
    assert retry.attempts == 7
    assert (retry.backoff_base_s, retry.backoff_cap_s, retry.retry_after_cap_s) == (1.0, 4.5, 9.0)
    assert (retry.connect_timeout_s, retry.request_timeout_s) == (2.0, 30.0)
    assert all(isinstance(v, float) for v in (retry.backoff_base_s, retry.request_timeout_s))


def test_retry_zero_backoff_is_allowed() -> None:
    assert parse({"retry": {"backoff_base_s": 0}}, environ={}).retry.backoff_base_s == 0.0


def test_load_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="not found"):
        load(missing, environ={})


def test_load_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[server\nport = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(path, environ={})


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "relay.toml"
    path.write_text('[gateway]\nbatch_concurrency = 99\n\n[[models]]\nalias = "m"\n'
                    'base_url = "http://127.0.0.1:1/v1"\napi_key_env = "K"\n', encoding="utf-8")
    config = load(path, environ={"K": "secret"})
    assert config.gateway.batch_concurrency == 32
    assert config.models[0].api_key == "secret"


def test_load_reports_unknown_key_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "relay.toml"
    path.write_text("[gateway]\nbogus = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^gateway\.bogus:"):
        load(path, environ={})


def test_sample_demo_config_loads() -> None:
    config = load(ROOT / "sample_data" / "demo.toml", environ={})
    assert config.security.allow_private_targets is True
    assert config.gateway.batch_concurrency == 8
    assert {m.alias for m in config.models} == {"gpt-4o-mini", "backup", "embed"}
    assert {m.alias: m.fallbacks for m in config.models}["gpt-4o-mini"] == ("backup",)


def test_sample_providers_config_loads() -> None:
    config = load(ROOT / "sample_data" / "providers.toml", environ={"OPENAI_API_KEY": "sk-x"})
    assert config.security.allow_private_targets is False
    assert config.store_url == "sqlite:///relay-data/relay.db"
    models = {m.alias: m for m in config.models}
    assert models["gpt-4o-mini"].api_key == "sk-x"
    assert models["gpt-4o-mini"].fallbacks == ("local-llama", "ollama-llama")
    assert models["local-llama"].api_key is None


def test_transport_is_chosen_by_name() -> None:
    assert parse({}, environ={}).gateway.transport == "pyreqwest"
    assert parse({"gateway": {"transport": "aiohttp"}}, environ={}).gateway.transport == "aiohttp"
    message = refusal({"gateway": {"transport": "curl"}}, environ={})
    assert message.startswith("gateway.transport: must be one of aiohttp")


def test_cpu_policy_is_batch_unless_set_normal() -> None:
    assert parse({}, environ={}).gateway.cpu_policy == "batch"
    assert parse({"gateway": {"cpu_policy": "normal"}}, environ={}).gateway.cpu_policy == "normal"
    message = refusal({"gateway": {"cpu_policy": "idle"}}, environ={})
    assert message == "gateway.cpu_policy: must be one of batch, normal, got 'idle'"


def test_cpu_affinity_is_auto_none_or_a_list_of_cpus() -> None:
    def affinity(value: object) -> object:
        return parse({"gateway": {"cpu_affinity": value}}, environ={}).gateway.cpu_affinity

    assert parse({}, environ={}).gateway.cpu_affinity == "auto"
    assert affinity("none") == "none"
    assert affinity([2, 3]) == (2, 3)
    expected = ('gateway.cpu_affinity: must be "auto", "none" or a non-empty array of CPU '
                "numbers (0 and up), got ")
    for bad in ([], [-1], [True], ["0"], 2, "2", "pinned", {"cpu": 1}):
        assert refusal({"gateway": {"cpu_affinity": bad}}, environ={}) == expected + repr(bad)
    assert refusal({"gateway": {"cpu_affinity": [0, 1, 1]}}, environ={}) == (
        "gateway.cpu_affinity: CPU 1 is listed twice")


def test_every_cpu_affinity_the_config_names_is_one_the_module_knows() -> None:
    from daemon import cpu_affinity
    from daemon.config import CPU_AFFINITIES

    assert set(CPU_AFFINITIES) == {cpu_affinity.AUTO, cpu_affinity.NONE}


def test_every_transport_the_config_names_exists() -> None:
    from daemon.config import TRANSPORTS as NAMED
    from daemon.upstream.clients import TRANSPORTS

    assert set(TRANSPORTS) == set(NAMED)


def test_server_limits_default_to_the_documented_values() -> None:
    server = parse({}, environ={}).server
    assert (server.header_timeout_s, server.body_timeout_s) == (10.0, 30.0)
    assert server.max_connections == 1024
    assert server.max_parsing_mb == 128 == 2 * server.max_body_mb


def test_server_limits_are_read() -> None:
    server = parse({"server": {"header_timeout_s": 2, "body_timeout_s": 0.5,
                               "max_connections": 64, "max_parsing_mb": 300}},
                   environ={}).server
    assert (server.header_timeout_s, server.body_timeout_s) == (2.0, 0.5)
    assert (server.max_connections, server.max_parsing_mb) == (64, 300)


def test_unset_parsing_budget_follows_the_body_cap() -> None:
    assert parse({"server": {"max_body_mb": 200}}, environ={}).server.max_parsing_mb == 400


@pytest.mark.parametrize("server", [{"max_parsing_mb": 63},
                                    {"max_body_mb": 100, "max_parsing_mb": 99}])
def test_a_parsing_budget_smaller_than_one_body_is_refused(server: dict[str, Any]) -> None:
    message = refusal({"server": server}, environ={})
    assert message.startswith("server.max_parsing_mb: must be at least server.max_body_mb")


def test_a_parsing_budget_of_exactly_one_body_is_allowed() -> None:
    server = parse({"server": {"max_body_mb": 10, "max_parsing_mb": 10}}, environ={}).server
    assert server.max_parsing_mb == 10


@pytest.mark.parametrize(("key", "value", "says"), [
    ("header_timeout_s", 0, "must be positive"),
    ("header_timeout_s", -1.5, "must be positive"),
    ("header_timeout_s", "10", "must be a number"),
    ("body_timeout_s", 0.0, "must be positive"),
    ("body_timeout_s", True, "must be a number"),
    ("max_connections", 0, "must be at least 1"),
    ("max_connections", 10.5, "must be int"),
    ("max_parsing_mb", 0, "must be at least 1"),
    ("max_parsing_mb", "256", "must be int"),
])
def test_bad_server_limits_are_refused_by_name(key: str, value: Any, says: str) -> None:
    assert refusal({"server": {key: value}}, environ={}).startswith(f"server.{key}: {says}")


def test_max_response_mb_defaults_to_8_and_is_read() -> None:
    assert parse({}, environ={}).gateway.max_response_mb == 8
    assert parse({}, environ={}).gateway.max_response_bytes == 8 * 1024 * 1024
    gateway = parse({"gateway": {"max_response_mb": 1}}, environ={}).gateway
    assert (gateway.max_response_mb, gateway.max_response_bytes) == (1, 1024 * 1024)


@pytest.mark.parametrize("value", [0, -1, "8", 8.5, True, [8]])
def test_max_response_mb_must_be_a_whole_number_of_at_least_1(value: Any) -> None:
    message = refusal({"gateway": {"max_response_mb": value}}, environ={})
    assert message.startswith("gateway.max_response_mb: must be ")


def test_max_record_mb_defaults_to_32_and_is_read() -> None:
    assert parse({}, environ={}).limits.max_record_mb == 32
    limits = parse({"limits": {"max_record_mb": 2}}, environ={}).limits
    assert (limits.max_record_mb, limits.max_record_bytes) == (2, 2 * 1024 * 1024)


@pytest.mark.parametrize("value", [0, -1, 4097, "32", 1.5, True])
def test_max_record_mb_out_of_range_is_refused_by_name(value: Any) -> None:
    message = refusal({"limits": {"max_record_mb": value}}, environ={})
    assert message.startswith("limits.max_record_mb: must be ")


def test_an_unknown_limits_key_is_refused_by_name() -> None:
    message = refusal({"limits": {"max_rows": 5}}, environ={})
    assert message.startswith("limits.max_rows: unknown key")


def test_retention_is_off_unless_days_are_given() -> None:
    assert parse({}, environ={}).retention.days is None
    assert parse({"retention": {"days": 3}}, environ={}).retention.days == 3


@pytest.mark.parametrize("days", [0, -1, 36_501, "3", True])
def test_retention_days_out_of_range_or_of_a_wrong_type_are_refused(days: object) -> None:
    with pytest.raises(ConfigError, match=r"retention\.days: must be"):
        parse({"retention": {"days": days}}, environ={})


def test_max_batch_rows_defaults_to_each_dialects_own_cap() -> None:
    assert parse({}, environ={}).limits.max_batch_rows is None
    assert parse({"limits": {"max_batch_rows": 1_000_000}},
                 environ={}).limits.max_batch_rows == 1_000_000


@pytest.mark.parametrize("value", [0, -5, 100_000_001, "10", True])
def test_max_batch_rows_out_of_range_is_refused_by_name(value: Any) -> None:
    assert refusal({"limits": {"max_batch_rows": value}},
                   environ={}).startswith("limits.max_batch_rows: must be ")
