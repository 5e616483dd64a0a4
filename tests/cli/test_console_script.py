"""The installed `relay` console script, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relaytui.progress import STATUS_WIDTH
from tests.e2e.harness import Relayd, rows

pytestmark = pytest.mark.e2e

RELAY = Path(sys.executable).parent / "relay"


def test_the_console_script_submits_waits_and_lists(shared_relayd: Relayd, workspace: str,
                                                    write: Callable[[str, Any], Path],
                                                    tmp_path: Path) -> None:
    env = {**os.environ, "RELAY_URL": shared_relayd.url,
           "RELAY_API_KEY": shared_relayd.key(workspace),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    path = write("rows.jsonl", rows(5))
    done = subprocess.run([str(RELAY), "submit", str(path), "--model", "gpt-4o-mini",
                           "--wait", "--json"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert (job["status"], job["completed"]) == ("completed", 5)
    # A pipe gets lines, no \r.
    assert f"{'completed':<{STATUS_WIDTH}} [####################] 5/5" in done.stderr
    assert "\r" not in done.stderr

    listed = subprocess.run([str(RELAY), "ls"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[1].split()[:2] == [job["id"], "completed"]

    missing = subprocess.run([str(RELAY), "ls"], env={**env, "RELAY_API_KEY": ""},
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
