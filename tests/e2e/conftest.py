"""Fixtures of the end-to-end harness."""

from tests.e2e.harness import relayd_factory, sdk_simulator, simulator_factory

__all__ = ["relayd_factory", "sdk_simulator", "simulator_factory"]
