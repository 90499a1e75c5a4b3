"""git's ignore rules, read from the files that hold them: what ``git check-ignore``
answers, without running git or anything else.

``check`` walks a user's folder, and a folder can carry commands: git runs a
repository's ``core.fsmonitor`` for any command that looks at the work tree, and
its config can name hooks, a pager, diff drivers, aliases. Reading the rules as
text (as ruff and ripgrep do, with the ``ignore`` crate) runs none of them, and
takes no file name for a pathspec (``:(glob)x.yaml`` is a file like any other).

As ``man gitignore`` says and git 2.47 does:

- a line: blank lines and ``#`` comments skipped; ``\\#`` and ``\\!`` for names
  that begin so; trailing spaces dropped unless escaped (``\\ ``); the ``\\r``
  of a CRLF line and a UTF-8 byte order mark dropped; ``!`` negates; a trailing
  ``/`` matches folders only; a ``/`` at the start or in the middle ties the
  pattern to the folder of its file, else it matches a name at any depth below;
  the rest is a glob (``cli._wildmatch``: ``*``, ``?``, ``[...]``, ``**``), with
  git's quirks (the leading literal part is compared first, so ``d/a**``
  matches ``d/a/x/y``);
- the files: each folder's ``.gitignore`` (not read through a symbolic link),
  then the repository's ``info/exclude``, then the global excludes file
  (``core.excludesFile`` from git's config files, a relative path taken from
  the work tree's top; else ``$XDG_CONFIG_HOME/git/ignore`` or
  ``~/.config/git/ignore``). The deepest ``.gitignore`` decides first, and in
  a file its last matching line; below a folder that is ignored everything
  is, whatever a ``!`` line says (git does not look inside, nor read the
  ``.gitignore`` files there), except above and at the folder the user named
  (``Repository.mark_named``). The files that apply to a path may hold at most
  ``MAX_IGNORE_GLOB_BYTES`` of wildcard patterns together, the bound on what
  matching a path costs (a pattern repeated counts once): one that would pass
  it is not applied (``Repository.not_applied``);
- a tracked file is never ignored: a path is tracked if the index holds it or
  a path under it (a submodule, a sparse index's folder). An index that cannot
  be read (corrupt, another version, a split index, past
  ``MAX_GIT_INDEX_BYTES``) tracks nothing: what the rules ignore stays out,
  tracked or not (git would refuse to answer, and nothing would be ignored);
- the repository: found as git finds it, from the folder up to the first
  ``.git`` (a git folder, or a ``gitdir:`` file as a submodule or a linked
  work tree has), stopping at a file system's boundary (unless
  ``GIT_DISCOVERY_ACROSS_FILESYSTEM``) and at ``GIT_CEILING_DIRECTORIES``; a
  linked work tree shares its main one's config and ``info/exclude`` and keeps
  its own index. Outside a work tree (no repository, a bare one, the inside of
  a git folder) nothing is ignored, as ``git check-ignore`` ignores nothing
  there; nor below a ``.git`` file that leads to no repository (git fails there).

Left out, on purpose: ``core.ignoreCase`` (names match case-sensitively, git's
default on Linux; where a repository sets it, as git does on case-insensitive
file systems, git would also match ``Out/`` to ``out/``); a ``.gitignore`` a
sparse checkout leaves only in the index (git reads it from the object store);
the ownership check (``safe.directory``: git refuses a repository another user
owns because its config could run commands; reading the rules runs none); and
the variables that make git look elsewhere (``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_INDEX_FILE``): the folders alone say where repositories are. How each
file is read (only regular files, bounded; what a broken one gives):
``cli._gitfiles``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from agent_rollout._limits import MAX_IGNORE_FILE_BYTES, MAX_IGNORE_GLOB_BYTES
from agent_rollout.cli._gitfiles import (
    NotARepository,
    Tracked,
    common_dir,
    env_true,
    expand_path,
    git_dir_of,
    is_bare,
    is_git_dir,
    is_true,
    read_config,
    read_index,
    read_regular,
    user_config_files,
    xdg_config,
)
from agent_rollout.cli._wildmatch import Glob, compile_glob

__all__ = ["Repository", "nested_repository", "repository_around"]

_SPECIAL = re.compile(rb"[*?\[\\]")
_SLASH = ord("/")
_BACKSLASH = ord("\\")


# ---- patterns --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    """One line of an ignore file, parsed as git's ``parse_path_pattern`` does."""

    text: bytes
    """Without its ``!`` and its trailing ``/``."""
    negative: bool
    folders_only: bool
    anywhere: bool
    """No ``/`` in ``text``: matched against a path's last name, at any depth."""
    literal: int
    """How many leading bytes of ``text`` hold no wildcard (git's ``nowildcardlen``)."""
    ends_with: bool
    """``*`` then no wildcard: a suffix test (git's ``PATTERN_FLAG_ENDSWITH``)."""
    base: bytes
    """The folder of the file it comes from, in the work tree (``b""``: the top)."""

    @property
    def wild(self) -> bytes:
        """What ``cli._wildmatch`` matches: the name's pattern, or the path's after its
        literal part (git's ``match_pathname`` compares that part first, then matches
        the rest as a pattern of its own: ``d/a**`` matches ``d/a/x/y``); ``b""`` for a
        plain name or path, or a suffix."""
        if self.anywhere:
            plain = self.literal == len(self.text) or self.ends_with
            return b"" if plain else self.text
        return self.text[self.literal :]

    @property
    def start(self) -> bytes:
        """What a path must begin with: the folder of the file, then the literal part."""
        text, literal = self.text, self.literal
        if text[:1] == b"/":
            text, literal = text[1:], literal - 1
        return (self.base + b"/" if self.base else b"") + text[:literal]


def _trim_trailing_spaces(line: bytes) -> bytes:
    """The line without its trailing spaces, unless the first of them is escaped."""
    if not line.endswith(b" "):
        return line
    first_space = -1
    i, end = 0, len(line)
    while i < end:
        c = line[i]
        if c == 0x20:
            if first_space < 0:
                first_space = i
        elif c == _BACKSLASH:
            i += 1
            if i >= end:
                return line
            first_space = -1
        else:
            first_space = -1
        i += 1
    return line if first_space < 0 else line[:first_space]


def _pattern(line: bytes, base: bytes) -> _Pattern | None:
    """The pattern of one line (already trimmed); None for one that matches nothing."""
    negative = line[:1] == b"!"
    body = line[1:] if negative else line
    length = len(body)
    folders_only = length > 0 and body[-1] == _SLASH
    if folders_only:
        length -= 1
    text = body[:length]
    if not text:
        return None
    special = _SPECIAL.search(body)
    literal = min(special.start() if special else len(body), length)
    rest = _SPECIAL.search(body, 1)
    ends_with = body[:1] == b"*" and rest is None
    anywhere = b"/" not in text
    return _Pattern(text, negative, folders_only, anywhere, literal, ends_with, base)


def _patterns(data: bytes, base: bytes) -> list[_Pattern]:
    """The patterns of an ignore file's bytes, in order (git's ``add_patterns_from_buffer``)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    found = []
    for raw in data.split(b"\n"):
        if not raw or raw[0] == ord("#"):
            continue
        line = raw[:-1] if raw.endswith(b"\r") else raw
        line = _trim_trailing_spaces(line.split(b"\0", 1)[0])
        pattern = _pattern(line, base)
        if pattern is not None:
            found.append(pattern)
    return found


class _Rules:
    """The patterns of one file: which of them matches a path last.

    A pattern that comes again later in the file can never be the last to match:
    only its last copy is kept. Plain names and plain paths are looked up; the
    others are tried from the last up, each wildcard pattern compiled once
    (``compile``), when the file is applied."""

    def __init__(self, patterns: list[_Pattern]) -> None:
        self.patterns = patterns
        self.by_name: dict[bytes, list[int]] = {}
        """Patterns that are a plain name, by that name (a long generated file is mostly these)."""
        self.by_path: dict[bytes, list[int]] = {}
        """Patterns that are a plain path (``/a/b``, ``a/b``), by that path in the work tree."""
        self.others: list[int] = []
        last = {(p.text, p.negative, p.folders_only): i for i, p in enumerate(patterns)}
        for index, pattern in enumerate(patterns):
            if last[(pattern.text, pattern.negative, pattern.folders_only)] != index:
                continue
            if pattern.anywhere and pattern.literal == len(pattern.text):
                self.by_name.setdefault(pattern.text, []).append(index)
            elif not pattern.anywhere and not pattern.wild:
                self.by_path.setdefault(pattern.start, []).append(index)
            else:
                self.others.append(index)
        self.glob_bytes = sum(len(patterns[index].wild) for index in self.others)
        """The bytes of its wildcard patterns: what matching a path against it costs."""
        self._checks: list[tuple[int, bool, bool, Glob]] = []

    def compile(self) -> None:
        """Make the wildcard patterns ready to match (``cli._wildmatch``), the last first."""
        if self._checks:
            return
        globs: dict[tuple[bool, bytes, bytes], Glob] = {}
        for index in reversed(self.others):
            pattern = self.patterns[index]
            if pattern.anywhere and pattern.ends_with:
                glob = _suffix(pattern.text[1:])
            else:
                start = b"" if pattern.anywhere else pattern.start
                key = (pattern.anywhere, start, pattern.wild)
                glob = globs.get(key) or compile_glob(
                    pattern.wild, pathname=not pattern.anywhere, prefix=start
                )
                globs[key] = glob
            self._checks.append((index, pattern.folders_only, not pattern.anywhere, glob))

    def last_match(self, path: bytes, name: bytes, is_dir: bool) -> _Pattern | None:
        """The last pattern matching ``path``, or None."""
        patterns = self.patterns
        best = -1
        for index in reversed(self.by_name.get(name, ())):
            if is_dir or not patterns[index].folders_only:
                best = index
                break
        for index in reversed(self.by_path.get(path, ())):
            if is_dir or not patterns[index].folders_only:
                best = max(best, index)
                break
        for index, folders_only, whole_path, glob in self._checks:
            if index < best:
                break
            if (is_dir or not folders_only) and glob(path if whole_path else name):
                return patterns[index]
        return patterns[best] if best >= 0 else None


def _suffix(suffix: bytes) -> Glob:
    """A name's test for a pattern ``*`` then plain bytes (git's ``PATTERN_FLAG_ENDSWITH``)."""
    return lambda name: name.endswith(suffix)


def _rules_of(path: str, base: bytes, *, follow: bool) -> _Rules | None:
    """The rules in the file at ``path``, None if it gives none."""
    data = read_regular(path, MAX_IGNORE_FILE_BYTES, follow=follow)
    if not data:
        return None
    patterns = _patterns(data, base)
    return _Rules(patterns) if patterns else None


@dataclass(frozen=True)
class _Folder:
    """What applies below a folder: ignored whole, or the rule files (deepest first)."""

    ignored: bool
    rules: tuple[_Rules, ...]
    glob_bytes: int = 0
    """The bytes of wildcard patterns in ``rules``, all files together."""

    def verdict(self, path: bytes, name: bytes, is_dir: bool) -> bool:
        for rules in self.rules:
            pattern = rules.last_match(path, name, is_dir)
            if pattern is not None:
                return not pattern.negative
        return False


class Repository:
    """One work tree's ignore rules, each file read once, when first needed."""

    def __init__(self, top: str, git_dir: str | None, keep: Callable[[bytes], bool]) -> None:
        self.top = top
        """The work tree's folder."""
        self.git_dir = git_dir
        """Its git folder; None when its ``.git`` leads nowhere (nothing is ignored)."""
        self._keep = keep
        self._folders: dict[bytes, _Folder] = {}
        self._named = b""
        self.not_applied: list[str] = []
        """The rule files left out for holding too many wildcard patterns (``apply``)."""
        self._tracked: Tracked | bool | None = False  # False: not read yet
        self._config: dict[str, bytes | None] | None = None

    def mark_named(self, folder: bytes) -> None:
        """``folder`` (a path in the work tree) was named on the command line: it is the
        user's to check, so neither it nor a folder above it counts as ignored (ruff
        lints a folder named so, ``.gitignore`` or not). Below it the rules apply: its
        own ``.gitignore`` files and, for the paths under it, the rules above it."""
        self._named = folder

    def ignored(self, path: bytes, *, is_dir: bool) -> bool:
        """What ``git check-ignore`` says of ``path`` (in the work tree, ``/`` between
        names): ignored by the rules, and not tracked."""
        if self.git_dir is None:
            return False
        folder, _, name = path.rpartition(b"/")
        state = self._folder(folder)
        if not (state.ignored or state.verdict(path, name, is_dir)):
            return False
        tracked = self._index()
        return tracked is None or not tracked.holds(path)

    def _settings(self) -> dict[str, bytes | None]:
        if self._config is None:
            assert self.git_dir is not None
            config: dict[str, bytes | None] = {}
            for path in user_config_files():
                read_config(path, config)
            read_config(os.path.join(common_dir(self.git_dir), "config"), config)
            if is_true(config.get("extensions.worktreeconfig", b"false")):
                read_config(os.path.join(self.git_dir, "config.worktree"), config)
            self._config = config
        return self._config

    def _folder(self, folder: bytes) -> _Folder:
        """The rules below ``folder`` (git's ``prep_exclude``), built from the top down."""
        known = self._folders.get(folder)
        if known is not None:
            return known
        missing = [folder]  # folder, its parent... up to the first one known (or the top)
        while missing[-1] and missing[-1].rpartition(b"/")[0] not in self._folders:
            missing.append(missing[-1].rpartition(b"/")[0])
        named = self._named + b"/"
        for path in reversed(missing):
            parent, _, name = path.rpartition(b"/")
            if not path:
                state = self._top()
            else:
                above = self._folders[parent]
                if not named.startswith(path + b"/") and (
                    above.ignored or above.verdict(path, name, True)
                ):
                    state = _Folder(True, ())  # and git reads no .gitignore below
                else:
                    state = self._add(above, self._gitignore(path))
            self._folders[path] = state
        return state

    def _add(self, above: _Folder, rules: tuple[str, _Rules | None]) -> _Folder:
        """``above`` with the rules of one more file (``where``, its ``rules``), unless the
        wildcard patterns of all of them would pass ``MAX_IGNORE_GLOB_BYTES``."""
        where, found = rules
        if found is None:
            return above
        total = above.glob_bytes + found.glob_bytes
        if total > MAX_IGNORE_GLOB_BYTES:
            self.not_applied.append(where)
            return above
        found.compile()
        return _Folder(above.ignored, (found, *above.rules), total)

    def _gitignore(self, folder: bytes) -> tuple[str, _Rules | None]:
        where = os.path.join(self.top, os.fsdecode(folder), ".gitignore")
        return where, _rules_of(where, folder, follow=False)

    def _top(self) -> _Folder:
        """The top folder's rules: the global excludes file, ``info/exclude``, the top's
        ``.gitignore`` (in the order they decide from last to first)."""
        assert self.git_dir is not None
        settings = self._settings()
        if "core.excludesfile" in settings:
            chosen = expand_path(settings["core.excludesfile"])
        else:
            chosen = xdg_config("ignore")
        state = _Folder(False, ())
        if chosen is not None:
            where = os.path.join(self.top, chosen)
            state = self._add(state, (where, _rules_of(where, b"", follow=True)))
        where = os.path.join(common_dir(self.git_dir), "info", "exclude")
        state = self._add(state, (where, _rules_of(where, b"", follow=True)))
        return self._add(state, self._gitignore(b""))

    def _index(self) -> Tracked | None:
        if self._tracked is False:
            assert self.git_dir is not None
            settings = self._settings()
            sha256 = (settings.get("extensions.objectformat") or b"").lower() == b"sha256"
            index = os.path.join(self.git_dir, "index")
            self._tracked = read_index(index, 32 if sha256 else 20, self._keep)
        assert self._tracked is not True
        return self._tracked


def nested_repository(folder: str, keep: Callable[[bytes], bool]) -> Repository | None:
    """The repository of ``folder``, which holds a ``.git``; None if that ``.git`` is not
    one (the folder then belongs to the repository around it, as git has it)."""
    git_dir = git_dir_of(os.path.join(folder, ".git"))
    if isinstance(git_dir, NotARepository):
        return None
    if git_dir is not None and is_bare(git_dir):
        git_dir = None
    return Repository(folder, git_dir, keep)


def _ceilings() -> set[str]:
    """``GIT_CEILING_DIRECTORIES``: folders discovery does not go up into."""
    value = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    return {os.path.realpath(path) for path in value.split(os.pathsep) if os.path.isabs(path)}


def repository_around(
    folder: str, keep: Callable[[bytes], bool]
) -> tuple[Repository, bytes] | None:
    """The repository whose work tree holds ``folder`` and where ``folder`` is in it
    (``b""``: its top), found as git finds it; None outside any work tree."""
    try:
        inner = here = os.path.realpath(folder)
        device = os.stat(here).st_dev
    except (OSError, ValueError):
        return None
    ceilings = _ceilings()
    across = env_true("GIT_DISCOVERY_ACROSS_FILESYSTEM")
    while True:
        git_dir = git_dir_of(os.path.join(here, ".git"))
        if not isinstance(git_dir, NotARepository):
            if git_dir is not None and is_bare(git_dir):
                return None
            where = os.path.relpath(inner, here)
            inside = b"" if where == os.curdir else os.fsencode(where.replace(os.sep, "/"))
            return Repository(here, git_dir, keep), inside
        if is_git_dir(here):
            return None  # a bare repository, or the inside of a git folder
        parent = os.path.dirname(here)
        if parent == here or parent in ceilings:
            return None
        try:
            if not across and os.stat(parent).st_dev != device:
                return None
        except OSError:
            return None
        here = parent
