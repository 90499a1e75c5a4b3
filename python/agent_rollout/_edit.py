"""An edit of a user's file, made as an editor saves it (``_files.Output(expected=...)``).

- ``read_snapshot``: the file's bytes with what identifies the file they came
  from (device, inode, size, modification time), read without ever waiting on
  a FIFO or device swapped in for it;
- ``still_at``: whether the file is still that, bytes and identity, looked at
  just before it is replaced; ``FileChanged`` when it is not;
- ``give_owner``: the replacement gets the file's owner and group (and mode
  again: ``chown`` clears the set-id bits), where the system lets us;
- ``give_attributes``: the replacement gets the file's extended attributes
  (``user.*``, the POSIX ACLs in ``system.*``, ``security.*`` labels), no
  more and no fewer, where the system lets us; one that carries access (an
  ACL, a label) it refuses makes the edit a write in place (``made_like``:
  both);
- ``write_in_place``: for a file with other hard links, or whose owner or
  access-carrying attributes a new file cannot be given, or beside which no
  new file can be made (a folder this user may not write), the bytes written
  into the file itself, keeping its inode, after the same check, with Ctrl-C,
  SIGTERM and SIGHUP held back between the write and the truncation.

Python only: no Rust code edits a user's file (``check --fix`` is the caller).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional, Union

from agent_rollout._errors import EDIT_MESSAGES, shown_path
from agent_rollout._exceptions import RolloutRuntimeError

__all__ = [
    "NO_FILE_BESIDE",
    "FileChanged",
    "Snapshot",
    "give_attributes",
    "give_owner",
    "made_like",
    "read_snapshot",
    "still_at",
    "write_in_place",
]

_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO or device swapped in never blocks the open
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class FileChanged(RolloutRuntimeError):
    """The file an edit would replace is no longer what was read: its bytes, or the file
    itself (device, inode, size, modification time), changed, or it is gone. Nothing
    was written."""

    def __init__(self, shown: str) -> None:
        super().__init__(EDIT_MESSAGES["file_changed"].format(path=shown_path(shown)))


@dataclass(frozen=True)
class Snapshot:
    """A regular file's bytes as read, and the file they were read from: what an edit
    must find again before it writes."""

    data: bytes
    device: int
    inode: int
    mtime_ns: int

    def same_file(self, info: os.stat_result) -> bool:
        """Whether ``info`` is the file read, unchanged: regular, the same device, inode
        and modification time, and as many bytes as were read."""
        found = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
        read = (self.device, self.inode, self.mtime_ns, len(self.data))
        return stat.S_ISREG(info.st_mode) and found == read


def _read_all(fd: int, limit: int) -> bytes:
    """What ``fd`` holds from its offset on, up to ``limit`` bytes."""
    parts = []
    left = limit
    while left > 0:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_snapshot(path: str, limit: int) -> Optional[Snapshot]:
    """The bytes of the regular file ``path`` (symlinks followed) with its identity; None
    when it is not a regular file, holds more than ``limit`` bytes or changed while it
    was read. Opened non-blocking and looked at before it is read, so a FIFO or device
    never blocks. ``OSError`` when it cannot be opened."""
    fd = os.open(path, _READ_FLAGS)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return None
        data = _read_all(fd, limit + 1)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    read = Snapshot(data, after.st_dev, after.st_ino, after.st_mtime_ns)
    if len(data) > limit or not (read.same_file(before) and read.same_file(after)):
        return None
    return read


def _still(fd: int, expected: Snapshot) -> bool:
    """Whether the file open at ``fd`` (at offset 0) is still ``expected``: the same file,
    unchanged, holding the same bytes."""
    if not expected.same_file(os.fstat(fd)):
        return False
    return _read_all(fd, len(expected.data) + 1) == expected.data


def still_at(path: str, expected: Snapshot) -> bool:
    """Whether ``path`` itself (not a symlink put there) is still ``expected``."""
    try:
        fd = os.open(path, _READ_FLAGS | _NO_FOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return False  # gone
    except OSError as err:
        if err.errno == errno.ELOOP:
            return False  # a symlink now stands there
        raise
    try:
        return _still(fd, expected)
    finally:
        os.close(fd)


def give_owner(fd: int, info: os.stat_result) -> bool:
    """Give the new file open at ``fd`` the owner, group and mode of ``info`` (the file it
    will replace); False when the system refuses the owner or group (only root may give
    a file away; a user may give it a group of theirs)."""
    chown = getattr(os, "fchown", None)
    if chown is None:
        return True  # no owners to keep (Windows)
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (info.st_uid, info.st_gid):
        return True
    try:
        chown(fd, info.st_uid, info.st_gid)
    except OSError:  # EPERM: not root (or a filesystem without owners)
        return False
    os.fchmod(fd, stat.S_IMODE(info.st_mode))  # chown clears the set-id bits
    return True


_ACCESS_NAMESPACES = ("system.", "security.")
"""Extended attributes that decide who may do what with the file: the POSIX ACLs
(``system.posix_acl_access``; NFSv4 and rich ACLs are ``system.`` too) and the labels
and capabilities of security modules (``security.selinux``, ``security.capability``).
One of these the replacement cannot be given (or rid of) makes the edit a write in
place: a rename would hand the file other access than it had. Any other (``user.*``,
``trusted.*``) the system refuses is left off, as editors do."""

_NO_ATTRIBUTES = frozenset(
    getattr(errno, name) for name in ("ENOTSUP", "EOPNOTSUPP", "ENOSYS") if hasattr(errno, name)
)
"""What listing the attributes of a file on a filesystem that has none raises."""


def _attributes(target: Union[str, int]) -> dict[str, bytes]:
    """The extended attributes of ``target`` (a path, symlinks not followed, or a
    descriptor), by name; one removed while they are read is left out."""
    follow = isinstance(target, int)  # a descriptor takes no follow_symlinks=False
    found = {}
    for name in os.listxattr(target, follow_symlinks=follow):
        try:
            found[name] = os.getxattr(target, name, follow_symlinks=follow)
        except OSError as err:
            if err.errno != errno.ENODATA:
                raise
    return found


def _carries_access(name: str) -> bool:
    return name.startswith(_ACCESS_NAMESPACES)


def give_attributes(fd: int, path: str, info: os.stat_result) -> bool:
    """Give the new file open at ``fd`` the extended attributes of the file ``path`` (the
    one it will replace, as ``info`` found it), and take from it those that file has not
    (an ACL the folder's default ACL gave it); its mode is then ``info``'s again (an
    ACL sets the group bits). False when one that carries access
    (``_ACCESS_NAMESPACES``) cannot be set or removed, or the file's own cannot be
    listed: the caller writes in place, which keeps them all. Another the system
    refuses is left off. Where the platform has no extended attributes
    (``os.listxattr`` missing), nothing is done."""
    if not hasattr(os, "listxattr"):
        return True
    try:
        wanted = _attributes(path)
    except OSError as err:
        return err.errno in _NO_ATTRIBUTES  # none on this filesystem; else unknown
    try:
        found = _attributes(fd)
    except OSError:
        return False  # what the new file carries is unknown
    if wanted == found:
        return True
    kept = _set_attributes(fd, wanted, found)
    if stat.S_IMODE(os.fstat(fd).st_mode) != stat.S_IMODE(info.st_mode):
        os.fchmod(fd, stat.S_IMODE(info.st_mode))
    return kept


def _set_attributes(fd: int, wanted: dict[str, bytes], found: dict[str, bytes]) -> bool:
    """Make the attributes of ``fd`` (now ``found``) ``wanted``: see ``give_attributes``."""
    kept = True
    for name in sorted(found.keys() - wanted.keys()):
        try:
            os.removexattr(fd, name)
        except OSError as err:
            if err.errno != errno.ENODATA and _carries_access(name):
                kept = False
    for name, value in sorted(wanted.items()):
        if found.get(name) == value:
            continue
        try:
            os.setxattr(fd, name, value)
        except OSError:
            if _carries_access(name):
                kept = False
    return kept


def made_like(fd: int, path: str, info: os.stat_result) -> bool:
    """Give the new file open at ``fd`` all that the file ``path`` it will replace (as
    ``info`` found it) has but its bytes: owner, group and mode (``give_owner``),
    extended attributes (``give_attributes``). False when the system refuses the owner
    or an attribute that carries access: the caller writes in place instead."""
    return give_owner(fd, info) and give_attributes(fd, path, info)


NO_FILE_BESIDE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
"""Why no new file could be made beside the file an edit replaces (the folder may not
be written) that need not stop a write into the file itself (which may be): the
caller writes in place, and that write says why not if it cannot."""


_HELD = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held back on this thread for the block, delivered as it
    ends: two system calls that must both happen (a write, then a truncation) are not
    cut in two by this process's own handlers. (A signal another thread of ours takes
    is not held; the command that edits files runs none.) Where the system has no
    signal masks (Windows), nothing is held."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:
        yield
        return
    old = mask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)


def _write_over(fd: int, data: bytes) -> None:
    """``data`` written at the start of ``fd``, whatever it held cut off after it."""
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.ftruncate(fd, len(data))


def write_in_place(path: str, data: bytes, expected: Snapshot, shown: str) -> None:
    """Write ``data`` into the file ``path`` itself (its inode, names, owner, mode and
    extended attributes kept) if it is still ``expected``, else ``FileChanged`` naming
    ``shown``. The file is looked at before it is opened for writing (nothing but the
    file read is opened so), and again once open. Not all or nothing against a crash
    of the machine, as no write in place is; against our own signals it is
    (``_signals_held``)."""
    if not still_at(path, expected):
        raise FileChanged(shown)
    flags = os.O_RDWR | _NO_FOLLOW | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not _still(fd, expected):
            raise FileChanged(shown)
        with _signals_held():
            _write_over(fd, data)
    finally:
        os.close(fd)
