"""``check --fix`` and ``check --diff``: check's fixes applied to files, or shown as a diff.

The fixes are the config layer's (``agent_rollout.config.fix_text``), the
ones the language server offers as code actions. ``--fix`` writes each
file that changes atomically (beside itself, then renamed over it: an
interrupted run leaves it as it was) and reports each fix at the position
of the issue it answered; ``--diff`` writes nothing and prints a unified
diff per file. Both then report the issues the fixed text still has. The
config layer is imported when a file is fixed, not at import.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_rollout._errors import printable
from agent_rollout._files import Output, destination

if TYPE_CHECKING:
    from agent_rollout.config import CheckResult, Fix

__all__ = ["Fixed", "fix_file", "fixed_line"]


@dataclass
class Fixed:
    """One file's fixes: the check of its text as fixed, the fixes, its diff."""

    result: CheckResult
    fixes: list[Fix] = field(default_factory=list)
    diff: str = ""


def _write(name: str, data: bytes) -> None:
    """Replace ``name`` with ``data``, all or nothing (symlinks are written through)."""
    out = Output(destination(name), name)
    try:
        out.open()
        out.write(data)
        out.commit()
    except BaseException:
        out.abandon()
        raise


def fix_file(name: str, options: dict[str, Any], write: bool) -> Fixed:
    """Check ``name``; when it has fixable issues, fix them (``write``: in the file)."""
    from agent_rollout.config import check_file, fix_text, format_for_suffix

    result = check_file(name, **options)
    fmt = format_for_suffix(name)
    if fmt is None or result.skipped or not (result.issues or result.warnings):
        return Fixed(result)
    if any(issue.kind in ("unreadable", "file", "syntax") for issue in result.issues):
        return Fixed(result)  # nothing to fix in a file that cannot be read as a config
    with open(name, "rb") as handle:  # check_file just read it: a regular UTF-8 file
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Fixed(result)  # changed under us since: report what check saw
    fixed = fix_text(text, format=fmt, source=name, **options)
    if not fixed.changed:
        return Fixed(result)
    if write:
        _write(name, fixed.text.encode("utf-8"))
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
    return Fixed(fixed.result, fixed.fixes, diff)


def fixed_line(fix: Fix) -> str:
    """``path:line:col: fixed: location: what was done`` (at the issue as it was)."""
    issue = fix.issue
    where = f"{issue.location}: " if issue.location else ""
    return printable(f"{issue.path}:{issue.line}:{issue.col}: fixed: {where}{fix.title}")
