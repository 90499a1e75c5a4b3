"""Code actions: ``check``'s fixes (``agent_rollout.config._fixes``) as quick fixes and
``source.fixAll.agent-rollout``.

A quick fix (kind ``quickfix``) answers one diagnostic: its edits are the
fix's own, at positions, so the rest of the line and file stay as they are.
Every fix is offered, whatever its applicability, one action per way of
fixing (a fix and each of its alternatives, the title saying which: ``010``
written ``8``, ``10`` or ``"010"``); a safe one is preferred (what an editor
applies at one keystroke), an unsafe or display-only one is for the user to
pick. ``source.fixAll.agent-rollout`` is ``fix_text``, what ``check --fix``
writes (the safe fixes only), sent as the lines it changes (a fix never adds or
removes a line break, so each changed line is replaced whole and comments,
order and formatting elsewhere stay). Both are computed from the check of
the document's current version; a client that sends stale positions gets
edits versioned to the text they were made for, where it supports that.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, Optional

from lsprotocol import types

from agent_rollout.config import SAFE, Fix, fix_text, issue_fixes
from agent_rollout.lsp._diagnostics import diagnostic as diagnostic_of
from agent_rollout.lsp._diagnostics import issue_range, issue_ranges, overlaps
from agent_rollout.lsp._documents import Checked
from agent_rollout.lsp._text import Lines

__all__ = ["FIX_ALL", "as_diagnostic", "as_range", "code_actions", "fix_all_edits", "forget"]

FIX_ALL = "source.fixAll.agent-rollout"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def as_range(value: dict[str, Any]) -> types.Range:
    """A range of ``_diagnostics`` (the protocol's JSON) as lsprotocol's."""
    start, end = value["start"], value["end"]
    return types.Range(
        types.Position(start["line"], start["character"]),
        types.Position(end["line"], end["character"]),
    )


def as_diagnostic(value: dict[str, Any]) -> types.Diagnostic:
    """A diagnostic of ``_diagnostics`` as lsprotocol's."""
    return types.Diagnostic(
        range=as_range(value["range"]),
        message=value["message"],
        severity=types.DiagnosticSeverity(value["severity"]),
        code=value["code"],
        source=value["source"],
    )


def _json_range(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def _fix_options(checked: Checked) -> dict[str, Any]:
    return {"section": checked.settings.section, "yaml_version": checked.settings.yaml_version}


def _edits(fix: Fix, lines: Lines) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=as_range(issue_range(lines, edit.line, edit.col, edit.end_line, edit.end_col)),
            new_text=edit.text,
        )
        for edit in fix.edits
    ]


def fix_all_edits(old: str, new: str, encoding: str) -> list[types.TextEdit]:
    """The lines that differ between ``old`` and ``new``, as whole-line edits."""
    before, after = _LINE.findall(old), _LINE.findall(new)
    edits = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = types.Position(i1, 0)
        if i2 < len(before) or before[-1].endswith(("\n", "\r")):
            end = types.Position(i2, 0)
        else:  # the last line, with no line break after it: to its end
            last = Lines(before[-1], encoding)
            end = types.Position(i2 - 1, last.to_client(1, len(before[-1]) + 1)[1])
        edits.append(types.TextEdit(range=types.Range(start, end), new_text="".join(after[j1:j2])))
    return edits


def _workspace_edit(
    uri: str, version: Optional[int], edits: list[types.TextEdit], versioned: bool
) -> types.WorkspaceEdit:
    if versioned:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
        )
    return types.WorkspaceEdit(changes={uri: list(edits)})


def _wanted(only: Optional[list[str]], kind: str) -> bool:
    return only is None or any(kind == want or kind.startswith(want + ".") for want in only)


_cache: dict[str, tuple[Checked, list[Fix], Any]] = {}


def _fixes_of(uri: str, checked: Checked) -> tuple[list[Fix], Any]:
    """The fixes of one check and what fixing all gives, computed once per check."""
    hit = _cache.get(uri)
    if hit is not None and hit[0] is checked:
        return hit[1], hit[2]
    fixes = issue_fixes(
        checked.text, checked.result, format=checked.format, **_fix_options(checked)
    )
    fixed = None
    if fixes:
        fixed = fix_text(
            checked.text,
            format=checked.format,
            source=checked.result.source,
            **checked.settings.check_options(),
        )
    _cache[uri] = (checked, fixes, fixed)
    return fixes, fixed


def forget(uri: str) -> None:
    """Drop what was kept for a document (closed)."""
    _cache.pop(uri, None)


def code_actions(
    uri: str,
    checked: Checked,
    lines: Lines,
    at: types.Range,
    only: Optional[list[str]],
    versioned: bool,
    asked: Sequence[types.Diagnostic] = (),
) -> list[types.CodeAction]:
    """The quick fixes of the diagnostics at ``at`` or among ``asked`` (the client's
    ``context.diagnostics``: Neovim sends the cursor's line's), and the fix-all action
    when it changes anything (``only``: the kinds the client asked for)."""
    if checked.result.skipped:
        return []
    actions: list[types.CodeAction] = []
    fixes, fixed = _fixes_of(uri, checked)
    if _wanted(only, types.CodeActionKind.QuickFix):
        ranges = issue_ranges(lines, [fix.issue for fix in fixes])
        for fix, found in zip(fixes, ranges, strict=True):
            issue = fix.issue
            diagnostic = as_diagnostic(
                diagnostic_of(issue, lines, checked.settings.strict, where=found)
            )
            where = diagnostic.range
            named = any(d.range == where and d.message == diagnostic.message for d in asked)
            if not (named or overlaps(_json_range(where), _json_range(at))):
                continue
            actions.extend(
                types.CodeAction(
                    title=choice.title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=choice.applicability == SAFE or None,
                    edit=_workspace_edit(uri, checked.version, _edits(choice, lines), versioned),
                )
                for choice in fix.choices
            )
    if fixed is not None and _wanted(only, FIX_ALL):
        if fixed.changed:
            edits = fix_all_edits(checked.text, fixed.text, lines.encoding)
            count = len(fixed.fixes)
            actions.append(
                types.CodeAction(
                    title=f"Fix all agent-rollout issues ({count} fix{'es' if count != 1 else ''})",
                    kind=FIX_ALL,
                    edit=_workspace_edit(uri, checked.version, edits, versioned),
                )
            )
    return actions
