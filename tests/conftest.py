"""Shared fixtures: every row test runs on both engines in the same session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from agent_rollout import _engine

settings.register_profile("quick", max_examples=60, deadline=None)
settings.register_profile(
    "thorough",
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))

ENGINES = ["python", "rust"] if _engine.native_available() else ["python"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the given engine active; restore the default afterwards."""
    previous = _engine.set_engine(request.param)
    try:
        yield request.param
    finally:
        _engine.set_engine(previous)


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"agent_rollout engines under test: {', '.join(ENGINES)}; "
        f"default: {_engine.implementation()}; "
        f"hypothesis profile: {os.environ.get('HYPOTHESIS_PROFILE', 'quick')}"
    )
