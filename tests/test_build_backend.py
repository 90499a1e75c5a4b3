"""The in-tree build backend (build_backend/) builds through maturin without maturin's
warning that ``build-backend`` is not ``maturin``: the backend wraps maturin, so the
warning (pip would not use maturin) does not apply, and it used to show on every build."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUIET = "MATURIN_NO_MISSING_BUILD_BACKEND_WARNING"

pytestmark = [
    pytest.mark.skipif(
        not (REPO / "build_backend").is_dir(), reason="needs the source tree's build backend"
    ),
    pytest.mark.skipif(importlib.util.find_spec("maturin") is None, reason="needs maturin"),
]

BUILD_SDIST = """
import sys
sys.path.insert(0, "build_backend")
import agent_rollout_build
print(agent_rollout_build.build_sdist(sys.argv[1]))
"""


def test_a_build_through_the_backend_does_not_warn(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != QUIET}
    built = subprocess.run(
        [sys.executable, "-c", BUILD_SDIST, str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / built.stdout.splitlines()[-1]).is_file(), built.stdout
    assert "build-backend" not in built.stderr, built.stderr
