"""``check``'s issues as LSP diagnostics (plain JSON values: no pygls needed).

One diagnostic per issue, in ``check``'s order (by position): severity
error (1) or warning (2) (``strict`` makes warnings errors, as ``check
--strict`` fails on them), ``code`` the issue's kind (``unknown_key``,
``cross_field``, ``yaml_version`` ...), ``source`` ``agent-rollout``. The
range runs from the issue's start to its end (``ConfigIssue.end_line``,
``end_col``), in the client's position encoding.

The message is written for a line of an editor (Neovim's virtual text,
Flymake's echo area): ``check``'s message without the key path, which the
range already shows, and cut short (``short_message``) when it runs past
``LSP_MESSAGE_CHARS``. The full text, as ``check`` prints it (``location:
message``), goes in ``relatedInformation`` to a client that takes it, and
in the hover over the range (``cut_messages``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

from agent_rollout._limits import LSP_MESSAGE_CHARS
from agent_rollout.config import ConfigIssue
from agent_rollout.lsp._documents import Checked
from agent_rollout.lsp._text import Lines

__all__ = [
    "SOURCE",
    "cut_messages",
    "diagnostic",
    "diagnostics",
    "full_message",
    "issue_range",
    "issue_ranges",
    "message_of",
    "overlaps",
    "short_message",
]

SOURCE = "agent-rollout"
ERROR, WARNING = 1, 2

_ASIDE = re.compile(r" \([^()]*\)")


def full_message(issue: ConfigIssue) -> str:
    """What ``check`` prints after ``path:line:col: [warning: ]``."""
    return f"{issue.location}: {issue.message}" if issue.location else issue.message


def message_of(issue: ConfigIssue) -> str:
    """The diagnostic's message: ``check``'s, without the key path, cut short."""
    return short_message(issue.message)


def short_message(message: str, limit: int = LSP_MESSAGE_CHARS) -> str:
    """``message`` in at most ``limit`` characters, cut where its sentence breaks.

    First the asides in parentheses go. Then, of the clauses (between ``; ``),
    the first stays; the last (most often what to do: "did you mean ...",
    "quote it ...") is kept whole, or up to a comma with an ellipsis; those
    between are kept whole where room is left (never a list cut short). A first
    clause too long on its own is cut after a word, with an ellipsis.
    """
    if len(message) <= limit:
        return message
    text = _ASIDE.sub("", message)
    if len(text) <= limit:
        return text
    first, *rest = text.split("; ")
    if len(first) > limit - 1:
        space = first.rfind(" ", 0, limit - 1)
        return first[: space if space > 0 else limit - 1] + "…"
    kept = {0: first}
    room = limit - len(first)
    if rest:
        last = _fit(rest[-1], room - 2)
        if last:
            kept[len(rest)] = last
            room -= len(last) + 2
    for index, clause in enumerate(rest[:-1], start=1):
        if len(clause) + 2 <= room:
            kept[index] = clause
            room -= len(clause) + 2
    return "; ".join(kept[index] for index in sorted(kept))


def _fit(clause: str, room: int) -> str:
    """``clause`` in ``room`` characters: whole, or up to a comma with an ellipsis;
    ``""`` when neither fits."""
    if len(clause) <= room:
        return clause
    comma = clause.rfind(", ", 0, room)
    return clause[:comma] + "…" if comma > 0 else ""


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


def issue_ranges(lines: Lines, issues: Sequence[ConfigIssue]) -> list[dict[str, Any]]:
    """``issue_range`` of each issue, its positions converted at once (``to_client_all``:
    a long line measured once, however many issues it holds)."""
    points: list[tuple[int, int]] = []
    for issue in issues:
        end_line = issue.line if issue.end_line is None else issue.end_line
        points += [
            (issue.line, issue.col),
            (end_line, issue.col if issue.end_col is None else issue.end_col),
        ]
    found = lines.to_client_all(points)
    return [
        {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        }
        for start, end in zip(found[::2], found[1::2], strict=True)
    ]


def diagnostic(
    issue: ConfigIssue,
    lines: Lines,
    strict: bool,
    uri: Optional[str] = None,
    where: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """One issue as a diagnostic (``where``: its range, when known); with ``uri`` (a
    client that takes ``relatedInformation``), a message cut short carries the full
    text there."""
    if where is None:
        where = issue_range(lines, issue.line, issue.col, issue.end_line, issue.end_col)
    message = message_of(issue)
    found: dict[str, Any] = {
        "range": where,
        "message": message,
        "severity": ERROR if issue.severity == "error" or strict else WARNING,
        "code": issue.kind,
        "source": SOURCE,
    }
    if uri is not None and message != issue.message:
        found["relatedInformation"] = [
            {"location": {"uri": uri, "range": where}, "message": full_message(issue)}
        ]
    return found


def _issues(checked: Checked) -> list[ConfigIssue]:
    result = checked.result
    if result.skipped:
        return []
    return sorted([*result.issues, *result.warnings], key=lambda issue: (issue.line, issue.col))


def diagnostics(checked: Checked, lines: Lines, uri: Optional[str] = None) -> list[dict[str, Any]]:
    """The diagnostics of one check (none for a document that is not a training config);
    ``uri``: as ``diagnostic`` takes it."""
    issues = _issues(checked)
    strict = checked.settings.strict
    return [
        diagnostic(issue, lines, strict, uri, where)
        for issue, where in zip(issues, issue_ranges(lines, issues), strict=True)
    ]


def cut_messages(checked: Checked, lines: Lines, line: int, character: int) -> list[str]:
    """The full text of each diagnostic at the client's position whose message was cut."""
    at = {"line": line, "character": character}
    found = []
    cut = [issue for issue in _issues(checked) if message_of(issue) != issue.message]
    for issue, where in zip(cut, issue_ranges(lines, cut), strict=True):
        if overlaps(where, {"start": at, "end": at}):
            found.append(full_message(issue))
    return found


def _point(position: dict[str, int]) -> tuple[int, int]:
    return position["line"], position["character"]


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two ranges share a position (touching ends count: a cursor at a word's end)."""
    return _point(a["start"]) <= _point(b["end"]) and _point(b["start"]) <= _point(a["end"])
