"""``check``'s issues as LSP diagnostics, and the conversion of ranges both ways.

One diagnostic per issue, in ``check``'s order (by position): severity
error or warning (``strict`` makes warnings errors, as ``check --strict``
fails on them), ``code`` the issue's kind (``unknown_key``,
``cross_field``, ``yaml_version`` ...), ``source`` ``agent-rollout``, and
the message ``check`` prints after the position: ``location: message``.
The range runs from the issue's start to its end (``ConfigIssue.end_line``,
``end_col``), in the client's position encoding.
"""

from __future__ import annotations

from typing import Optional

from lsprotocol import types

from agent_rollout.config import ConfigIssue
from agent_rollout.lsp._documents import Checked
from agent_rollout.lsp._text import Lines

__all__ = ["SOURCE", "diagnostic", "diagnostics", "issue_range", "message_of", "overlaps"]

SOURCE = "agent-rollout"


def message_of(issue: ConfigIssue) -> str:
    """What ``check`` prints after ``path:line:col: [warning: ]``."""
    return f"{issue.location}: {issue.message}" if issue.location else issue.message


def issue_range(
    lines: Lines, line: int, col: int, end_line: Optional[int], end_col: Optional[int]
) -> types.Range:
    """A range of ``check``'s positions (1-based, characters) in the client's units."""
    start = lines.to_client(line, col)
    end = lines.to_client(
        line if end_line is None else end_line, col if end_col is None else end_col
    )
    return types.Range(types.Position(*start), types.Position(*end))


def diagnostic(issue: ConfigIssue, lines: Lines, strict: bool) -> types.Diagnostic:
    error = issue.severity == "error" or strict
    return types.Diagnostic(
        range=issue_range(lines, issue.line, issue.col, issue.end_line, issue.end_col),
        message=message_of(issue),
        severity=types.DiagnosticSeverity.Error if error else types.DiagnosticSeverity.Warning,
        code=issue.kind,
        source=SOURCE,
    )


def diagnostics(checked: Checked, lines: Lines) -> list[types.Diagnostic]:
    """The diagnostics of one check (none for a document that is not a training config)."""
    result = checked.result
    if result.skipped:
        return []
    issues = sorted([*result.issues, *result.warnings], key=lambda issue: (issue.line, issue.col))
    return [diagnostic(issue, lines, checked.settings.strict) for issue in issues]


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges share a position (touching ends count: a cursor at a word's end)."""
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end
