"""Fixtures the unit tests share: the simulator's app on aiohttp's test client."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from daemon.simulator import SimOptions, build_app


@pytest.fixture
def make_sim(aiohttp_client: Any) -> Any:
    """`await make_sim(**SimOptions fields)`: a test client on a fresh simulator."""
    async def make(**overrides: Any) -> TestClient:
        return await aiohttp_client(build_app(SimOptions(**overrides)))
    return make
