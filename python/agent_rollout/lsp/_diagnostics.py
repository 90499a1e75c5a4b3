"""``check``'s issues as LSP diagnostics (plain JSON values: no pygls needed).

One diagnostic per issue, in ``check``'s order (by position): severity
error (1) or warning (2) (``strict`` makes warnings errors, as ``check
--strict`` fails on them), ``code`` the issue's kind (``unknown_key``,
``cross_field``, ``yaml_version`` ...), ``source`` ``agent-rollout``, and
the message ``check`` prints after the position: ``location: message``.
The range runs from the issue's start to its end (``ConfigIssue.end_line``,
``end_col``), in the client's position encoding. The values are the
protocol's JSON, so the first diagnostics go out before pygls is loaded
(``_start``); the server's handlers make lsprotocol objects of them.
"""

from __future__ import annotations

from typing import Any, Optional

from agent_rollout.config import ConfigIssue
from agent_rollout.lsp._documents import Checked
from agent_rollout.lsp._text import Lines

__all__ = ["SOURCE", "diagnostic", "diagnostics", "issue_range", "message_of", "overlaps"]

SOURCE = "agent-rollout"
ERROR, WARNING = 1, 2


def message_of(issue: ConfigIssue) -> str:
    """What ``check`` prints after ``path:line:col: [warning: ]``."""
    return f"{issue.location}: {issue.message}" if issue.location else issue.message


def issue_range(
    lines: Lines, line: int, col: int, end_line: Optional[int], end_col: Optional[int]
) -> dict[str, Any]:
    """A range of ``check``'s positions (1-based, characters) in the client's units."""
    start = lines.to_client(line, col)
    end = lines.to_client(
        line if end_line is None else end_line, col if end_col is None else end_col
    )
    return {
        "start": {"line": start[0], "character": start[1]},
        "end": {"line": end[0], "character": end[1]},
    }


def diagnostic(issue: ConfigIssue, lines: Lines, strict: bool) -> dict[str, Any]:
    return {
        "range": issue_range(lines, issue.line, issue.col, issue.end_line, issue.end_col),
        "message": message_of(issue),
        "severity": ERROR if issue.severity == "error" or strict else WARNING,
        "code": issue.kind,
        "source": SOURCE,
    }


def diagnostics(checked: Checked, lines: Lines) -> list[dict[str, Any]]:
    """The diagnostics of one check (none for a document that is not a training config)."""
    result = checked.result
    if result.skipped:
        return []
    issues = sorted([*result.issues, *result.warnings], key=lambda issue: (issue.line, issue.col))
    return [diagnostic(issue, lines, checked.settings.strict) for issue in issues]


def _point(position: dict[str, int]) -> tuple[int, int]:
    return position["line"], position["character"]


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two ranges share a position (touching ends count: a cursor at a word's end)."""
    return _point(a["start"]) <= _point(b["end"]) and _point(b["start"]) <= _point(a["end"])
