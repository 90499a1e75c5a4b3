"""``check --fix`` and ``check --diff``: check's fixes applied to files, or shown as a diff.

The fixes are the config layer's (``agent_rollout.config.fix_text``), the
ones the language server offers as code actions: the safe ones, and with
``--unsafe-fixes`` the unsafe ones too (those held back are counted, for the
report to say so). ``--fix`` writes each
file that changes as an editor saves it (``_files.Output`` with the bytes
read as ``expected``: see ``agent_rollout._edit``): atomically, beside itself
then renamed over it, only if it is still what was read, keeping its mode,
owner, group and extended attributes (ACLs among them), in place where it has
other hard links, or where a new file could not keep them or be made at all
(a folder this user may not write); SIGTERM and SIGHUP
while it writes leave it as it was, with no temporary file. It reports each fix at the position of
the issue it answered; a file it could not write gets an issue instead
(``CHANGED``: exit 1; ``UNWRITABLE``: exit 2). ``--diff`` writes nothing and
makes a unified diff per file (``unified_diff``) that ``git apply`` and
``patch`` take as it is, byte for byte. Both then report the issues the fixed
text still has. The config layer is imported when a file is fixed, not at
import.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_rollout._edit import FileChanged, Snapshot, read_snapshot
from agent_rollout._errors import EDIT_MESSAGES, ConfigIssue, error_text, printable
from agent_rollout._files import Output, destination, signals_end_cleanly
from agent_rollout._limits import MAX_CONFIG_BYTES

if TYPE_CHECKING:
    from agent_rollout.config import CheckResult, Fix

__all__ = ["CHANGED", "UNWRITABLE", "Fixed", "diff_name", "fix_file", "fixed_line", "unified_diff"]

CHANGED = "changed"
"""The issue kind of a file left unfixed because it changed while it was being fixed
(an editor saved it): the run fails (exit 1); run it again."""

UNWRITABLE = "unwritable"
"""The issue kind of a file whose fixed text could not be written (no permission, a
full disk): a usage error, exit 2, as for a file that cannot be read."""


@dataclass
class Fixed:
    """One file's fixes: the check of its text as fixed, the fixes, its diff (bytes, as
    ``unified_diff`` makes it), and the unsafe fixes held back (without
    ``--unsafe-fixes``)."""

    result: CheckResult
    fixes: list[Fix] = field(default_factory=list)
    diff: bytes = b""
    held_back: list[Fix] = field(default_factory=list)


def _write(name: str, data: bytes, read: Snapshot) -> None:
    """Replace ``name`` (symlinks written through) with ``data`` if it is still ``read``,
    all or nothing: ``FileChanged`` when it is not, ``OSError`` when it cannot be written,
    ``Terminated`` for a SIGTERM or SIGHUP meanwhile (no temporary file left)."""
    with signals_end_cleanly():
        out = Output(destination(name), name, expected=read)
        try:
            out.open()
            out.write(data)
            out.commit()
        except BaseException:
            out.abandon()
            raise


def _not_fixed(result: CheckResult, kind: str, **facts: str) -> Fixed:
    """``result`` with the issue that says why its file was not fixed (at its start): the
    message of ``kind`` in ``EDIT_MESSAGES``."""
    message = EDIT_MESSAGES[kind].format(**facts)
    result.issues.insert(0, ConfigIssue(result.source, 1, 1, "", message, kind))
    return Fixed(result)


def _changed(name: str, options: dict[str, Any]) -> Fixed:
    """The file changed since it was read: left as it now is, and checked as it now is."""
    from agent_rollout.config import check_file

    return _not_fixed(check_file(name, **options), CHANGED)


def fix_file(name: str, options: dict[str, Any], write: bool, unsafe: bool = False) -> Fixed:
    """Check ``name``; when it has fixable issues, fix them (``write``: in the file;
    ``unsafe``: the unsafe fixes too)."""
    from agent_rollout.config import check_file, fix_text, format_for_suffix

    result = check_file(name, **options)
    fmt = format_for_suffix(name)
    if fmt is None or result.skipped or not (result.issues or result.warnings):
        return Fixed(result)
    if any(issue.kind in ("unreadable", "file", "syntax") for issue in result.issues):
        return Fixed(result)  # nothing to fix in a file that cannot be read as a config
    # check_file just read it: a regular UTF-8 file within the limit, unless it changed since.
    try:
        read = read_snapshot(name, MAX_CONFIG_BYTES)
        text = None if read is None else read.data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        read = text = None
    if read is None or text is None:
        return _changed(name, options) if write else Fixed(result)
    fixed = fix_text(text, format=fmt, source=name, unsafe_fixes=unsafe, **options)
    if not fixed.changed:
        return Fixed(result, held_back=fixed.held_back)
    if write:
        try:
            _write(name, fixed.text.encode("utf-8"), read)
        except FileChanged:
            return _changed(name, options)
        except OSError as err:
            return _not_fixed(result, UNWRITABLE, why=err.strerror or error_text(err))
    diff = b"" if write else unified_diff(name, text, fixed.text)
    return Fixed(fixed.result, fixed.fixes, diff, fixed.held_back)


_NO_NEWLINE = "\n\\ No newline at end of file\n"


def _lines(text: str) -> list[str]:
    """``text`` cut after each LF, and only there: a CR, CRLF's included, stays in its
    line, and so does every other character ``str.splitlines`` would cut at (U+2028,
    NEL, form feed), as ``diff`` and ``patch`` read a file. The last line has no LF
    when the text does not end with one."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def unified_diff(name: str, before: str, after: str) -> bytes:
    """The unified diff from ``before`` to ``after``, the text of the file ``name``, as
    ``diff -u`` writes it and ``git apply`` and ``patch`` read it: lines cut at LF only
    (``_lines``), a line without one followed by ``\\ No newline at end of file``, the
    lines as they are (UTF-8, CRs, tabs, any character: the diff is data, not a
    message, and is not escaped), the name in the ``---`` and ``+++`` lines as
    ``diff_name`` shows it. Empty when the texts are the same."""
    header = diff_name(name)
    lines = difflib.unified_diff(_lines(before), _lines(after), header, header, lineterm="\n")
    diff = "".join(line if line.endswith("\n") else line + _NO_NEWLINE for line in lines)
    return diff.encode("utf-8")


_C_ESCAPES = {
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def diff_name(name: str) -> str:
    """A file name as the ``---`` and ``+++`` lines of a diff show it, as git shows it.

    A name ``printable`` would show otherwise (a control character, a line or
    paragraph separator, a bidirectional control, a byte that is not UTF-8), or
    holding ``"``, ``\\`` or ``##[`` (a CI workflow command), is written in
    double quotes with C escapes: ``\\t``, ``\\n``, ``\\"``, ``\\\\``, and every
    other byte that is not printable ASCII, the ``[`` of ``##[`` among them, as
    three octal digits (``"r\\351sultat.yaml"``); ``git apply`` and GNU
    ``patch`` read it back to the name itself. Any other name is written as it
    is, followed by a tab when it holds a space (as git does, so that ``patch``
    takes the whole name and no date after it)."""
    if "##[" not in name and '"' not in name and "\\" not in name:
        if all(printable(char) == char for char in name):
            return f"{name}\t" if " " in name else name
    quoted = "".join(_quoted(byte) for byte in os.fsencode(name))
    return '"' + quoted.replace("##[", "##\\133") + '"'


def _quoted(byte: int) -> str:
    if byte in _C_ESCAPES:
        return _C_ESCAPES[byte]
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\{byte:03o}"


def fixed_line(fix: Fix) -> str:
    """``path:line:col: fixed: location: what was done`` (at the issue as it was)."""
    issue = fix.issue
    where = f"{issue.location}: " if issue.location else ""
    return printable(f"{issue.path}:{issue.line}:{issue.col}: fixed: {where}{fix.title}")
