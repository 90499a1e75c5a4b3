"""The fixes of ``check``'s issues, as text edits: one implementation of each fix.

``agent-rollout check --fix``/``--diff`` and the language server's code
actions (quick fixes and ``source.fixAll``) both take their fixes from here:

- a look-alike key (``rollout_fucn``) is renamed to the key it looks like
  (``rollout_func``), unless the section already holds that key;
- a backend name spelt another way (``Nemo-Gym``, ``nemogym``) becomes its
  canonical name (``nemo_gym``);
- a plain YAML scalar that YAML 1.1 and 1.2 read differently (``010``,
  ``yes``, ``1e3``) is rewritten so that both read the value the trainer
  reads (the ``yaml_version`` checked with): ``8``, ``true``, ``"1e3"``;
  a value no spelling gives both readings (a date) has no fix;
- a quoted whole number on an integer key (``rollout_max_steps: "10"``) is
  unquoted, when the number is in the key's range.

Each fix is a ``Fix``: the issue it answers, a title, and ``TextEdit``s at
positions in the text (1-based, columns in characters, ends exclusive, as
``ConfigIssue``'s), so comments, order and formatting stay as they are.
``fix_text`` applies every fix, checks again, and repeats while fixes apply.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from agent_rollout._errors import ConfigIssue
from agent_rollout.backends import backend_meant
from agent_rollout.config._document import AUTO_SECTION, Section, section_path
from agent_rollout.config._lookalike import lookalike_key, nearest_key
from agent_rollout.config._models import INT_RANGES
from agent_rollout.config._parse import Pos, plain_scalar_value
from agent_rollout.config._span import split_lines, token_end
from agent_rollout.config.check import CheckResult, check_bytes

__all__ = ["Fix", "FixedText", "TextEdit", "apply_fixes", "fix_text", "issue_fixes"]

MAX_FIX_ROUNDS = 4
"""``fix_text`` checks and fixes at most this many times (a fix can uncover another)."""


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from ``(line, col)`` to ``(end_line, end_col)`` (exclusive) by ``text``."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Fix:
    """The fix of one issue. ``claims``: what applying it takes for itself (a key of a
    section), so that two fixes renaming two keys to the same key never both apply."""

    issue: ConfigIssue
    title: str
    edits: tuple[TextEdit, ...]
    claims: Optional[str] = None


@dataclass
class FixedText:
    """What ``fix_text`` did: the new text, the fixes applied, the check of the new text."""

    text: str
    fixes: list[Fix]
    result: CheckResult
    changed: bool = field(default=False)


def _key_in_section(issue: ConfigIssue, section: tuple[Any, ...]) -> Optional[str]:
    """The key an issue is about, when it is a key of the section itself."""
    prefix = ".".join(str(part) for part in section)
    where = issue.location
    if prefix:
        if not where.startswith(prefix + "."):
            return None
        where = where[len(prefix) + 1 :]
    return where if where and "." not in where and "[" not in where else None


def _token(lines: Sequence[str], fmt: str, pos: Pos) -> Optional[tuple[int, int, str]]:
    """``(start col, end col, text)`` of the one-line key or value at ``pos``."""
    end = token_end(lines, fmt, pos)
    if end[0] != pos[0] or end[1] <= pos[1]:
        return None
    return pos[1], end[1], lines[pos[0] - 1][pos[1] - 1 : end[1] - 1]


def _unquoted(text: str) -> Optional[tuple[int, str]]:
    """``(offset of the content, content)`` of a quoted token without escapes."""
    if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0]:
        inner = text[1:-1]
        if "\\" not in inner and text[0] not in inner:
            return 1, inner
        return None
    return 0, text


def _rename_key(
    issue: ConfigIssue,
    key: str,
    lines: Sequence[str],
    section: tuple[Any, ...],
    result: CheckResult,
) -> Optional[Fix]:
    if not lookalike_key(key):
        return None
    meant = nearest_key(key)
    if meant == key or (*section, meant) in result.key_positions:
        return None
    line = lines[issue.line - 1] if issue.line <= len(lines) else ""
    # The key itself, bare or quoted, at the position or (a TOML dotted key, placed at
    # its first part) after it in the same key: never past a ``=`` or ``:``, in a value.
    pattern = re.compile(rf"""(?<![\w-]){re.escape(key)}(?![\w-])|["']{re.escape(key)}["']""")
    found = pattern.search(line, issue.col - 1)
    if found is None or re.search("[=:]", line[issue.col - 1 : found.start()]):
        return None
    start, end = found.span()
    if found.group(0)[0] in "\"'":
        start, end = start + 1, end - 1
    edit = TextEdit(issue.line, start + 1, issue.line, end + 1, meant)
    claims = ".".join((*map(str, section), meant))
    return Fix(issue, f"Rename {key!r} to {meant!r}", (edit,), claims)


def _backend_name(issue: ConfigIssue, lines: Sequence[str], fmt: str) -> Optional[Fix]:
    token = _token(lines, fmt, (issue.line, issue.col))
    if token is None:
        return None
    start, _, text = token
    inner = _unquoted(text)
    if inner is None or not inner[1]:
        return None
    offset, name = inner
    meant = backend_meant(name)
    if meant is None or meant == name:
        return None
    col = start + offset
    edit = TextEdit(issue.line, col, issue.line, col + len(name), meant)
    return Fix(issue, f"Change rollout_backend {name!r} to {meant!r}", (edit,))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _spelling(value: Any) -> Optional[str]:
    """A YAML spelling of ``value`` that YAML 1.1 and 1.2 both read as ``value``."""
    if value is None:
        candidates = ["null"]
    elif isinstance(value, bool):
        candidates = ["true" if value else "false"]
    elif isinstance(value, int):
        candidates = [str(value)]
    elif isinstance(value, float):
        if math.isnan(value):
            candidates = [".nan"]
        elif math.isinf(value):
            candidates = [".inf" if value > 0 else "-.inf"]
        else:
            text = repr(value)
            mantissa, _, exponent = text.partition("e")
            if "." not in mantissa:
                mantissa += ".0"
            if exponent and exponent[0] not in "+-":
                exponent = "+" + exponent
            candidates = [mantissa + ("e" + exponent if exponent else "")]
    elif isinstance(value, str):
        quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return quoted if value.isprintable() else None
    else:
        return None  # a date: no spelling gives it under YAML 1.2
    for text in candidates:
        old, new = plain_scalar_value(text, "1.1"), plain_scalar_value(text, "1.2")
        if old[0] and new[0] and _same(old[1], value) and _same(new[1], value):
            return text
    return None


def _yaml_version(issue: ConfigIssue, lines: Sequence[str], yaml_version: str) -> Optional[Fix]:
    token = _token(lines, "yaml", (issue.line, issue.col))
    if token is None or token[2][0] in "\"'[{":
        return None
    start, end, text = token
    readable, value = plain_scalar_value(text, yaml_version)
    if not readable:
        return None
    spelt = _spelling(value)
    if spelt is None or spelt == text:
        return None
    edit = TextEdit(issue.line, start, issue.line, end, spelt)
    reader = "yaml.safe_load" if yaml_version == "1.1" else "YAML 1.2"
    return Fix(issue, f"Write {text} as {spelt} (as {reader} reads it)", (edit,))


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _quoted_number(issue: ConfigIssue, key: str, lines: Sequence[str], fmt: str) -> Optional[Fix]:
    if key not in INT_RANGES:
        return None
    token = _token(lines, fmt, (issue.line, issue.col))
    if token is None or token[2][0] not in "\"'":
        return None
    start, end, text = token
    inner = _unquoted(text)
    if inner is None or not _WHOLE_NUMBER.fullmatch(inner[1]):
        return None
    number = int(inner[1])
    low, high = INT_RANGES[key]
    if not low <= number <= high:
        return None
    edit = TextEdit(issue.line, start, issue.line, end, str(number))
    return Fix(issue, f"Unquote {text} (an int)", (edit,))


def issue_fixes(
    text: str,
    result: CheckResult,
    *,
    format: str = "yaml",
    section: Section = AUTO_SECTION,
    yaml_version: str = "1.1",
) -> list[Fix]:
    """The fix of each issue of ``result`` (``check`` of ``text``) that has one, in order."""
    if result.skipped:
        return []
    lines = split_lines(text, format)
    # The section the check read (the default decides with the file's keys).
    path = result.section
    if path is None:
        path = section_path(section, _root_keys(result))
    found: list[Fix] = []
    for issue in [*result.issues, *result.warnings]:
        fix: Optional[Fix] = None
        key = _key_in_section(issue, path)
        if key is None:
            continue
        if issue.kind == "unknown_key":
            fix = _rename_key(issue, key, lines, path, result)
        elif issue.kind == "yaml_version" and format == "yaml":
            fix = _yaml_version(issue, lines, yaml_version)
        elif key == "rollout_backend":
            fix = _backend_name(issue, lines, format)
        else:
            fix = _quoted_number(issue, key, lines, format)
        if fix is not None:
            found.append(fix)
    return sorted(found, key=lambda fix: (fix.issue.line, fix.issue.col))


def _root_keys(result: CheckResult) -> dict[str, None]:
    """The top-level keys of the file (enough for ``section_path`` to read a dotted section)."""
    return {path[0]: None for path in result.key_positions if len(path) == 1}


def _offsets(text: str, fmt: str) -> list[int]:
    """Where each line starts in ``text`` (the line breaks as the format's reader counts them)."""
    starts = [0]
    for line in split_lines(text, fmt, keep_breaks=True)[:-1]:
        starts.append(starts[-1] + len(line))
    return starts


def apply_fixes(text: str, fixes: Iterable[Fix], format: str = "yaml") -> tuple[str, list[Fix]]:
    """``text`` with the fixes applied, and the ones applied.

    A fix whose edits overlap an earlier fix's, or that claims what an
    earlier one took, is left out (``fix_text``'s next round looks again).
    A byte-order mark stays in front and is not counted in positions.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    starts = _offsets(body, format)

    def offset(line: int, col: int) -> int:
        return starts[min(line, len(starts)) - 1] + col - 1

    taken: list[tuple[int, int]] = []
    claimed: set[str] = set()
    chosen: list[tuple[int, int, str]] = []
    applied: list[Fix] = []
    for fix in fixes:
        spans = [
            (offset(edit.line, edit.col), offset(edit.end_line, edit.end_col), edit.text)
            for edit in fix.edits
        ]
        clash = any(a < d and c < b for a, b, _ in spans for c, d in taken)
        if clash or (fix.claims is not None and fix.claims in claimed):
            continue
        taken.extend((a, b) for a, b, _ in spans)
        chosen.extend(spans)
        if fix.claims is not None:
            claimed.add(fix.claims)
        applied.append(fix)
    for start, end, new in sorted(chosen, reverse=True):
        body = body[:start] + new + body[end:]
    return bom + body, applied


def fix_text(
    text: str,
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Section = AUTO_SECTION,
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
    yaml_version: str = "1.1",
) -> FixedText:
    """Check ``text``, apply every fix, and again while fixes apply (``MAX_FIX_ROUNDS``).

    The result is the check of the text as it ends; ``fixes`` are every fix
    applied, each with the issue it answered (positions as they were then).
    """
    options: dict[str, Any] = {
        "format": format,
        "source": source,
        "section": section,
        "known_keys": frozenset(known_keys),
        "skip_unrelated": skip_unrelated,
        "yaml_version": yaml_version,
    }
    applied: list[Fix] = []
    result = check_bytes(text, **options)
    current = text
    for _ in range(MAX_FIX_ROUNDS):
        found = issue_fixes(
            current, result, format=format, section=section, yaml_version=yaml_version
        )
        if not found:
            break
        current, done = apply_fixes(current, found, format)
        if not done:
            break
        applied.extend(done)
        result = check_bytes(current, **options)
    return FixedText(current, applied, result, current != text)
