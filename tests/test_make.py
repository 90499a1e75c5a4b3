"""The Makefile's ``test`` and ``test-fast`` targets leave the release build in ``.venv``,
where ``make demo`` and a user's own scripts run: ``make test``'s suite runs on the dev
profile (debug assertions on, several times slower) and it builds the release engine again
at its end; ``make test-fast`` runs on the release build.
``RESTORE_RELEASE=no`` leaves that out (``.ci/run``). Read from ``make -n`` (a dry run:
the recursive ``$(MAKE)`` lines print their commands; nothing is built or installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (REPO / "Makefile").is_file() or shutil.which("make") is None,
    reason="needs the source tree's Makefile and GNU make",
)


def engine_builds(*args: str) -> list[str]:
    """The ``maturin develop`` commands ``make -n ARGS...`` would run, in order."""
    # Not the variables of a make that runs this test (.ci/run: make test RESTORE_RELEASE=no).
    skip = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "RESTORE_RELEASE")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [line.strip() for line in dry.stdout.splitlines() if "maturin develop" in line]


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
