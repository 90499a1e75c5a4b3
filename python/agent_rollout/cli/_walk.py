"""The config files under a folder given to ``check``, found as ruff finds its files.

A folder is walked recursively for the suffixes ``check`` reads (``.yaml``,
``.yml``, ``.json``, ``.toml``; ``format_for_suffix``), in name order, each
folder's files before its subfolders. Left out:

- the folders of ``SKIPPED_FOLDERS`` (version control, virtual environments,
  caches, ``node_modules``: ruff's default ``exclude``, plus ``__pycache__``),
  at any depth, unless named on the command line;
- what git ignores (``.gitignore``, ``.git/info/exclude``, the global excludes),
  asked of ``git check-ignore --stdin`` in one call per repository under the
  folder given: the files of a submodule (or any nested repository: a folder
  holding ``.git``) are asked of that repository, as git has them, the others
  of the folder's own (git refuses a path inside a submodule, and would ignore
  none of the others); a nested repository the one holding it ignores is
  ignored whole. Outside a work tree, or without git, nothing is ignored. A
  tracked file is never ignored, as git has it;
- symbolic links to folders (not followed: no loops), and anything that is not
  a regular file (a FIFO named ``x.yaml``).

A subfolder that cannot be read is reported (``unreadable``), not passed over.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

from agent_rollout.config import format_for_suffix

__all__ = ["SKIPPED_FOLDERS", "Found", "config_files"]

SKIPPED_FOLDERS = frozenset(
    {
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".git-rewrite",
        ".hg",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".nox",
        ".pants.d",
        ".pyenv",
        ".pytest_cache",
        ".pytype",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        ".vscode",
        "__pycache__",
        "__pypackages__",
        "_build",
        "buck-out",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
    }
)
"""Folder names never walked into (ruff's default ``exclude``, and ``__pycache__``)."""

_GIT_TIMEOUT = 60.0


@dataclass
class Found:
    """What a folder holds: config files (paths as given, joined), folders not read."""

    files: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """``(folder, why)`` of each subfolder that could not be listed."""


def _shown(folder: str, relative: str) -> str:
    """The path as the user would write it: ``a.yaml`` under ``.``, ``configs/a.yaml``."""
    if folder in (".", "./"):
        return relative
    return os.path.join(folder, relative)


def _walk(folder: str, found: Found) -> tuple[list[str], set[str]]:
    """The candidates under ``folder``, relative to it, in order; and the subfolders that
    are repositories of their own (they hold ``.git``: a submodule's file, a clone's
    folder)."""
    relative: list[str] = []
    repositories: set[str] = set()
    todo = [""]
    while todo:
        here = todo.pop()
        try:
            with os.scandir(os.path.join(folder, here) if here else folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            found.unreadable.append((_shown(folder, here), exc.strerror or str(exc)))
            continue
        folders = []
        for entry in entries:
            if entry.name == ".git":
                if here:
                    repositories.add(here)
                continue
            path = os.path.join(here, entry.name) if here else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_FOLDERS:
                        folders.append(path)
                elif format_for_suffix(entry.name) is not None and entry.is_file():
                    relative.append(path)
            except OSError:
                continue  # gone, or a link we may not follow: not a config to read
        todo.extend(reversed(folders))
    return relative, repositories


def _repository(path: str, repositories: set[str]) -> str:
    """The innermost of ``repositories`` (``""``: the folder's own) that holds ``path``."""
    parent = os.path.dirname(path)
    while parent:
        if parent in repositories:
            return parent
        parent = os.path.dirname(parent)
    return ""


def _ignored(folder: str, relative: list[str], repositories: set[str]) -> set[str]:
    """Which of ``relative`` git ignores, each asked of the repository that holds it; all
    of a nested repository that the one holding it ignores (a clone in an ignored
    ``vendor/``)."""
    groups: dict[str, list[str]] = {}
    for path in [*relative, *sorted(repositories)]:
        groups.setdefault(_repository(path, repositories), []).append(path)
    ignored: set[str] = set()
    for root, paths in groups.items():
        if not root:
            ignored.update(_git_ignored(folder, paths))
            continue
        inner = [os.path.relpath(path, root) for path in paths]
        found = _git_ignored(os.path.join(folder, root), inner)
        ignored.update(os.path.join(root, path) for path in found)

    def hidden(path: str) -> bool:
        if path in ignored:
            return True
        root = _repository(path, repositories)
        while root:
            if root in ignored:
                return True
            root = _repository(root, repositories)
        return False

    return {path for path in relative if hidden(path)}


def _git_ignored(folder: str, relative: list[str]) -> set[str]:
    """Which of ``relative`` (paths under ``folder``) git ignores; empty outside git."""
    if not relative:
        return set()
    data = b"\0".join(os.fsencode(path) for path in relative) + b"\0"
    try:
        done = subprocess.run(
            ["git", "-C", folder, "check-ignore", "--stdin", "-z"],
            input=data,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return set()  # no git: nothing is ignored
    if done.returncode not in (0, 1):  # 128: not inside a work tree
        return set()
    return {os.fsdecode(path) for path in done.stdout.split(b"\0") if path}


def config_files(folder: str) -> Found:
    """The config files under ``folder`` that ``check`` reads (see the module's docstring)."""
    found = Found()
    relative, repositories = _walk(folder, found)
    ignored = _ignored(folder, relative, repositories)
    found.files = [_shown(folder, path) for path in relative if path not in ignored]
    return found
