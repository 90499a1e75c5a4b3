"""The shapes of the command line's lines, and its lines about a file.

Every line a command prints about a problem, and its summary, has one of the shapes
of ``MESSAGE_SHAPES``: the table docs/messages.md holds too, with why, and
``tests/test_message_style.py`` holds each command's lines to. ``say``
(``cli._progress``) writes them; ``file_problem`` words an ``OSError`` about one file
as ``check`` words an unreadable config.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Any, Optional

from agent_rollout._errors import shown_path

__all__ = [
    "MESSAGE_SHAPES",
    "GuardedOutput",
    "OutputError",
    "Shape",
    "file_problem",
    "os_filename",
    "output_problem",
]


@dataclass(frozen=True)
class Shape:
    """One shape of the command line's lines: its name, how it is written (the
    table in docs/messages.md), a regular expression every such line matches whole
    (named groups for its parts), and an example."""

    name: str
    written: str
    pattern: str
    example: str


MESSAGE_SHAPES: tuple[Shape, ...] = (
    Shape(
        "command",
        "agent-rollout COMMAND: MESSAGE",
        r"agent-rollout(?: (?P<command>[a-z]+))?: (?!error: |agent-rollout)"
        r"(?P<level>(?:warning|note): )?(?P<message>\S.*)",
        "agent-rollout run: give a CONFIG file, or --example NAME for a bundled one",
    ),
    Shape(
        "usage",
        "usage: agent-rollout COMMAND ...",
        r"usage: agent-rollout\b.*| {2,}\S.*",
        "usage: agent-rollout demo [-h] [--rows N] [--offline]",
    ),
    Shape(
        "missing package",
        "agent-rollout COMMAND: WHAT is not installed: pip install PACKAGES",
        r"agent-rollout (?P<command>[a-z]+): (?P<message>\S.*?): (?P<hint>pip install '\S.*)",
        "agent-rollout lsp: pygls is not installed: pip install 'pygls>=2,<3' "
        "'lsprotocol>=2025.0.0'",
    ),
    Shape(
        "config issue",
        "PATH:LINE:COL: [warning: |error (strict): ][LOCATION: ]MESSAGE",
        r"(?P<path>[^:].*?):(?P<line>\d+):(?P<col>\d+): "
        r"(?P<level>warning: |error \(strict\): )?(?P<message>\S.*)",
        "configs/grpo.yaml:7:22: warning: training.rollout_max_steps: '010' reads as int 8 ...",
    ),
    Shape(
        "file line",
        "PATH:LINE[:COL]: MESSAGE",
        r"(?P<path>[^:].*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<message>\S.*)",
        "rollouts.jsonl:2:15: invalid JSON: the line ends inside an object",
    ),
    Shape(
        "file",
        "PATH: MESSAGE",
        r"(?!agent-rollout)(?P<path>[^:\s].*?): (?P<message>\S.*)",
        "rollouts.jsonl: cannot read file: No such file or directory",
    ),
    Shape(
        "summary",
        "VERB COUNTS",
        r"(?P<verb>checked|normalised|ran|fixed|would fix) \S.*",
        "checked 3 files: 2 valid, 1 invalid, 2 errors",
    ),
    Shape(
        "annotation",
        "::error|warning file=PATH,line=L,endLine=L,col=C,endColumn=C,title=TITLE::MESSAGE",
        r"::(?P<level>error|warning) file=(?P<path>[^,]+),line=(?P<line>\d+),"
        r"endLine=(?P<end_line>\d+),col=(?P<col>\d+),endColumn=(?P<end_col>\d+),"
        r"title=(?P<title>[^:]+)::(?P<message>\S.*)",
        "::error file=grpo.yaml,line=4,endLine=4,col=23,endColumn=26,"
        "title=agent-rollout check (strict)::training.rollout_group_size: ...",
    ),
)
"""Every line the command line prints about a problem, and its summaries, by shape
(docs/messages.md holds the same table, with why). One prefix for the command
(``agent-rollout COMMAND: ``, never twice), a file's path first where the line is
about a file (as the user gave it; one the package found, relative to the current
folder when under it: ``_printable.found_path``), the reason in words (``file_problem``,
never ``[Errno 2]``), no ``error:`` word (a problem is said plainly, a warning says
``warning:``, a remark ``note:``), one install hint (``_extras.missing_text``)."""


def file_problem(exc: OSError, doing: str = "") -> Optional[str]:
    """An ``OSError`` about one file as a line says it, the path first and the reason
    in words: ``rows.jsonl: cannot read file: No such file or directory`` (``doing``:
    ``"read"`` or ``"write"``; ``""``: ``rows.jsonl: No such file or directory``);
    ``None`` for one that names no file, or two (``error_text`` says those)."""
    name = os_filename(exc)
    if name is None or exc.filename2 is not None or not exc.strerror:
        return None
    what = f"cannot {doing} file: " if doing else ""
    return f"{shown_path(name)}: {what}{exc.strerror}"


def os_filename(exc: OSError) -> Optional[str]:
    """The file an ``OSError`` names, as text (``None``: none)."""
    name = exc.filename
    if name is None:
        return None
    return os.fsdecode(name) if isinstance(name, (bytes, os.PathLike)) else str(name)


class OutputError(OSError):
    """Standard output could not be written (full, an I/O error, closed): not a bug of
    the command, and not a broken pipe (the reader went away: no error at all). Every
    command says it the same way, once, from the dispatcher: ``output_problem``."""


def output_problem(prog: str, exc: OSError) -> str:
    """``agent-rollout stats: cannot write to standard output: No space left on device``:
    the command's line for standard output that cannot be written, whatever wrote it."""
    reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return f"{prog}: cannot write to standard output: {reason}"


class GuardedOutput:
    """Standard output as the commands write it: the stream Python opened (``None`` when
    descriptor 1 was closed), each write error (but a broken pipe) raised as an
    ``OutputError`` and kept in ``error``, so that one swallowed on the way (argparse's
    ``--help`` and ``--version`` ignore theirs) is still said at the end. Anything else
    is the stream's own."""

    def __init__(self, stream: Any, error: Optional[list[OSError]] = None) -> None:
        self.stream = stream
        self.errors: list[OSError] = [] if error is None else error

    @property
    def error(self) -> Optional[OSError]:
        """The first write error, if any."""
        return self.errors[0] if self.errors else None

    def _failed(self, exc: Optional[OSError]) -> OutputError:
        if exc is None:  # descriptor 1 closed: Python gave no stream
            failure = OutputError(errno.EBADF, os.strerror(errno.EBADF))
        elif isinstance(exc, OutputError):
            failure = exc
        else:
            failure = OutputError(exc.errno, exc.strerror or str(exc))
        self.errors.append(failure)
        return failure

    def _call(self, name: str, *args: Any) -> Any:
        if self.stream is None:
            raise self._failed(None)
        try:
            return getattr(self.stream, name)(*args)
        except BrokenPipeError:
            raise  # the reader went away: the dispatcher ends quietly
        except OSError as exc:
            raise self._failed(exc) from None

    def write(self, data: Any) -> Any:
        return self._call("write", data)

    def writelines(self, lines: Any) -> None:
        self._call("writelines", lines)

    def flush(self) -> None:
        if self.stream is not None:  # closed: nothing was written, nothing to flush
            self._call("flush")

    def fileno(self) -> int:
        return int(self._call("fileno"))

    def isatty(self) -> bool:
        return self.stream is not None and bool(self.stream.isatty())

    @property
    def buffer(self) -> GuardedOutput:
        """The bytes under the text, guarded alike (the same ``errors``); none under a
        text stream alone (``contextlib.redirect_stdout``)."""
        inner = None if self.stream is None else getattr(self.stream, "buffer", None)
        if self.stream is not None and inner is None:
            raise AttributeError("buffer")
        return GuardedOutput(inner, self.errors)

    def __getattr__(self, name: str) -> Any:
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)
