"""`relayd workspaces budget` and `relayd workspaces list`, in process on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon import cli


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "relay.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    return str(path)


def test_a_budget_is_set_listed_and_cleared(config: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["workspaces", "budget", "acme", "--usd", "500", "--period", "day",
                     "--config", config]) == 0
    assert cli.main(["workspaces", "budget", "other", "--usd", "12.50",
                     "--config", config]) == 0  # the period defaults to month
    assert cli.main(["workspaces", "list", "--config", config]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["acme: budget $500.00 a day, $0.00 spent",
                       "other: budget $12.50 a month, $0.00 spent"]
    assert out[2].split()[-2:] == ["BUDGET", "SPENT"]
    assert out[3].split()[-2:] == ["$500.00/day", "$0.00"]
    assert out[4].split()[-2:] == ["$12.50/month", "$0.00"]

    assert cli.main(["workspaces", "budget", "acme", "--clear", "--config", config]) == 0
    assert capsys.readouterr().out == "acme: no budget\n"


@pytest.mark.parametrize(("args", "says"), [
    (["--usd", "-3"], "--usd: '-3' is not an amount of USD of at least 0"),
    (["--usd", "ten"], "--usd: 'ten' is not an amount of USD"),
    ([], "give --usd AMOUNT (with --period), or --clear"),
    (["--usd", "5", "--clear"], "give --usd AMOUNT (with --period), or --clear"),
])
def test_a_bad_budget_is_refused_with_exit_2(config: str, args: list[str], says: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["workspaces", "budget", "acme", *args, "--config", config]) == 2
    assert says in capsys.readouterr().err
