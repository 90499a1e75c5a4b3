"""Shared fixtures: every row test runs on both engines in the same session.

- ``engine``: the test runs once per available engine, that engine active.
- ``cli`` / ``cli_bytes``: ``agent-rollout ...`` run in this process, output captured
  at the file-descriptor level as str / bytes (``support.run_cli``).
- ``user_modules``: user code written to a temp folder, importable in this test only.
- The ``integration`` marker: every test of the modules in ``INTEGRATION_MODULES`` (live
  servers, Ray, ART, NeMo Gym, torch, the docs' snippets that run them). ``make test-fast``
  runs the rest, ``-m "not integration"``; ``make test`` and CI run everything.

The helpers behind them live in ``support.py``, which test modules import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from agent_rollout import _engine
from support import ENGINES, Cli, UserModules, run_cli, use_engine

settings.register_profile("quick", max_examples=60, deadline=None)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough-600", settings.get_profile("thorough"), max_examples=600)
settings.register_profile("thorough-400", settings.get_profile("thorough"), max_examples=400)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "quick")
"""``quick`` (60 examples a property), ``thorough`` (1,000 where it finds things, see
``THOROUGH_MODULES``; quick elsewhere) or ``thorough-everywhere``."""
if PROFILE == "thorough-everywhere":
    settings.register_profile("thorough-everywhere", settings.get_profile("thorough"))
settings.load_profile(PROFILE)

THOROUGH_MODULES = {
    "test_parity.py": "thorough",
    "test_float_output.py": "thorough-600",
    "test_jsonl_parity.py": "thorough-400",
}
"""Where many examples find things under ``thorough``: the two engines' agreement over rows
(1,000 examples), over float spellings (600: each example is many numbers; the module's
fixed sweep adds 50,000 bit patterns) and over JSONL files (400: each example writes and
reads files on both engines; the 60 s differential fuzz of every CI run adds some 8,500
files). Sized so CI stays inside its minutes on two cores. Other properties (schema,
loader, Arrow round trips) run quick: more examples there only cost time."""


INTEGRATION_MODULES = frozenset(
    {
        "test_backend_art.py",  # real ART rollouts against a policy server on 127.0.0.1
        "test_backend_openenv.py",  # the OpenEnv drill server
        "test_backend_ruler.py",  # ART + RULER + a judge server
        "test_bundled_configs.py",  # every bundled config run end to end, scripted servers
        "test_cli_run.py",  # agent-rollout run against live servers
        "test_cli_demo_live.py",  # agent-rollout demo with the OpenEnv drill server
        "test_demo_packages.py",  # the demo, live, on make demo's packages alone
        "test_docs_snippets.py",  # every snippet of the docs, servers and Ray included
        "test_lsp.py",  # the language server, driven over stdio by a real LSP client
        "test_lsp_neovim.py",  # the language server in a headless Neovim
        "test_nemo_gym_live.py",  # a real NeMo Gym
        "test_ray.py",  # a local Ray cluster
        "test_scripted_servers.py",  # the bundled HTTP servers
        "test_train_grpo.py",  # TRL's GRPOTrainer with torch
    }
)
"""Test modules that start servers, clusters or trainers: the ``integration`` tier."""


def pytest_configure(config: pytest.Config) -> None:
    missing = sorted(n for n in INTEGRATION_MODULES if not (Path(__file__).parent / n).is_file())
    if missing:  # a renamed module would silently join the fast tier
        raise pytest.UsageError(f"INTEGRATION_MODULES names missing test modules: {missing}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in INTEGRATION_MODULES:
            item.add_marker(pytest.mark.integration)


def _profile_for(path: Path) -> str:
    if PROFILE == "thorough":
        return THOROUGH_MODULES.get(path.name, "quick")
    return PROFILE


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[Any]:
    """Import each test module under its profile: ``@given`` takes the settings of that moment."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    settings.load_profile(_profile_for(collector.path))
    try:
        return (yield)
    finally:
        settings.load_profile(PROFILE)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the given engine active; restore the default afterwards."""
    with use_engine(request.param):
        yield request.param


@pytest.fixture
def user_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Path]]:
    """``user_modules(folder)``: modules in ``folder`` importable in this test only.

    The folder goes first on ``sys.path``; afterwards the modules imported
    from it leave ``sys.modules`` (the next test imports its own copy).
    """
    folders = UserModules(monkeypatch)
    yield folders.add
    folders.forget()


@pytest.fixture
def cli(capfd: pytest.CaptureFixture[str]) -> Cli:
    """``cli("check", ...)``: the command run in this process (``support.run_cli``); str output."""
    return partial(run_cli, capfd)


@pytest.fixture
def cli_bytes(capfdbinary: pytest.CaptureFixture[bytes]) -> Cli:
    """As ``cli``, with the output as bytes."""
    return partial(run_cli, capfdbinary)


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"agent_rollout engines under test: {', '.join(ENGINES)}; "
        f"default: {_engine.implementation()}; "
        f"hypothesis profile: {os.environ.get('HYPOTHESIS_PROFILE', 'quick')}"
    )
