"""``check --fix`` and ``check --diff``: check's fixes applied to files, or shown as a diff.

The fixes are the config layer's (``agent_rollout.config.fix_text``), the
ones the language server offers as code actions: the safe ones, and with
``--unsafe-fixes`` the unsafe ones too (those held back are counted, for the
report to say so). ``--fix`` writes each
file that changes as an editor saves it (``_files.Output`` with the bytes
read as ``expected``: see ``agent_rollout._edit``): atomically, beside itself
then renamed over it, only if it is still what was read, keeping its mode,
owner and group, in place where it has other hard links; SIGTERM and SIGHUP
while it writes leave it as it was, with no temporary file. It reports each fix at the position of
the issue it answered; a file it could not write gets an issue instead
(``CHANGED``: exit 1; ``UNWRITABLE``: exit 2). ``--diff`` writes nothing and
prints a unified diff per file. Both then report the issues the fixed text
still has. The config layer is imported when a file is fixed, not at import.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_rollout._edit import FileChanged, Snapshot, read_snapshot
from agent_rollout._errors import ConfigIssue, error_text, printable
from agent_rollout._files import Output, destination, signals_end_cleanly
from agent_rollout._limits import MAX_CONFIG_BYTES

if TYPE_CHECKING:
    from agent_rollout.config import CheckResult, Fix

__all__ = ["CHANGED", "UNWRITABLE", "Fixed", "fix_file", "fixed_line"]

CHANGED = "changed"
"""The issue kind of a file left unfixed because it changed while it was being fixed
(an editor saved it): the run fails (exit 1); run it again."""

UNWRITABLE = "unwritable"
"""The issue kind of a file whose fixed text could not be written (no permission, a
full disk): a usage error, exit 2, as for a file that cannot be read."""


@dataclass
class Fixed:
    """One file's fixes: the check of its text as fixed, the fixes, its diff, and the
    unsafe fixes held back (without ``--unsafe-fixes``)."""

    result: CheckResult
    fixes: list[Fix] = field(default_factory=list)
    diff: str = ""
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


def _not_fixed(result: CheckResult, message: str, kind: str) -> Fixed:
    """``result`` with the issue that says why its file was not fixed (at its start)."""
    result.issues.insert(0, ConfigIssue(result.source, 1, 1, "", f"not fixed: {message}", kind))
    return Fixed(result)


def _changed(name: str, options: dict[str, Any]) -> Fixed:
    """The file changed since it was read: left as it now is, and checked as it now is."""
    from agent_rollout.config import check_file

    message = "the file changed while it was being fixed; run again"
    return _not_fixed(check_file(name, **options), message, CHANGED)


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
            why = f"cannot write file: {err.strerror or error_text(err)}"
            return _not_fixed(result, why, UNWRITABLE)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            fixed.text.splitlines(keepends=True),
            fromfile=printable(name),
            tofile=printable(name),
        )
    )
    if diff and not diff.endswith("\n"):
        diff += "\n\\ No newline at end of file\n"
    return Fixed(fixed.result, fixed.fixes, diff, fixed.held_back)


def fixed_line(fix: Fix) -> str:
    """``path:line:col: fixed: location: what was done`` (at the issue as it was)."""
    issue = fix.issue
    where = f"{issue.location}: " if issue.location else ""
    return printable(f"{issue.path}:{issue.line}:{issue.col}: fixed: {where}{fix.title}")
