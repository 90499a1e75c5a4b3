"""The Makefile's ``test`` and ``test-fast`` targets leave the release build in ``.venv``,
where ``make demo`` and a user's own scripts run: ``make test``'s suite runs on the dev
profile (debug assertions on, several times slower) and it builds the release engine again
at its end; ``make test-fast`` runs on the release build.
``RESTORE_RELEASE=no`` leaves that out (``.ci/run``). Read from ``make -n`` (a dry run:
the recursive ``$(MAKE)`` lines print their commands; nothing is built or installed).

``make test``'s log: the dev build once, and each step's ``== header`` once, over that
step's own commands (read from a dry run in a copy of the Makefile whose ``.venv`` is set
up, as after ``make demo``). Installing the development set over the demo's packages names
each package it changed (``scripts/requirements.py --changed``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (REPO / "Makefile").is_file() or shutil.which("make") is None,
    reason="needs the source tree's Makefile and GNU make",
)


def dry_run(*args: str, cwd: Path = REPO) -> list[str]:
    """The lines ``make -n ARGS...`` prints in ``cwd``."""
    # Not the variables of a make that runs this test (.ci/run: make test RESTORE_RELEASE=no).
    skip = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "RESTORE_RELEASE")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dry.stdout.splitlines()


def engine_builds(*args: str, cwd: Path = REPO) -> list[str]:
    """The ``maturin develop`` commands ``make -n ARGS...`` would run, in order."""
    return [line.strip() for line in dry_run(*args, cwd=cwd) if "maturin develop" in line]


def set_up_copy(folder: Path) -> Path:
    """The Makefile and what its install steps read, copied into ``folder``, with a
    ``.venv`` whose stamps say the demo's and the development packages are in."""
    for name in (
        "Makefile",
        "pyproject.toml",
        "scripts/requirements.py",
        "scripts/demo-excludes.txt",
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, folder / name)
    stamps = re.findall(r"^UV_FLOOR := (\S+)", (REPO / "Makefile").read_text(), re.M)
    later = time.time() + 60
    for stamp in [".deps-dev", ".deps-demo", *(f".uv-{floor}" for floor in stamps)]:
        path = folder / ".venv" / stamp
        path.parent.mkdir(exist_ok=True)
        path.touch()
        os.utime(path, (later, later))
    return folder


def test_make_test_ends_with_the_release_build() -> None:
    builds = engine_builds("test")
    assert builds, "make -n test runs no maturin develop"
    assert builds[-1].endswith("maturin develop --uv --release"), builds
    assert any(not build.endswith("--release") for build in builds[:-1]), builds  # the suite's


def test_make_test_fast_runs_on_the_release_build() -> None:
    builds = engine_builds("test-fast")
    assert builds and all(build.endswith("maturin develop --uv --release") for build in builds)


def test_restore_release_no_keeps_the_dev_build() -> None:
    builds = engine_builds("test", "RESTORE_RELEASE=no")
    assert builds and not any(build.endswith("--release") for build in builds), builds


def test_ci_leaves_the_restore_out() -> None:
    """CI's clone is thrown away and its wheels are release builds: no release build here."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test RESTORE_RELEASE=no" in script


def test_make_test_builds_the_dev_engine_once(tmp_path: Path) -> None:
    """One dev build for lint, the Rust tests and the suite (it ran twice: two headers)."""
    builds = engine_builds("test", cwd=set_up_copy(tmp_path))
    assert [b.split("maturin ", 1)[1] for b in builds] == ["develop --uv", "develop --uv --release"]


HEADER = re.compile(r'^(?:echo "|@?)== ')


def test_make_test_headers_each_once_over_their_own_commands(tmp_path: Path) -> None:
    lines = dry_run("test", cwd=set_up_copy(tmp_path))
    # The recipe of `test` itself comes first (it holds the recursive $(MAKE) lines).
    recipe_end = next(i for i, line in enumerate(lines) if line.strip() == "exit $status")
    recipe, log = lines[: recipe_end + 1], [line for line in lines[recipe_end + 1 :] if line]
    parallel = [line for line in recipe if "-j" in line and "lint" in line]
    # Each target's output whole, its header first: not each command's, under another's header.
    assert parallel and all("--output-sync=target" in line for line in parallel), recipe
    assert HEADER.match(log[0]), log[:3]
    headers = [line for line in log if HEADER.match(line)]
    assert len(headers) == len(set(headers)), headers
    steps = "mypy, cargo fmt, clippy, ruff, stubtest, the release workflow, the Rust tests"
    for step in [
        *steps.split(", "),
        "NeMo Gym's example data",
        "the test suite",
        "build (release)",
    ]:
        assert sum(f"== {step}" in header for header in headers) == 1, (step, headers)


def test_the_dev_set_names_each_package_it_changed(tmp_path: Path) -> None:
    script = [sys.executable, str(REPO / "scripts" / "requirements.py"), "--changed"]
    before = tmp_path / "before.txt"
    before.write_text("openai==3.63.0\nopentelemetry-api==1.45.3\npydantic==2.14.4\n-e file:///x\n")
    after = "openai==2.54.0\nOpenTelemetry_API==1.45.3\npydantic==2.14.4\nray==2.60.0\n"
    said = subprocess.run(
        [*script, str(before), "-"], input=after, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert said[1:] == ["   openai 3.63.0 -> 2.54.0"], said
    assert said[0].startswith("== the development set changed 1 package(s)"), said
    unchanged = subprocess.run(
        [*script, str(before), str(before)], capture_output=True, text=True, check=True
    )
    assert unchanged.stdout == ""
    # The Makefile pipes the listing after the install into it, against the one before.
    install = dry_run("-B", ".venv/.deps-dev", cwd=set_up_copy(tmp_path / "copy"))
    freeze = [i for i, line in enumerate(install) if "pip freeze" in line]
    dev = next(i for i, line in enumerate(install) if "-r .venv/requirements-dev.txt" in line)
    assert len(freeze) == 2 and freeze[0] < dev < freeze[1], install
    assert "--changed .venv/installed-before-dev.txt -" in install[freeze[1] + 1], install
