"""Rollout files in and out, for both engines (the twin of ``rust/files.rs``).

- where output goes (``destination``) and in which format its name asks for
  (``output_format``: JSONL, gzip-compressed JSONL or Parquet), decided once,
  here, for both engines and every format;
- ``Output``: the one atomic write. A regular file (or a new one) is written
  beside itself and renamed over it only when complete, so on any error
  (Ctrl-C, SIGTERM and SIGHUP included: ``signals_end_cleanly``) it is left as
  it was and no temporary file remains; a stream is written in place. JSONL
  output (``agent_rollout._jsonl``) and Parquet output (``agent_rollout.arrow``)
  both go through it, and so does an edit of a user's file (``check --fix``,
  ``expected``: see ``agent_rollout._edit``);
- ``replacing``: the file an output replaces is held through the job and let
  go of on a thread of its own, so the kernel frees it beside the caller's
  next work rather than inside the rename (both engines, both formats);
- ``open_input``: a rollout file opened for reading, with the ``idle`` test a
  pipe needs (``agent_rollout._jsonl`` undoes gzip);
- the names errors give a path (``source_name``), the check of a path argument
  (``path_text``) and the name of a temporary file (``temp_stem``).
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import re
import select
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Optional

from agent_rollout import _edit
from agent_rollout._errors import Terminated, output_name_error, shown_path
from agent_rollout._exceptions import RolloutTypeError, RolloutValueError

# ---- paths -------------------------------------------------------------------------------


def source_name(path: str) -> str:
    """How errors name an input: ``<stdin>`` for ``-``, else the path as given (messages
    show it with ``agent_rollout._errors.shown_path``)."""
    return "<stdin>" if path == "-" else path


def path_text(path: object, what: str) -> str:
    """A path argument (``str`` or ``os.PathLike``) as text, or ``TypeError``/``ValueError``."""
    if isinstance(path, (str, os.PathLike)):
        text = os.fspath(path)
        if isinstance(text, str):
            if "\x00" in text:
                raise RolloutValueError("embedded null byte")  # what Python's own open() says
            if not text:
                raise RolloutValueError(
                    f"{what} must not be empty (use '-' for the standard streams)"
                )
            return text
    raise RolloutTypeError(f"{what} must be a path (str or os.PathLike), got {type(path).__name__}")


# ---- where the output goes -----------------------------------------------------------------

_MAX_LINKS = 40  # as the kernel: more symlinks than this in a chain is a loop


@dataclass(frozen=True)
class Destination:
    """Where output goes, decided once for both engines.

    ``kind`` is ``"file"`` (a regular file, or a new one: written beside
    ``path`` and renamed over it when complete), ``"stream"`` (a device, named
    pipe or socket: opened and written in place, streamed, no undo) or
    ``"fd"`` (one of this process's own descriptors, ``fd``: ``-``,
    ``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``; written in place).
    """

    kind: str
    path: str
    fd: int = -1


def _own_fd(path: str) -> Optional[int]:
    """N when ``path`` names this process's descriptor N (``/proc/<pid>/fd/N`` and aliases)."""
    folder, _, name = path.rpartition("/")
    if not name.isdigit() or not folder:
        return None
    try:
        real = os.path.realpath(folder)
    except (OSError, ValueError):
        return None
    pid = os.getpid()
    if real == f"/proc/{pid}/fd" or re.fullmatch(rf"/proc/{pid}/task/\d+/fd", real):
        return int(name)
    return None


def destination(dest: str) -> Destination:
    """Resolve ``dest`` (symlinks followed one by one) to where the output really goes.

    A symlink, live or dangling, is written through to its target (created
    if missing); a chain of more than 40 links (a loop) is ``OSError`` ELOOP
    naming ``dest``.
    """
    if dest == "-":
        return Destination("fd", dest, 1)
    path = dest
    for _ in range(_MAX_LINKS + 1):
        fd = _own_fd(path)
        if fd is not None:
            return Destination("fd", path, fd)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return Destination("file", path)  # a new file (its folder must exist)
        except OSError as err:
            raise OSError(err.errno, err.strerror, dest) from None
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(path)
            except OSError as err:
                raise OSError(err.errno, err.strerror, dest) from None
            path = os.path.join(os.path.dirname(path), target)
            continue
        if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
            return Destination("file", path)  # a folder: refused when renamed over
        return Destination("stream", path)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), dest)


OutputFormat = Literal["jsonl", "jsonl.gz", "parquet"]

GZIP_LEVEL = 6
"""How hard ``.jsonl.gz`` output is compressed (zlib's level, as ``gzip -6``), on
both engines."""


def output_format(dest: str, where: Destination) -> OutputFormat:
    """The format the output ``dest`` gets, by its name: ``.jsonl`` canonical JSONL,
    ``.jsonl.gz`` that gzip-compressed, ``.parquet`` Parquet (any case); ``-``
    JSONL on standard output. A destination that is no regular file
    (``/dev/stdout``, ``/dev/fd/N``, a named pipe, a device: ``where``) gets
    JSONL, written in place, whatever else its name says (its name is not a file
    type); so does a folder, which the write then refuses (``IsADirectoryError``).
    Any other name is a ``RolloutValueError`` naming the forms: the one rule, for
    both engines, every command and the library."""
    if dest == "-":
        return "jsonl"
    name = os.path.basename(dest).lower()
    for suffix in (".jsonl.gz", ".jsonl", ".parquet"):
        if name.endswith(suffix):
            return suffix[1:]  # type: ignore[return-value]
    if where.kind != "file" or os.path.isdir(where.path):
        return "jsonl"
    raise output_name_error(dest)


def named(err: OSError, shown: str) -> OSError:
    """The same error, naming ``shown`` (the destination the caller gave, not a temporary)."""
    if err.errno is None:
        return OSError(f"{shown_path(shown)}: {err}")
    return OSError(err.errno, err.strerror, shown)


@contextmanager
def naming(shown: str) -> Iterator[None]:
    """An ``OSError`` raised in the block names ``shown`` (not a temporary file)."""
    try:
        yield
    except OSError as err:
        raise named(err, shown) from None


def _open_in_place(where: Destination, shown: str) -> Any:
    """The binary sink for a stream or one of our descriptors (no temporary file, no undo)."""
    with naming(shown):
        if where.kind == "fd":
            if where.fd == 1:
                sys.stdout.flush()  # what Python already buffered goes out first
            elif where.fd == 2:
                sys.stderr.flush()
            fd = os.dup(where.fd)
        else:
            # No O_CREAT, no O_TRUNC: a device or pipe is written as it is.
            fd = os.open(where.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    return open(fd, "wb")


def release_reader(where: Destination) -> None:
    """Let a reader waiting on the named pipe ``where`` go, for an output that will
    never be written: open it for writing without waiting and close it, so the
    reader gets the end of its input. With no reader there (or anything but a
    named pipe), nothing is done."""
    if where.kind != "stream":
        return
    try:
        if not stat.S_ISFIFO(os.stat(where.path).st_mode):
            return
        fd = os.open(where.path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return  # ENXIO: nobody reads; or gone
    os.close(fd)


def remove_temp(path: str) -> None:
    """Remove one of our temporary files; one already gone is no error."""
    with suppress(FileNotFoundError):
        os.unlink(path)


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


TEMP_NAME_KEEP = 200
"""The most bytes of a destination's name that its temporary file's name keeps
(``temp_stem``; the same rule as ``temp_stem`` in ``rust/files.rs``). The rest of
that name (a dot in front; the process id, a random or counted part and ``.tmp``
behind: 22 bytes at most), and ``.old.tmp`` after it for a Parquet file whose
schema widens, then fit in the 255 bytes a file name may have (``NAME_MAX``)."""


def temp_stem(name: str) -> str:
    """The part of the file name ``name`` its temporary file's name keeps: all of it up
    to ``TEMP_NAME_KEEP`` bytes (in the filesystem's encoding), else its first
    ``TEMP_NAME_KEEP`` bytes, less the start of a UTF-8 character cut in two (at most
    3 bytes). The temporary file stays beside the destination, hidden, and named
    after it as far as it can be."""
    raw = os.fsencode(name)
    if len(raw) <= TEMP_NAME_KEEP:
        return name
    cut = TEMP_NAME_KEEP
    while cut > TEMP_NAME_KEEP - 3 and raw[cut] & 0xC0 == 0x80:
        cut -= 1  # raw[cut] continues a character begun before the cut
    return os.fsdecode(raw[:cut])


class _Counted:
    """A binary sink that counts the bytes written through it (gzip's output)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.count = 0

    def write(self, data: Any) -> int:
        written: int = self.sink.write(data)
        self.count += len(data)
        return written

    def flush(self) -> None:
        self.sink.flush()


class Output:
    """One output, written all or nothing where the destination allows it.

    Made in two steps, so a caller can always clean up: ``Output(where,
    shown)`` touches nothing; ``open()`` (called inside the caller's
    ``try``) makes the sink. For ``where.kind == "file"`` the bytes go to a
    fresh temporary file beside the destination (``temp``, with the
    destination's mode), which ``commit`` renames over it; ``abandon``
    removes it, whatever closing it says. A stream or descriptor is written
    in place (``temp`` stays None): ``commit`` closes it, and nothing can be
    taken back. ``file`` is the binary sink; writers that open files by path
    (pyarrow) may write to ``temp`` instead. Every ``OSError`` names
    ``shown``, the destination the caller gave. ``private``: a scratch file
    that is never committed (the Parquet spool): mode 0600, whatever is at
    ``where.path``.

    ``expected`` (``_edit.read_snapshot``): an edit of the file read so, written
    only if it is still that (else ``FileChanged``, from ``open`` or ``commit``),
    with all but its bytes kept (``_edit.made_like``); else (hard links, an owner or
    ACL not kept, no file beside it) the bytes are held and written into it.
    """

    def __init__(
        self,
        where: Destination,
        shown: str,
        private: bool = False,
        gzip_level: Optional[int] = None,
        expected: Optional[_edit.Snapshot] = None,
    ) -> None:
        self.shown = shown
        self.where = where
        self.dest = where.path
        self.private = private
        self.gzip_level = gzip_level
        self.expected = expected
        self.temp: Optional[str] = None
        self.file: Any = None
        self._raw: Any = None
        """Under a gzip ``file``: the sink it compresses into."""
        self._counted: Optional[_Counted] = None
        self._in_place: Optional[io.BytesIO] = None
        """An edit written into the file itself at ``commit``: the bytes, held till then."""

    def open(self) -> Output:
        """Make the sink; on any error or interrupt, ``abandon`` removes what was made.
        With ``gzip_level``, ``file`` compresses what is written to it (one gzip
        member, no name or time in its header)."""
        self._sink()
        if self.gzip_level is not None:
            self._raw = self.file
            self._counted = _Counted(self._raw)
            self.file = gzip.GzipFile(
                filename="",
                mode="wb",
                compresslevel=self.gzip_level,
                fileobj=self._counted,
                mtime=0,
            )
        return self

    def compressed(self) -> Optional[int]:
        """The bytes a gzip output wrote so far (all of them once committed); None if
        the output is not gzip."""
        return None if self._counted is None else self._counted.count

    def _sink(self) -> None:
        if self.where.kind != "file":
            if self.expected is not None:
                raise _edit.FileChanged(self.shown)  # read as a regular file, now a stream
            self.file = _open_in_place(self.where, self.shown)
            return
        info: Optional[os.stat_result] = None
        with suppress(OSError):
            info = None if self.private else os.stat(self.dest)
        edit = self.expected is not None
        if edit and (info is None or not stat.S_ISREG(info.st_mode)):
            raise _edit.FileChanged(self.shown)
        in_place = edit and info is not None and info.st_nlink > 1  # a link of many: in place
        if not in_place:
            try:
                self._make_temp(info)
            except OSError as err:  # no file beside it, the file itself may be writable
                if not edit or self.temp is not None or err.errno not in _edit.NO_FILE_BESIDE:
                    raise
                in_place = True
        if not in_place and edit and info is not None:
            with naming(self.shown):
                in_place = not _edit.made_like(self.file.fileno(), self.dest, info)
            if in_place:  # only root gives a file away or sets some attributes
                self.abandon()
                self.temp = None
        if in_place:
            self._in_place = self.file = io.BytesIO()

    def _make_temp(self, info: Optional[os.stat_result]) -> None:
        mode = None if info is None else stat.S_IMODE(info.st_mode)
        folder = os.path.dirname(self.dest) or "."
        name = temp_stem(os.path.basename(self.dest))
        for _ in range(100):
            # Named before the file exists: an interrupt that lands between the
            # system call and the assignment of its result still finds it. An
            # interrupt before the call (CPython 3.10 checks at almost every
            # bytecode) finds a name nobody else has drawn: the random part
            # keeps our threads, and processes with our id in another PID
            # namespace, from removing each other's files.
            self.temp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
            try:
                self.file = open(self.temp, "xb", opener=_private_opener if self.private else None)
            except FileExistsError:
                self.temp = None
                continue
            except OSError as err:
                self.temp = None
                # Name the destination the caller asked for, not our temporary.
                raise OSError(err.errno, err.strerror, self.shown) from None
            if mode is not None:
                with naming(self.shown):
                    os.chmod(self.temp, mode)
            return
        raise OSError(f"{shown_path(self.shown)}: no free temporary file name")

    def write(self, data: bytes) -> None:
        try:  # once per row: no context manager here
            self.file.write(data)
        except OSError as err:
            raise named(err, self.shown) from None

    def commit(self) -> None:
        """Close the output; a temporary file takes the destination's place (an edit: only
        if the file is still what was read, else ``FileChanged``). A SIGTERM or SIGHUP
        whose exception was lost raises here instead (``signals_end_cleanly``)."""
        raise_if_terminated()
        with naming(self.shown):
            if self._in_place is not None and self.expected is not None:
                if self.file is not self._in_place:
                    self.file.close()  # gzip: its last bytes go into the buffer
                data = self._in_place.getvalue()
                _edit.write_in_place(self.dest, data, self.expected, self.shown)
                return
            self.file.close()
            if self._raw is not None:
                self._raw.close()
            if self.temp is not None:
                if self.expected is not None and not _edit.still_at(self.dest, self.expected):
                    raise _edit.FileChanged(self.shown)
                os.replace(self.temp, self.dest)

    def abandon(self) -> None:
        """Close quietly (a full disk fails again) and remove the temporary file, if any.

        The file is removed however closing ends: closing flushes what is
        buffered, and CPython checks for signals after each write of a flush,
        so a second Ctrl-C (or a SIGTERM) landing there raises out of
        ``close``.
        """
        try:
            # The loop is in a function of its own: see "Cleanup around loops" in
            # docs/architecture.md.
            _close_quietly((self.file, self._raw))
        finally:
            if self.temp is not None:
                remove_temp(self.temp)


def _close_quietly(sinks: tuple[Any, ...]) -> None:
    """Close each of ``sinks`` that is there; an ``OSError`` is dropped (the output is
    already failing: the first error is the one reported)."""
    for sink in sinks:
        if sink is not None:
            try:
                sink.close()
            except OSError:
                pass


# ---- the file an output replaces ---------------------------------------------------------

RELEASE_ASIDE_BYTES = 1 << 20
"""A replaced file at least this large is let go of on a thread of its own (``replacing``)."""

LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "f2fs", "tmpfs"})
"""Where holding a replaced file only moves its freeing (``replacing``). Elsewhere a
held file can change what the rename does: NFS renames a target still in use
aside (a ``.nfs*`` file, another round trip) instead of replacing it."""


@contextmanager
def replacing(where: Destination) -> Iterator[None]:
    """Hold the file an output is about to replace, and let go of it off the caller's thread.

    The kernel frees a file's blocks and cached pages when its last name is
    gone and its last holder lets go: with nobody holding it, inside the
    rename that replaces it (about 25 ms for a 40 MB file already on disk,
    measured in ``benches/bench_goals.py``), on the caller's time. Held here
    (``O_PATH``: no read permission needed, nothing read), it is freed when a
    thread of its own closes it, beside whatever the caller does next. When
    the block raises, the file is let go of here, at once.

    Only a regular file of at least ``RELEASE_ASIDE_BYTES`` with no other name
    (one with another name is not freed at all), on a filesystem of
    ``LOCAL_FILESYSTEMS`` (as ``/proc/self/mountinfo`` names it), where
    ``O_PATH`` exists (Linux); anything else, or a file that cannot be opened,
    is left to the rename as before. The descriptor is owned by a file object
    from the start (dropped, it closes), and a process forked while it is still
    held closes its copy at once (``os.register_at_fork``).
    """
    held = _hold(where)  # None, or a file object that closes when dropped
    try:
        yield
        if held is not None:
            _release(held)
            held = None
    finally:
        if held is not None:
            held.close()  # the same object the thread has, if it started: closes once


_PENDING: set[io.FileIO] = set()
"""Replaced files handed to a thread and not yet let go of (a child closes its copies)."""


def _forget_pending() -> None:
    for held in list(_PENDING):
        held.close()
    _PENDING.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pending)


def _hold(where: Destination) -> Optional[io.FileIO]:
    path_only = getattr(os, "O_PATH", 0)
    if where.kind != "file" or not path_only:
        return None
    try:
        info = os.lstat(where.path)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_nlink != 1
            or info.st_size < RELEASE_ASIDE_BYTES
            or not _local(info.st_dev)
        ):
            return None
        return io.FileIO(os.open(where.path, path_only | os.O_NOFOLLOW | os.O_CLOEXEC), "r")
    except OSError:
        return None  # gone, or not ours to hold: the rename frees it, as before


def _local(device: int) -> bool:
    """Whether ``device`` holds a filesystem of ``LOCAL_FILESYSTEMS``."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        # Read whole, then searched: no loop inside the ``with`` (see "Cleanup around
        # loops" in docs/architecture.md).
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split(" ", 3)
        if len(fields) > 2 and fields[2] == wanted:
            kind = line.partition(" - ")[2].split(" ", 1)[0]
            return kind in LOCAL_FILESYSTEMS
    return False


def _let_go(held: io.FileIO) -> None:
    held.close()
    _PENDING.discard(held)


def _release(held: io.FileIO) -> None:
    _PENDING.add(held)
    try:
        threading.Thread(
            target=_let_go, args=(held,), name="agent-rollout-release", daemon=True
        ).start()
    except RuntimeError:  # the interpreter is shutting down: no new thread
        _let_go(held)


# ---- SIGTERM and SIGHUP while a file is written -------------------------------------------

_TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


_RECEIVED: list[int] = []
"""The SIGTERMs and SIGHUPs our handler took during the outermost ``signals_end_cleanly``
now open, oldest first. Its ``Terminated`` can be lost on the way out: a handler runs
in whatever Python code the main thread is in, and some code drops exceptions (a
finaliser the collector runs, an extension function that cannot raise, such as
pyarrow's first import of pandas). ``raise_if_terminated`` and the block's end look here."""


def _terminate(signum: int, frame: object) -> None:
    del frame
    _RECEIVED.append(signum)
    raise Terminated(signum)


def raise_if_terminated() -> None:
    """Raise ``Terminated`` for a SIGTERM or SIGHUP our handler took on this (the main)
    thread while output was written, should its own exception have been lost.

    Called before an output is put in place (``Output.commit``), after each call of
    a caller's ``progress``, and for each Parquet batch: a lost signal ends the run
    within a chunk of input, not at its end."""
    if _RECEIVED and threading.current_thread() is threading.main_thread():
        raise Terminated(_RECEIVED[0])


def _install() -> None:
    """Our handler for each terminating signal left at its default action."""
    for signum in _TERMINATING:
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _terminate)
        except (OSError, ValueError):  # pragma: no cover - not settable here
            pass


def _uninstall() -> None:
    """The default action back wherever our handler is (it only ever replaced it)."""
    for signum in _TERMINATING:
        if signal.getsignal(signum) is _terminate:
            signal.signal(signum, signal.SIG_DFL)


def _carries_terminated(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``Terminated``, or was raised from or while handling one
    (the caller's code took the signal and said so its own way)."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, Terminated):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@contextmanager
def signals_end_cleanly() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into ``Terminated`` while output is written.

    Only on the main thread (the only one Python runs signal handlers on) and
    only for a signal left at its default action, which would kill the
    process with the temporary file in place. ``Terminated`` is a
    ``SystemExit`` (status 128 + signal number): cleanup runs on the way out,
    and an uncaught one ends the process with the status a shell reports for
    a process the signal killed. Handlers the caller set are left alone. The
    outermost block on the main thread owns the handlers; blocks inside it
    change nothing.

    Should a signal's ``Terminated`` be lost in code that drops exceptions, the
    signal is still honoured: ``raise_if_terminated`` raises it again (before an
    output is put in place, and as the run goes), and if the block ends with
    neither it nor an exception raised from it, the signal is sent again once the
    default action is back (the process ends as it would have had the signal
    come just after the block).
    """
    owner = threading.current_thread() is threading.main_thread() and not any(
        signal.getsignal(signum) is _terminate for signum in _TERMINATING
    )
    delivered = False
    try:
        if owner:
            _RECEIVED.clear()  # what came before is not ours
            _install()  # inside the try: a signal right after it is cleaned up too
        yield
    except BaseException as exc:
        delivered = _carries_terminated(exc)
        raise
    finally:
        if owner:
            _uninstall()
            lost = _RECEIVED[0] if _RECEIVED and not delivered else None
            _RECEIVED.clear()
            if lost is not None and signal.getsignal(lost) == signal.SIG_DFL:
                signal.raise_signal(lost)


# ---- input ----------------------------------------------------------------------------------


class Opened(NamedTuple):
    """An input as the readers take it."""

    stream: Any
    """Binary, buffered (``read1`` hands over what is there, ``peek``); gzip undone once
    ``agent_rollout._jsonl.open_jsonl`` has looked at it."""
    is_gzip: bool
    idle: Callable[[], bool]
    """Whether a read now would wait (a pipe or terminal with nothing in it)."""


def _never_idle() -> bool:
    return False


def open_input(path: str) -> Opened:
    """Open a rollout file (``-``: descriptor 0 itself, as on the Rust engine)."""
    raw: Any = open(0, "rb", closefd=False) if path == "-" else open(path, "rb")
    try:
        fd = raw.fileno()
        idle = _never_idle
        if not stat.S_ISREG(os.fstat(fd).st_mode):

            def idle() -> bool:
                return not select.select([fd], [], [], 0)[0]

        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    except BaseException:
        raw.close()
        raise
    return Opened(buffered, False, idle)


__all__ = [
    "GZIP_LEVEL",
    "Destination",
    "Opened",
    "Output",
    "OutputFormat",
    "destination",
    "named",
    "naming",
    "open_input",
    "output_format",
    "path_text",
    "raise_if_terminated",
    "release_reader",
    "remove_temp",
    "signals_end_cleanly",
    "source_name",
    "temp_stem",
]
