"""git's own files, read as data: config values, the index's names, where a repository is.

What ``cli._ignore`` needs to know besides the patterns, read without running git:

- a file is opened only if it is a regular file (opening a FIFO waits for a
  writer for ever, a device may do anything), at most so many bytes of it
  (``MAX_IGNORE_FILE_BYTES``); one that cannot be read (gone, no permission,
  too large, not a regular file) reads as absent;
- config files in git's syntax (sections, ``[section "sub"]``, quoting,
  ``\\`` escapes and line continuations, ``#`` and ``;`` comments), the last
  value winning, in git's order: ``/etc/gitconfig`` (or ``$GIT_CONFIG_SYSTEM``;
  none with ``GIT_CONFIG_NOSYSTEM``), the user's (``$GIT_CONFIG_GLOBAL``, else
  ``$XDG_CONFIG_HOME/git/config`` or ``~/.config/git/config``, then
  ``~/.gitconfig``), then the repository's. ``include.path`` is followed (10
  deep, as git); ``includeIf`` and the values git takes from its environment
  (``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``) are not. A file git would
  refuse to parse gives its values up to the error. Paths expand ``~`` and
  ``~user``; one starting ``%(prefix)/`` (git's own install) reads as none;
- the index (versions 2, 3 and 4, SHA-1 or SHA-256; format:
  ``gitformat-index``), read in blocks up to ``MAX_GIT_INDEX_BYTES``, keeping
  only the names asked for (and every submodule's and sparse folder's). One
  that cannot be read (corrupt, another version, past the limit, a split index
  whose entries live in a second file) reads as None; a missing one is empty;
- a git folder as git's ``is_git_directory`` sees one (a ``HEAD`` naming a
  branch or a commit, ``objects`` and ``refs``), ``commondir`` followed in a
  linked work tree's, a ``.git`` file's ``gitdir:`` followed.
"""

from __future__ import annotations

import os
import re
import stat
from bisect import bisect_left
from collections.abc import Callable, Iterator

from agent_rollout._limits import (
    MAX_GIT_INCLUDE_DEPTH,
    MAX_GIT_INDEX_BYTES,
    MAX_GIT_INDEX_NAME_BYTES,
    MAX_GIT_SMALL_FILE_BYTES,
    MAX_IGNORE_FILE_BYTES,
)

__all__ = [
    "NotARepository",
    "Tracked",
    "common_dir",
    "env_true",
    "expand_path",
    "git_dir_of",
    "is_bare",
    "is_git_dir",
    "is_true",
    "read_config",
    "read_index",
    "read_regular",
    "user_config_files",
    "xdg_config",
]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_INDEX_BLOCK_BYTES = 1024 * 1024
_OPEN, _CLOSE, _BACKSLASH = ord("["), ord("]"), ord("\\")


# ---- reading files -------------------------------------------------------------------------


def read_regular(path: str, limit: int, *, follow: bool = True) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; else None.

    Nothing else is opened (opening a FIFO waits for a writer; a device may do
    anything); a symbolic link is followed only with ``follow``."""
    try:
        info = os.stat(path, follow_symlinks=follow)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        fd = os.open(path, _OPEN_FLAGS | (0 if follow else _NOFOLLOW))
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the stat
            return None
        return _read_at_most(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes | None:
    """All of ``fd``'s bytes, or None past ``limit`` (a file that grew since its stat)."""
    chunks = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, limit + 1 - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks) if total <= limit else None


# ---- git config, read as text ----------------------------------------------------------------

_SPACE = frozenset(b" \t\n\r")
_KEY_BYTES = frozenset(b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ESCAPES = {ord("n"): ord("\n"), ord("t"): ord("\t"), ord("b"): 8, ord('"'): ord('"'), 92: 92}


class _BadConfig(Exception):
    """A config file git would refuse: its values from there on are not read."""


class _ConfigText:
    """git's config syntax, one byte at a time (``\\r\\n`` read as ``\\n``; the end as one)."""

    def __init__(self, data: bytes) -> None:
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        self.data = data.replace(b"\r\n", b"\n")
        self.at = 0

    def next(self) -> int:
        """The next byte; ``\\n`` at the end (``ended`` then says so)."""
        if self.at >= len(self.data):
            self.at = len(self.data) + 1
            return 10
        c = self.data[self.at]
        self.at += 1
        return c

    @property
    def ended(self) -> bool:
        return self.at > len(self.data)

    def entries(self) -> Iterator[tuple[str, bytes | None]]:
        """``(section.key, value)`` in order; a key without ``=`` has the value None."""
        section = ""
        comment = False
        while True:
            c = self.next()
            if c == 10:
                if self.ended:
                    return
                comment = False
            elif comment or c in _SPACE:
                continue
            elif c in b"#;":
                comment = True
            elif c == _OPEN:
                section = self._section()
            elif 65 <= c <= 90 or 97 <= c <= 122:  # a letter starts a key
                yield self._entry(section, c)
            else:
                raise _BadConfig

    def _section(self) -> str:
        name = bytearray()
        while True:
            c = self.next()
            if self.ended:
                raise _BadConfig
            if c == _CLOSE:
                break
            if c in _SPACE:
                return name.decode("ascii").lower() + "." + self._subsection(c)
            if c not in _KEY_BYTES and c != ord("."):
                raise _BadConfig
            name.append(c)
        if not name:
            raise _BadConfig
        return name.decode("ascii").lower()

    def _subsection(self, c: int) -> str:
        while c in _SPACE:
            if c == 10:
                raise _BadConfig
            c = self.next()
        if c != ord('"'):
            raise _BadConfig
        name = bytearray()
        while True:
            c = self.next()
            if c == 10:
                raise _BadConfig
            if c == ord('"'):
                break
            if c == _BACKSLASH:
                c = self.next()
                if c == 10:
                    raise _BadConfig
            name.append(c)
        if self.next() != _CLOSE:
            raise _BadConfig
        return name.decode("utf-8", "surrogateescape")

    def _entry(self, section: str, first: int) -> tuple[str, bytes | None]:
        key = bytearray([first])
        while True:
            c = self.next()
            if self.ended or c not in _KEY_BYTES:
                break
            key.append(c)
        while c in b" \t":
            c = self.next()
        name = f"{section}.{key.decode('ascii').lower()}"
        if c == 10:
            return name, None
        if c != ord("="):
            raise _BadConfig
        return name, self._value()

    def _value(self) -> bytes:
        value = bytearray()
        quoted = comment = False
        spaces = 0
        while True:
            c = self.next()
            if c == 10:
                if quoted:
                    raise _BadConfig
                return bytes(value)
            if comment:
                continue
            if c in _SPACE and not quoted:
                if value:
                    spaces += 1
                continue
            if not quoted and c in b"#;":
                comment = True
                continue
            value.extend(b" " * spaces)
            spaces = 0
            if c == _BACKSLASH:
                c = self.next()
                if c == 10:
                    continue  # a line continued (or a backslash at the very end)
                if c not in _ESCAPES:
                    raise _BadConfig
                value.append(_ESCAPES[c])
            elif c == ord('"'):
                quoted = not quoted
            else:
                value.append(c)


def read_config(path: str, into: dict[str, bytes | None], depth: int = 0) -> None:
    """Add the values of the config file at ``path`` (and what it includes) to ``into``."""
    data = read_regular(path, MAX_IGNORE_FILE_BYTES)
    if data is None:
        return
    try:
        for key, value in _ConfigText(data).entries():
            if key == "include.path":
                included = expand_path(value)
                if included is not None and depth < MAX_GIT_INCLUDE_DEPTH:
                    where = os.path.join(os.path.dirname(path), included)
                    read_config(where, into, depth + 1)
            else:
                into[key] = value
    except _BadConfig:
        return


def expand_path(value: bytes | None) -> str | None:
    """A path value as git's ``interpolate_path`` reads it (``~``, ``~user``); None if it
    names nothing this can read."""
    if not value or value.startswith(b"%(prefix)/"):
        return None
    path = os.fsdecode(value)
    if not path.startswith("~"):
        return path
    user, slash, rest = path[1:].partition("/")
    if not user:
        home = os.environ.get("HOME")
    else:
        try:
            import pwd

            home = pwd.getpwnam(user).pw_dir
        except (ImportError, KeyError):
            return None
    return None if home is None else home + slash + rest


def is_true(value: bytes | None) -> bool:
    """A config boolean as git reads it (a key with no ``=`` is true)."""
    if value is None:
        return True
    word = value.strip().lower()
    if word in (b"true", b"yes", b"on"):
        return True
    try:
        return int(word, 0) != 0
    except ValueError:
        return False


def xdg_config(name: str) -> str | None:
    """``$XDG_CONFIG_HOME/git/<name>``, else ``~/.config/git/<name>`` (``xdg_config_home``)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "git", name)
    home = os.environ.get("HOME")
    return os.path.join(home, ".config", "git", name) if home else None


def env_true(name: str) -> bool:
    value = os.environ.get(name)
    return value is not None and is_true(value.encode())


def user_config_files() -> list[str]:
    """The system's and the user's config files, in the order git reads them."""
    files = []
    if not env_true("GIT_CONFIG_NOSYSTEM"):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    chosen = os.environ.get("GIT_CONFIG_GLOBAL")
    if chosen is not None:
        files.append(chosen)
    else:
        xdg = xdg_config("config")
        if xdg:
            files.append(xdg)
        home = os.environ.get("HOME")
        if home:
            files.append(os.path.join(home, ".gitconfig"))
    return files


# ---- the index: which paths are tracked ------------------------------------------------------


class Tracked:
    """The tracked paths that matter: what the index holds, sorted, with sparse folders."""

    def __init__(self, names: list[bytes]) -> None:
        self.names = sorted(names)
        self.sparse = {name[:-1] for name in names if name.endswith(b"/")}

    def holds(self, path: bytes) -> bool:
        """Whether the index holds ``path`` or a path under it, or a sparse folder holds it."""
        names = self.names
        i = bisect_left(names, path)
        if i < len(names) and names[i] == path:
            return True
        under = path + b"/"  # after "path.x" and "path-x": "/" sorts after both
        i = bisect_left(names, under, i)
        if i < len(names) and names[i].startswith(under):
            return True
        if self.sparse:
            folder = path
            while b"/" in folder:
                folder = folder.rpartition(b"/")[0]
                if folder in self.sparse:
                    return True
        return False


class _BadIndex(Exception):
    """An index this cannot read: it tracks nothing."""


class _IndexReader:
    """An index file read in blocks: fixed-size parts and NUL-ended names."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.block = b""
        self.at = 0
        self.offset = 0
        """How many bytes of the file have been taken."""

    def _fill(self, size: int) -> bool:
        """At least ``size`` bytes ahead in ``block``, unless the file ends first."""
        if len(self.block) - self.at >= size:
            return True
        parts = [self.block[self.at :]]
        have = len(parts[0])
        while have < size:
            part = os.read(self.fd, max(_INDEX_BLOCK_BYTES, size - have))
            if not part:
                break
            parts.append(part)
            have += len(part)
        self.block, self.at = b"".join(parts), 0
        return have >= size

    def exact(self, size: int) -> bytes:
        if not self._fill(size):
            raise _BadIndex
        data = self.block[self.at : self.at + size]
        self.at += size
        self.offset += size
        return data

    def skip(self, size: int) -> None:
        ahead = len(self.block) - self.at
        if size <= ahead:
            self.at += size
        else:
            os.lseek(self.fd, size - ahead, os.SEEK_CUR)
            self.block, self.at = b"", 0
        self.offset += size

    def until_nul(self) -> bytes:
        """The bytes up to the next NUL, which is taken too."""
        searched = 0
        while True:
            end = self.block.find(b"\0", self.at + searched)
            if end >= 0:
                name = self.block[self.at : end]
                self.offset += end + 1 - self.at
                self.at = end + 1
                return name
            searched = len(self.block) - self.at
            if searched > MAX_GIT_INDEX_NAME_BYTES or not self._fill(searched + 1):
                raise _BadIndex

    def varint(self) -> int:
        """git's offset varint (``decode_varint``)."""
        c = self.exact(1)[0]
        value = c & 127
        while c & 128:
            value += 1
            if value >= 1 << 56:
                raise _BadIndex
            c = self.exact(1)[0]
            value = (value << 7) + (c & 127)
        return value


def read_index(path: str, hash_size: int, keep: Callable[[bytes], bool]) -> Tracked | None:
    """The names of ``path``'s index that ``keep`` wants (and every submodule's and sparse
    folder's), or None if the index cannot be read. A missing index tracks nothing."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return Tracked([])
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GIT_INDEX_BYTES:
        return None
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return Tracked(_index_names(_IndexReader(fd), info.st_size, hash_size, keep))
    except (OSError, _BadIndex):
        return None
    finally:
        os.close(fd)


def _index_names(
    reader: _IndexReader, size: int, hash_size: int, keep: Callable[[bytes], bool]
) -> list[bytes]:
    """The wanted names of an index (format: git's ``Documentation/gitformat-index``)."""
    header = reader.exact(12)
    version = int.from_bytes(header[4:8], "big")
    count = int.from_bytes(header[8:12], "big")
    fixed = 40 + hash_size + 2  # stat data, object name, flags
    if header[:4] != b"DIRC" or version not in (2, 3, 4) or count * (fixed + 1) > size:
        raise _BadIndex
    names = []
    previous = b""
    for _ in range(count):
        entry = reader.exact(fixed)
        flags = int.from_bytes(entry[-2:], "big")
        extended = 2 if flags & 0x4000 else 0
        if extended:
            if version < 3:
                raise _BadIndex
            reader.exact(2)
        if version == 4:  # the name shares a prefix with the one before
            strip = reader.varint()
            if strip > len(previous):
                raise _BadIndex
            name = previous[: len(previous) - strip] + reader.until_nul()
            previous = name
        else:
            length = flags & 0xFFF
            if length < 0xFFF:  # the name, its NUL and padding to a multiple of 8 at once
                end = fixed + extended + length
                rest = reader.exact(((end + 8) & ~7) - (fixed + extended))
                name = rest[:length]
                if rest[length] != 0:
                    raise _BadIndex
            else:
                name = reader.until_nul()
                used = fixed + extended + len(name) + 1
                reader.exact(((used + 7) & ~7) - used)
        mode = int.from_bytes(entry[24:28], "big")
        if keep(name) or mode & 0o170000 == 0o160000 or name.endswith(b"/"):
            names.append(name)
    # A split index keeps most entries in a second file (the "link" extension).
    while size - reader.offset - hash_size >= 8:
        signature = reader.exact(4)
        length = int.from_bytes(reader.exact(4), "big")
        if signature == b"link":
            raise _BadIndex
        if length > size - reader.offset:
            raise _BadIndex
        reader.skip(length)
    return names


# ---- repositories ----------------------------------------------------------------------------


def _valid_head(path: str) -> bool:
    """Whether ``HEAD`` names a branch or a commit (git's ``validate_headref``)."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return os.readlink(path).startswith("refs/")
    except (OSError, ValueError):
        return False
    data = read_regular(path, MAX_GIT_SMALL_FILE_BYTES)
    if data is None:
        return False
    if data.startswith(b"ref:") and data[4:].lstrip(b" \t\n\r").startswith(b"refs/"):
        return True
    return re.match(rb"[0-9a-fA-F]{40}", data) is not None


def common_dir(git_dir: str) -> str:
    """Where a git folder's shared parts are (``commondir``, in a linked work tree's)."""
    data = read_regular(os.path.join(git_dir, "commondir"), MAX_GIT_SMALL_FILE_BYTES)
    if not data:
        return git_dir
    return os.path.join(git_dir, os.fsdecode(data.rstrip(b"\r\n")))


def is_git_dir(path: str) -> bool:
    """git's ``is_git_directory``: a valid ``HEAD``, and ``objects`` and ``refs`` folders."""
    if not _valid_head(os.path.join(path, "HEAD")):
        return False
    common = common_dir(path)
    return all(os.path.isdir(os.path.join(common, part)) for part in ("objects", "refs"))


class NotARepository:
    """``.git`` here is not a repository: the folder belongs to the one around it."""


_NOT_HERE = NotARepository()


def git_dir_of(dot_git: str) -> str | NotARepository | None:
    """The git folder that ``dot_git`` (a folder's ``.git``) stands for; None for a
    ``.git`` file that leads to no repository (git fails there: nothing is ignored)."""
    try:
        info = os.stat(dot_git)
    except (OSError, ValueError):
        return _NOT_HERE
    if stat.S_ISDIR(info.st_mode):
        return dot_git if is_git_dir(dot_git) else _NOT_HERE
    if not stat.S_ISREG(info.st_mode):
        return _NOT_HERE
    data = read_regular(dot_git, MAX_GIT_SMALL_FILE_BYTES)
    if data is None or not data.startswith(b"gitdir: "):
        return None
    target = os.fsdecode(data[8:].rstrip(b"\r\n"))
    if not target:
        return None
    target = os.path.join(os.path.dirname(dot_git), target)
    return target if is_git_dir(target) else None


def is_bare(git_dir: str) -> bool:
    """Whether the repository's config says it has no work tree (``core.bare``; git
    heeds it only in a main git folder, not a linked work tree's)."""
    if os.path.exists(os.path.join(git_dir, "commondir")):
        return False
    config: dict[str, bytes | None] = {}
    read_config(os.path.join(git_dir, "config"), config)
    return "core.bare" in config and is_true(config["core.bare"])
