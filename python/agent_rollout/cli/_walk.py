"""The config files under a folder given to ``check``, found as ruff finds its files.

A folder is walked recursively for the suffixes ``check`` reads (``.yaml``,
``.yml``, ``.json``, ``.toml``; ``format_for_suffix``), in name order, each
folder's files before its subfolders. Left out:

- the folders of ``SKIPPED_FOLDERS`` (version control, virtual environments,
  caches, ``node_modules``: ruff's default ``exclude``, plus ``__pycache__``),
  at any depth, unless named on the command line;
- what git ignores (``.gitignore``, ``.git/info/exclude``, the global excludes),
  as ``git check-ignore`` would answer, read from those files by ``cli._ignore``:
  the walk runs no program at all. A folder's git config can name commands
  that git runs on its own (``core.fsmonitor`` for any look at the work tree,
  hooks, a pager, diff drivers, aliases), and checking files must never run
  anything a folder carries; reading the rules as text also takes no file
  name for a pathspec (``:(glob)x.yaml`` is a file like any other). The
  repository is the one holding the folder given (found upwards, as git finds
  it); the files of a submodule, or of any nested repository (a folder holding
  a ``.git`` folder, or a ``.git`` file pointing to its git folder, as
  submodules and linked work trees have), follow that repository's rules, as
  git has them, the others the rules of the one around them; a nested
  repository the one holding it ignores is ignored whole. A folder git
  ignores is not walked into, unless the index tracks a config file (or a
  submodule) below it. The folder given is the user's to check, as ruff has
  a folder named on its command line: neither it nor a folder above it
  counts as ignored; below it the rules apply (its own ``.gitignore``, and
  the patterns above that match paths below, ``out/*.yaml``). Outside a work
  tree nothing is ignored (``git check-ignore`` ignores nothing there, and
  no ``.gitignore`` is read). A tracked file is never ignored, as git has
  it: the index says which are (an index that cannot be read tracks
  nothing; see ``cli._ignore``). An ignore file whose wildcard patterns are
  too many to match in bounded time is not applied, and is named in
  ``Found.not_applied`` (``MAX_IGNORE_GLOB_BYTES``);
- symbolic links, to folders (no loops) and to files alike: not followed, as
  ripgrep does by default. A link inside the folder can lead anywhere
  (``/etc/passwd``, another user's config), and ``check --fix`` would write
  there. A link named on the command line is the user's choice: a folder's
  is walked, a file's is read (``cli.check``; ``--fix`` writes through it);
- anything that is not a regular file (a FIFO named ``x.yaml``).

A subfolder that cannot be read is reported (``unreadable``), not passed over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from agent_rollout.cli._ignore import Repository, nested_repository, repository_around
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


@dataclass
class Found:
    """What a folder holds: config files (paths as given, joined), folders not read."""

    files: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """``(folder, why)`` of each subfolder that could not be listed."""
    not_applied: list[str] = field(default_factory=list)
    """Ignore files whose rules were not applied: with the others that apply to the
    same paths, more wildcard patterns than ``MAX_IGNORE_GLOB_BYTES``."""


def _shown(folder: str, relative: str) -> str:
    """The path as the user would write it: ``a.yaml`` under ``.``, ``configs/a.yaml``."""
    if folder in (".", "./"):
        return relative
    return os.path.join(folder, relative)


def _wanted(name: bytes) -> bool:
    """Whether a path of the index is one the walk may ask about (a config file's)."""
    return format_for_suffix(os.fsdecode(name.rpartition(b"/")[2])) is not None


def _child(rule: bytes, name: str) -> bytes:
    """The path of ``name`` under ``rule`` as its repository's rules see it."""
    return rule + b"/" + os.fsencode(name) if rule else os.fsencode(name)


def config_files(folder: str) -> Found:
    """The config files under ``folder`` that ``check`` reads (see the module's docstring)."""
    found = Found()
    around = repository_around(folder, _wanted)
    repository, rule = around if around is not None else (None, b"")
    if repository is not None:
        repository.mark_named(rule)
    repositories = [repository]
    # Each folder to list: where it is (under ``folder``), its repository (None: no
    # rules apply) and its path in that repository's work tree.
    todo: list[tuple[str, Repository | None, bytes]] = [("", repository, rule)]
    while todo:
        here, repository, rule = todo.pop()
        where = os.path.join(folder, here) if here else folder
        try:
            with os.scandir(where) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            found.unreadable.append((_shown(folder, here), exc.strerror or str(exc)))
            continue
        if here and any(entry.name == ".git" for entry in entries):
            nested = nested_repository(where, _wanted)
            if nested is not None:
                repository, rule = nested, b""
                repositories.append(nested)
        folders = []
        for entry in entries:
            if entry.name == ".git":
                continue
            path = os.path.join(here, entry.name) if here else entry.name
            inner = _child(rule, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in SKIPPED_FOLDERS:
                        continue
                    if repository is None or not repository.ignored(inner, is_dir=True):
                        folders.append((path, repository, inner))
                elif format_for_suffix(entry.name) is not None and entry.is_file(
                    follow_symlinks=False
                ):
                    if repository is None or not repository.ignored(inner, is_dir=False):
                        found.files.append(_shown(folder, path))
            except OSError:
                continue  # gone since the listing: not a config to read
        todo.extend(reversed(folders))
    for each in repositories:
        if each is not None:
            found.not_applied.extend(each.not_applied)
    return found
