# Relay's everyday commands. `just --list` shows them.
set shell := ["bash", "-cu"]

# Tools installed into the project's venv come first.
export PATH := justfile_directory() + "/.venv/bin:" + env_var("PATH")

default:
    @just --list

# Simulator + relayd + the sample batches, with live progress (all SIMULATED).
demo *ARGS:
    python -m relaytui.demo {{ARGS}}

# N relayd nodes sharing one PostgreSQL database, and a simulator (all SIMULATED); docs/deployment.md.
cluster n="3" url="postgresql://postgres@127.0.0.1:5432/test" *ARGS:
    python -m relaytui.cluster --nodes {{n}} --url {{quote(url)}} {{ARGS}}

# The whole test suite (unit, store, actors, api, end-to-end), on three workers, each
# test file on one of them (`just test -n 0` runs it in one process). Three on two
# cores: the end-to-end tests wait on their processes much of the time. The slowest
# kinds of file go first (`tests/conftest.py`), so no long one is left for the end.
# Compiled first: each relayd, simulator and relay the tests start then reads bytecode,
# also where PYTHONDONTWRITEBYTECODE keeps Python from caching it.
test *ARGS:
    python -m compileall -q daemon relaytui bench tests > /dev/null
    python -m pytest -q -rs -n 3 --dist loadfile --no-loadscope-reorder {{ARGS}}

# Run the daemon (default: the demo config, pointing at the simulator).
serve config="sample_data/demo.toml":
    relayd serve --config {{config}}

# Run the simulated OpenAI-compatible upstream (and its MCP tool server on port + 1).
simulate port="9900" *ARGS:
    relayd simulate --port {{port}} {{ARGS}}

# Lint: ruff, then mypy ([tool.mypy]: daemon and relaytui strict, all annotated); no formatter.
lint:
    ruff check daemon relaytui tests bench
    mypy

# Benchmarks on the SIMULATED upstream (--quick, --only NAME, --runs N); see bench/README.md.
bench *ARGS:
    python -m bench {{ARGS}}
