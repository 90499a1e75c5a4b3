"""The folder walk of `check DIR` (git's ignore rules read as files) against git's own.

Each case is a repository the bench makes in a temporary folder. Ours is
``cli._walk.config_files`` on it, in process: reading the rule files, compiling
their patterns, listing the folders, each verdict. Git's is ``git -c
core.fsmonitor=false ls-files -o --exclude-standard`` in the same repository (a
process: its start, some 2 ms, is in its time). Run it on purpose (it is not a
test):

    python benches/bench_walk.py [--cases review,distinct,limit,deep,10k] [--runs 3]

The cases:

- ``review``: the hostile ``.gitignore`` of the review, 1 MiB of one line
  ``*a*a...*ab`` (63 stars), over ten files named ``aaa...a0.yaml`` (200 ``a``);
- ``distinct``: the same, each line its own (``...b0q``, ``...b1q``...): past
  ``MAX_IGNORE_GLOB_BYTES``, so not applied (git still matches every line);
- ``limit``: as ``distinct``, cut at ``MAX_IGNORE_GLOB_BYTES``: applied;
- ``deep``: at the limit, lines ``**/*/*/.../b`` (30 ``*/``), the slowest kind
  found for us, over a file 100 folders deep (each folder matched once);
- ``10k``: 12,000 files in some 560 folders, 6,000 of them configs (1,600 in
  folders the rules ignore, 400 in folders ``build`` ruff leaves out), a
  Python project's ``.gitignore`` of 36 lines.

It prints, per case, the patterns, the config files found (ours) and the
files git lists, and the time of each (best of ``--runs``; one run when a run
takes over 10 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from agent_rollout._limits import MAX_IGNORE_FILE_BYTES
from agent_rollout.cli._walk import config_files

try:
    from agent_rollout._limits import MAX_IGNORE_GLOB_BYTES
except ImportError:  # a checkout from before the limit
    MAX_IGNORE_GLOB_BYTES = 32 * 1024

PYTHON_GITIGNORE = """\
__pycache__/
*.py[cod]
*$py.class
*.so
.Python
build/
develop-eggs/
dist/
downloads/
eggs/
.eggs/
lib64/
parts/
sdist/
var/
wheels/
*.egg-info/
.installed.cfg
*.egg
MANIFEST
*.manifest
*.spec
pip-log.txt
htmlcov/
.tox/
.coverage
.coverage.*
.cache
nosetests.xml
coverage.xml
*.cover
.hypothesis/
.pytest_cache/
outputs/
runs/**/checkpoint-*/
*.log
"""
"""Most of GitHub's ``Python.gitignore``, and two lines a training project adds."""


def _lines(make: Callable[[int], str], size: int) -> str:
    """Lines ``make(0)``, ``make(1)``... up to ``size`` bytes."""
    lines: list[str] = []
    total = 0
    while True:
        line = make(len(lines)) + "\n"
        if total + len(line) > size:
            return "".join(lines)
        lines.append(line)
        total += len(line)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _review_files(root: Path) -> None:
    _write(root, {f"{'a' * 200}{i}.yaml": "a: 1\n" for i in range(10)})


def _review(root: Path) -> None:
    _review_files(root)
    _write(root, {".gitignore": _lines(lambda i: "*a" * 63 + "b", MAX_IGNORE_FILE_BYTES)})


def _distinct(root: Path) -> None:
    _review_files(root)
    text = _lines(lambda i: "*a" * 63 + f"b{i}q", MAX_IGNORE_FILE_BYTES)
    _write(root, {".gitignore": text})


def _limit(root: Path) -> None:
    _review_files(root)
    _write(root, {".gitignore": _lines(lambda i: "*a" * 63 + f"b{i}q", MAX_IGNORE_GLOB_BYTES)})


def _deep(root: Path) -> None:
    _write(root, {"a/" * 100 + "c.yaml": "a: 1\n"})
    text = _lines(lambda i: "**/" + "*/" * 30 + f"b{i:x}", MAX_IGNORE_GLOB_BYTES)
    _write(root, {".gitignore": text})


def _ten_thousand(root: Path) -> None:
    """12,000 files: 500 folders of 20 (8 configs each), 20 of 100 configs, mostly ignored."""
    files = {".gitignore": PYTHON_GITIGNORE}
    kinds = ["yaml", "json", "toml", "yml", "py", "py", "txt", "md", "log", "pyc"]
    for folder in range(500):
        where = f"pkg{folder // 25}/mod{folder % 25}"
        for i in range(20):
            files[f"{where}/f{i}.{kinds[i % 10]}"] = "a: 1\n"
    ignored = ["build", "outputs", "runs/a/checkpoint-1", "x.egg-info", "y.egg-info"]
    for folder in range(20):
        for i in range(100):
            files[f"ign{folder}/{ignored[folder % 5]}/f{i}.yaml"] = "a: 1\n"
    _write(root, files)


CASES: dict[str, Callable[[Path], None]] = {
    "review": _review,
    "distinct": _distinct,
    "limit": _limit,
    "deep": _deep,
    "10k": _ten_thousand,
}


def _git_files(listing: list[str]) -> list[bytes]:
    """The files git lists, not ignored: ``git ls-files -o --exclude-standard``."""
    done = subprocess.run([*listing, "--exclude-standard", "-z"], capture_output=True, check=True)
    return [name for name in done.stdout.split(b"\0") if name]


def _best(runs: int, call: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = call()
        took = time.perf_counter() - started
        best = min(best, took)
        if took > 10:
            break
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    git = shutil.which("git")
    if git is None:
        raise SystemExit("bench_walk: git is not installed")
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        print(f"{'case':10} {'patterns':>9} {'ours':>16} {'git':>16}")
        for name in args.cases.split(","):
            root = Path(scratch) / name
            root.mkdir()
            subprocess.run([git, "init", "-q", str(root)], check=True)
            CASES[name](root)
            rules = (root / ".gitignore").read_text("utf-8").splitlines()
            listing = [git, "-c", "core.fsmonitor=false", "-C", str(root), "ls-files", "-o"]
            ours, found = _best(args.runs, partial(config_files, str(root)))
            theirs, listed = _best(args.runs, partial(_git_files, listing))
            count = len(getattr(found, "files", []))
            note = " (not applied)" if getattr(found, "not_applied", None) else ""
            listed_count = len(listed) if isinstance(listed, list) else 0
            print(
                f"{name:10} {len(rules):9,} {count:6,} in {ours:6.2f} s"
                f" {listed_count:6,} in {theirs:6.2f} s{note}",
                flush=True,
            )


if __name__ == "__main__":
    main()
