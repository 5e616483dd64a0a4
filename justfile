# Relay's everyday commands. `just --list` shows them.
set shell := ["bash", "-cu"]

# Tools installed into the project's venv come first.
export PATH := justfile_directory() + "/.venv/bin:" + env_var("PATH")

default:
    @just --list

# Simulator + relayd + the sample batches, with live progress (all SIMULATED).
demo *ARGS:
    python -m relaytui.demo {{ARGS}}

# The whole test suite (unit, store, actors, api, end-to-end).
test *ARGS:
    python -m pytest -q {{ARGS}}

# Run the daemon (default: the demo config, pointing at the simulator).
serve config="sample_data/demo.toml":
    relayd serve --config {{config}}

# Run the simulated OpenAI-compatible upstream.
simulate port="9900" *ARGS:
    relayd simulate --port {{port}} {{ARGS}}

# Lint: ruff, then mypy over daemon and relaytui ([tool.mypy]); no formatter is enforced.
lint:
    ruff check daemon relaytui tests bench
    mypy

# Benchmarks on the SIMULATED upstream (--quick, --only NAME, --runs N); see bench/README.md.
bench *ARGS:
    python -m bench {{ARGS}}
