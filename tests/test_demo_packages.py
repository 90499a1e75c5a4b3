"""``make demo`` installs openenv-core without the packages ``scripts/demo-excludes.txt``
names (gradio and with it numpy, pandas, pillow; huggingface-hub; openai; typer): 73
packages instead of 101. The demo must still run its OpenEnv rollout live.

Here the installed ``agent-rollout demo`` runs in a process that can import only what
that install would hold: the distributions reachable from the demo's requirements
(``scripts/requirements.py openenv`` and maturin) through the installed packages'
metadata, leaving out the excluded ones and whatever only they bring in. Any other
installed package's modules raise ``ModuleNotFoundError``, as they would there. CI also
installs exactly that set in a fresh venv and runs the demo (``scripts/check_extras.sh``).
One run covers both engines: the demo times each of them itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from support import ENGINES, PURE_PYTHON_ENV

REPO = Path(__file__).resolve().parent.parent
EXCLUDES = REPO / "scripts" / "demo-excludes.txt"

pytestmark = [
    pytest.mark.skipif(not EXCLUDES.exists(), reason="needs the source tree's scripts/"),
    pytest.mark.skipif(
        importlib.util.find_spec("openenv") is None, reason="openenv-core is not installed"
    ),
]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def excluded() -> set[str]:
    lines = EXCLUDES.read_text(encoding="utf-8").splitlines()
    return {canonical(line.split("#", 1)[0].strip()) for line in lines if line.split("#", 1)[0]}


def demo_set() -> set[str]:
    """The installed distributions a `make demo` install would hold, by canonical name."""
    from packaging.requirements import Requirement

    requirements = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "requirements.py"), "openenv"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    todo = [Requirement(line) for line in [*requirements, "maturin"] if line.strip()]
    left_out, found = excluded(), {"agent-rollout"}
    while todo:
        requirement = todo.pop()
        name = canonical(requirement.name)
        if name in found or name in left_out:
            continue
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # not needed here (a marker for another Python), or maturin's binary
        found.add(name)
        for extra in [*requirement.extras, ""]:
            for needed in dist.requires or []:
                sub = Requirement(needed)
                if not sub.marker or sub.marker.evaluate({"extra": extra}):
                    todo.append(Requirement(str(sub).split(";", 1)[0]))
    return found


# sitecustomize for the demo's process: a finder that refuses the top-level modules of
# every distribution outside the demo's set (modules some allowed one also provides pass).
BLOCKER = """
import importlib.abc, importlib.metadata, json, os, re, sys

allowed = set(json.loads(os.environ["DEMO_SET"]))
canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower()
blocked = {
    module
    for module, dists in importlib.metadata.packages_distributions().items()
    if not any(canonical(d) in allowed for d in dists)
}


class Outside(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in make demo's set)")
        return None


sys.meta_path.insert(0, Outside())
"""


def run_demo(allowed: set[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """The installed ``agent-rollout demo --rows 1000``, able to import ``allowed`` alone."""
    (folder / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    env["DEMO_SET"] = json.dumps(sorted(allowed))
    env.pop(PURE_PYTHON_ENV, None)
    # The installed command where there is one (make's .venv), else the module.
    command = Path(sys.prefix, "bin", "agent-rollout")
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "agent_rollout"]
    return subprocess.run(
        [*argv, "demo", "--rows", "1000"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_demo_runs_live_on_the_demo_packages_alone(tmp_path: Path) -> None:
    allowed = demo_set()
    assert {"openenv-core", "fastapi", "uvicorn", "fastmcp"} <= allowed, allowed
    assert not {"gradio", "numpy", "pandas", "openai"} & allowed, allowed
    ran = run_demo(allowed, tmp_path)
    assert ran.returncode == 0, ran.stderr
    live = "2. rollout 6 rows from 6 seed prompts, live, OpenEnv drill server"
    assert live in ran.stdout, (ran.stdout, ran.stderr)
    assert all(f"   {engine} " in ran.stdout for engine in ENGINES), ran.stdout
    # The blocker was in force: a package outside the set does not import in that process.
    probe = subprocess.run(
        [sys.executable, "-c", "import gradio"],
        env={
            **os.environ,
            "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "DEMO_SET": json.dumps(sorted(allowed)),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert "not in make demo's set" in probe.stderr, probe.stderr


def test_an_openenv_that_cannot_import_leaves_the_demo_offline(tmp_path: Path) -> None:
    """Should a later openenv-core need a package the demo's install leaves out, the demo
    runs its rollout offline and names the module (it stopped with an internal error)."""
    ran = run_demo(demo_set() - {"websockets"}, tmp_path)
    assert ran.returncode == 0, ran.stderr
    offline = "offline (openenv-core cannot be imported: No module named 'websockets'"
    assert offline in ran.stdout, (ran.stdout, ran.stderr)
    assert "3. normalise 1,000 message rows" in ran.stdout, ran.stdout
