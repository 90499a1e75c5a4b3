"""A one-line progress display for long commands, and the numbers it shows.

``Progress`` redraws a status line in place on standard error (``\\r`` then the
text, then "erase to end of line"), at most once per ``interval`` seconds, and
only when the stream is a terminal: piped or redirected, it draws nothing. The
line is erased by ``finish`` so that the summary printed after it starts clean.

``input_position`` tells how far the process has read an input file, from
``/proc/self/fdinfo`` (Linux): the Rust engine reads the file itself, so its
offset is the only view of the progress in bytes that Python has.

Standard library only (and the package's error classes).
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Optional, TextIO

from agent_rollout._errors import Terminated, error_text, printable
from agent_rollout.cli._lines import OutputError, file_problem, os_filename

__all__ = [
    "Progress",
    "end_on",
    "format_count",
    "format_rate",
    "input_position",
    "input_size",
    "say",
]

ERASE_LINE = "\r\x1b[K"
GZIP_MAGIC = b"\x1f\x8b"

Position = Callable[[], Optional[int]]


def format_count(count: int) -> str:
    return f"{count:,}"


def format_rate(count: int, seconds: float) -> str:
    """``count`` per second, whole, with thousands separators (``"-"`` for no time)."""
    if seconds <= 0:
        return "-"
    return f"{count / seconds:,.0f}"


def input_size(path: str) -> Optional[int]:
    """The byte size of a plain (not gzip) regular input file, else None.

    ``"-"`` is standard input: its size is known only when it is a regular
    file (``< rollouts.jsonl``), not a pipe or a terminal.
    """
    try:
        if path == "-":
            fd = sys.stdin.fileno()
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            head = os.pread(fd, 2, 0)
        else:
            # Never open anything but a regular file: opening a named pipe here
            # would take the place of the real reader.
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                return None
            with open(path, "rb") as handle:
                head = handle.read(2)
    except (OSError, ValueError):
        return None
    return None if head == GZIP_MAGIC else info.st_size


def input_position(path: str) -> Position:
    """A function returning how many bytes of ``path`` this process has read so far.

    It finds the descriptor open on the file (the first time it is called,
    and again if that descriptor stops pointing at the file) and reads its
    offset from ``/proc/self/fdinfo``. It returns None where that is not
    possible (no ``/proc``, the file not open yet).
    """
    fd_found: list[int] = []
    if path == "-":
        try:
            fd_found.append(sys.stdin.fileno())
        except (OSError, ValueError):
            return lambda: None
        target = ""
    else:
        target = os.path.realpath(path)

    def points_at_target(fd: int) -> bool:
        return not target or os.readlink(f"/proc/self/fd/{fd}") == target

    def find() -> Optional[int]:
        for name in os.listdir("/proc/self/fd"):
            if name.isdigit() and points_at_target(int(name)):
                return int(name)
        return None

    def position() -> Optional[int]:
        try:
            if not fd_found or not points_at_target(fd_found[0]):
                fd = find()
                if fd is None:
                    return None
                fd_found[:] = [fd]
            # Read whole, then searched: no loop inside the ``with`` (see "Cleanup
            # around loops" in docs/architecture.md).
            with open(f"/proc/self/fdinfo/{fd_found[0]}", encoding="ascii") as info:
                lines = info.read().splitlines()
            for line in lines:
                if line.startswith("pos:"):
                    return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    return position


class Progress:
    """A status line on a terminal: ``label  12,345 rows  81,000 rows/s  41%  0.2 s``.

    ``update(done)`` records how many items are done and redraws when
    ``interval`` seconds have passed since the last drawing. A percentage is
    shown against ``total`` items, or else against ``size`` input bytes, with
    the bytes read so far from ``update(read=...)`` or the ``position`` function.
    ``ticking()`` keeps the line alive (the clock moving) from a background
    thread while one long call runs. With ``of_total`` set and a ``total``,
    the count reads ``done/total`` (``12/24 rollouts``). Thread-safe.
    """

    def __init__(
        self,
        label: str,
        *,
        unit: str = "rows",
        stream: Optional[TextIO] = None,
        enabled: Optional[bool] = None,
        interval: float = 0.1,
        total: Optional[int] = None,
        size: Optional[int] = None,
        position: Optional[Position] = None,
        of_total: bool = False,
    ) -> None:
        self.label = label
        self.unit = unit
        self.of_total = of_total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.interval = interval
        self.total = total
        self.size = size if size else None
        self.position = position
        self.done = 0
        self.read: Optional[int] = None
        self.status = ""
        self.drawn = False
        self._start = time.perf_counter()
        self._last_draw = self._start
        self._lock = threading.Lock()

    def update(
        self,
        done: int,
        *,
        status: Optional[str] = None,
        read: Optional[int] = None,
        force: bool = False,
    ) -> None:
        """Record ``done`` items (and ``read`` input bytes, when known); redraw if due."""
        with self._lock:
            self.done = done
            if read is not None:
                self.read = read
            if status is not None:
                self.status = status
            self._maybe_draw(force)

    def pulse(self) -> None:
        """Redraw with the same count if it is time (the clock moves on)."""
        with self._lock:
            self._maybe_draw(False)

    def show(self, status: str) -> None:
        """Say ``status`` at once (drawn now, not when due): called before a wait, so that
        the line says what the command waits for before the wait begins."""
        self.update(self.done, status=status, force=True)

    def say(self, line: str) -> None:
        """``line`` (made ``printable``) on a line of its own above the progress line, which
        is drawn again under it; without a line drawn, as the module's ``say``."""
        with self._lock:
            if self.drawn and self.enabled:
                self._write(ERASE_LINE + printable(line) + "\n")
                self._maybe_draw(True)
                return
        say(line)

    def finish(self) -> None:
        """Erase the line (if one was drawn); later updates draw nothing."""
        with self._lock:
            if self.drawn:
                self._write(ERASE_LINE)
            self.enabled = False

    @contextmanager
    def ticking(self, status: Optional[str]) -> Iterator[None]:
        """Redraw the line every ``interval`` seconds while the block runs (``show`` and
        ``update`` change what it says meanwhile); ``None``: the block says first what it
        waits for (``show``), within ``interval``."""
        if status is not None:
            self.update(self.done, status=status)
        if not self.enabled:
            yield
            return
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.interval):
                self.pulse()

        thread = threading.Thread(target=tick, name="agent-rollout-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def _maybe_draw(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._write(ERASE_LINE + printable(self._text(now - self._start)))
        self.drawn = True

    def _percent(self) -> Optional[float]:
        if self.total:
            return 100.0 * self.done / self.total
        if self.size:
            where = self.read
            if where is None and self.position is not None:
                where = self.position()
            if where is not None:
                return min(100.0, 100.0 * where / self.size)
        return None

    def _text(self, seconds: float) -> str:
        parts = [self.label]
        if self.status:
            parts.append(self.status)
        if self.of_total and self.total:
            parts.append(f"{format_count(self.done)}/{format_count(self.total)} {self.unit}")
            if self.done:
                parts.append(f"{format_rate(self.done, seconds)} {self.unit}/s")
        elif self.done or not self.status:
            parts.append(f"{format_count(self.done)} {self.unit}")
            parts.append(f"{format_rate(self.done, seconds)} {self.unit}/s")
        percent = self._percent()
        if percent is not None:
            parts.append(f"{percent:.0f}%")
        parts.append(f"{seconds:.1f} s")
        return "  ".join(parts)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # the terminal went away: stop drawing, keep working


def end_on(
    exc: BaseException, prog: str, dest: str, progress: Progress, source: Optional[str] = None
) -> int:
    """The exit code for Ctrl-C (130), SIGTERM/SIGHUP (128 + signal) or an I/O error (2).

    Says so on stderr first: ``PROG: interrupted``, or an I/O error as a line about
    its file (``rows.jsonl: cannot read file: No such file or directory``, ``cannot
    write`` for ``dest``: ``cli._lines.file_problem``). A ``BrokenPipeError`` (the
    reader of standard output went away) is raised again, for the dispatcher to end
    quietly, and standard output that cannot be written as an ``OutputError``, for the
    dispatcher to say as every command says it; anything else is a bug here.
    """
    progress.finish()
    left = "" if dest == "-" else f"; {dest} was not written"
    if isinstance(exc, KeyboardInterrupt):
        say(f"{prog}: interrupted{left}")
        return 130
    if isinstance(exc, Terminated):
        say(f"{prog}: terminated by {exc.signal_name()}{left}")
        return 128 + exc.signum
    if isinstance(exc, BrokenPipeError):
        raise exc
    if isinstance(exc, OutputError):
        raise exc  # standard output cannot be written: the dispatcher says it
    if isinstance(exc, OSError):
        name = os_filename(exc)
        if name == dest == "-" and name != source:  # the rows on standard output
            raise OutputError(exc.errno, exc.strerror or error_text(exc)) from None
        doing = "read" if name == source else "write" if name == dest else ""
        text = file_problem(exc, doing)
        say(text if text is not None else f"{prog}: {error_text(exc)}")
        return 2
    raise exc


def say(line: str) -> None:
    """One line on standard error, made ``printable``: the names in it are the user's text.

    Every line a command says has one of the shapes of ``cli._lines.MESSAGE_SHAPES``
    (docs/messages.md): ``agent-rollout COMMAND: MESSAGE`` for the command as a whole,
    ``PATH: MESSAGE`` or ``PATH:LINE[:COL]: MESSAGE`` for a file, a summary."""
    sys.stderr.write(printable(line) + "\n")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
