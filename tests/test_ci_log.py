"""A quiet CI log: each line ``.ci/run`` printed that said nothing, silenced at its cause.

- The NeMo Gym venv (``scripts/setup_nemo_gym_venv.sh``) runs pytest with this project's
  pytest settings, which name pytest-asyncio's option: without that plugin pytest warned
  ``PytestConfigWarning: Unknown config option: asyncio_default_fixture_loop_scope``. Here
  pytest runs with the plugins of that venv's test packages alone, as it does there.
- twine colours its verdicts whether or not it writes to a terminal: ``build_wheels.sh``
  runs it with ``--no-color`` (checked where twine is installed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GYM_SETUP = REPO / "scripts" / "setup_nemo_gym_venv.sh"
BUILD_WHEELS = REPO / "scripts" / "build_wheels.sh"

pytestmark = pytest.mark.skipif(
    not GYM_SETUP.exists() or not (REPO / "pyproject.toml").exists(),
    reason="needs the source tree's scripts/ and pyproject.toml",
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def gym_test_packages() -> set[str]:
    found = re.search(r"^test_deps=\(([^)]*)\)", GYM_SETUP.read_text(encoding="utf-8"), re.M)
    assert found, "setup_nemo_gym_venv.sh names its test packages in test_deps=(...)"
    return {canonical(name) for name in found.group(1).split()}


def test_the_gym_venvs_pytest_knows_every_option_of_our_settings(tmp_path: Path) -> None:
    packages = gym_test_packages()
    for name in packages:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            # One without a pytest plugin (psutil) changes nothing here; a plugin would.
            if name.startswith("pytest-") or name == "hypothesis":
                pytest.skip(f"{name} (a Gym venv test package) is not installed here")
    plugins = [
        entry.value
        for entry in metadata.entry_points(group="pytest11")
        if entry.dist is not None and canonical(entry.dist.name) in packages
    ]
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    for plugin in plugins:
        argv += ["-p", plugin]
    argv += ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO)]
    argv.append(str(REPO / "tests" / "test_nemo_gym_live.py"))
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    ran = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PytestConfigWarning" not in ran.stdout + ran.stderr, ran.stdout + ran.stderr


def twine_line() -> list[str]:
    """The twine command of build_wheels.sh, its arguments up to the files."""
    for line in BUILD_WHEELS.read_text(encoding="utf-8").splitlines():
        if line.startswith('"$tools_bin/twine"'):
            return line.split('"$OUT"', 1)[0].split()[1:]
    raise AssertionError("build_wheels.sh runs no twine check")


@pytest.mark.skipif(shutil.which("twine") is None, reason="twine is not installed here")
def test_twine_checks_a_wheel_without_colour_codes(tmp_path: Path) -> None:
    wheel = tmp_path / "tiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tiny/__init__.py", "")
        info = "tiny-0.1.dist-info"
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        archive.writestr(f"{info}/RECORD", "")
    argv = [str(shutil.which("twine")), *twine_line(), str(wheel)]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert "Checking" in ran.stdout + ran.stderr, (argv, ran.stdout, ran.stderr)
    assert "\x1b[" not in ran.stdout + ran.stderr, (argv, ran.stdout, ran.stderr)
