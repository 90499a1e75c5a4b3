"""The fixes of ``check``'s issues, as text edits: one implementation of each fix.

``agent-rollout check --fix``/``--diff`` and the language server's code
actions (quick fixes and ``source.fixAll``) both take their fixes from here.

Each fix has an ``applicability``, as ruff's fixes do: ``safe`` keeps exactly
what the user meant, and ``check --fix`` and fix-all apply it; ``unsafe`` may
change what a value means, and only ``--unsafe-fixes`` applies it (``check
--fix`` says how many it held back); ``display-only`` is never applied by a
command: the editor offers it, and the user picks. Where a fix has several
ways, the first is the fix and the others are its ``alternatives``, each
offered in the editor as an action of its own. Per kind, and why:

- a look-alike key (``rollout_fucn``) renamed to the key it looks like
  (``rollout_func``): *safe* when it is nearest to one of our keys
  (``meant_keys``); *display-only* when it is as near to several
  (``rollout_ourc``: ``rollout_func`` or ``rollout_source``), one action
  each, since nothing says which was meant (check's message names the
  first, ``--unsafe-fixes`` would have to guess). Never onto a key the
  section holds already (a key given twice), nor while the look-alike itself
  is given twice (renamed, the other would be read: which is meant is the
  user's to say);
- a backend name spelt another way (``Nemo-Gym``, ``nemogym``) to its
  canonical name (``nemo_gym``): *safe*, the loader reads both as one backend;
- a quoted whole number on an integer key (``rollout_max_steps: "10"``)
  unquoted, when it is in the key's range: *safe*, trainers read the number;
- a plain YAML scalar that YAML 1.1 and 1.2 read differently (``010``,
  ``0o10``, ``1e3``, ``yes``, ``on``, a date): its readings are the value as
  the trainer reads it (the ``yaml_version`` checked with: ``010`` is 8 to
  ``yaml.safe_load``), the value as the other version reads it (10), and the
  text as a string (``"010"``), each written so that both versions read it
  alike (a date has no such spelling: it is no reading). Only the scalar is
  edited (an anchor or tag before it stays); a value given by an alias
  (``*V``) has no fix, and an anchored one that an alias also reads has no
  safe one (the alias would read the new value too). Such a fix never leaves
  its key invalid (a rename may: the value's error is then reported): only the
  readings our key's type accepts are kept (on a string key ``yes`` is
  ``"yes"``, never ``true``; on an integer key ``1e3`` is ``1000``). *Safe*
  when the key is ours and its type accepts exactly one reading: that one is
  what the user can have meant (the trainer refuses the others). *Unsafe*
  otherwise: on an integer key ``010`` may be 8 (what the trainer runs with)
  or 10 (what was likely meant), and a key of the trainer's own
  (``rollout_batch_size``) has a type we do not know. The trainer's reading
  comes first, then the other, then the string.

Each fix is a ``Fix``: the issue it answers, a title, and ``TextEdit``s at
positions in the text (1-based, columns in characters, ends exclusive, as
``ConfigIssue``'s), so comments, order and formatting stay as they are.
``fix_text`` applies the fixes that apply (the safe ones; the unsafe ones too
with ``unsafe_fixes``), checks again, and repeats while fixes apply.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional

from pydantic import TypeAdapter, ValidationError

from agent_rollout._errors import ConfigIssue
from agent_rollout.backends import ROLLOUT_KEYS, backend_meant
from agent_rollout.config._document import AUTO_SECTION, Section, section_path
from agent_rollout.config._fields import INT_RANGES, integral_float
from agent_rollout.config._lookalike import meant_keys
from agent_rollout.config._models import RolloutFields
from agent_rollout.config._parse import Pos, plain_scalar_value
from agent_rollout.config._span import split_lines, token_end
from agent_rollout.config.check import CheckResult, check_bytes

__all__ = [
    "APPLICABILITIES",
    "DISPLAY_ONLY",
    "SAFE",
    "UNSAFE",
    "Applicability",
    "Fix",
    "FixedText",
    "TextEdit",
    "apply_fixes",
    "fix_text",
    "issue_fixes",
]

MAX_FIX_ROUNDS = 4
"""``fix_text`` checks and fixes at most this many times (a fix can uncover another)."""

Applicability = Literal["safe", "unsafe", "display-only"]
"""How far a fix may be applied without asking (ruff's ``Applicability``)."""

SAFE: Applicability = "safe"
"""Keeps exactly what the user meant: ``check --fix`` and fix-all apply it."""
UNSAFE: Applicability = "unsafe"
"""May change what a value means: applied only with ``--unsafe-fixes``."""
DISPLAY_ONLY: Applicability = "display-only"
"""Never applied by a command; the editor offers it, the user picks."""
APPLICABILITIES: tuple[Applicability, ...] = (SAFE, UNSAFE, DISPLAY_ONLY)


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
    section), so that two fixes renaming two keys to the same key never both apply.
    ``alternatives``: the other ways to fix the issue (each a ``Fix`` of the same issue
    and applicability, without alternatives of its own), offered one by one."""

    issue: ConfigIssue
    title: str
    edits: tuple[TextEdit, ...]
    claims: Optional[str] = None
    applicability: Applicability = SAFE
    alternatives: tuple[Fix, ...] = ()

    @property
    def choices(self) -> tuple[Fix, ...]:
        """The fix, then its alternatives."""
        return (self, *self.alternatives)

    def applies(self, unsafe_fixes: bool = False) -> bool:
        """Whether a command applies it: safe ones always, unsafe ones with ``unsafe_fixes``."""
        return self.applicability == SAFE or (unsafe_fixes and self.applicability == UNSAFE)


@dataclass
class FixedText:
    """What ``fix_text`` did: the new text, the fixes applied, the check of the new text,
    and the unsafe fixes of the new text it held back (none with ``unsafe_fixes``)."""

    text: str
    fixes: list[Fix]
    result: CheckResult
    changed: bool = field(default=False)
    held_back: list[Fix] = field(default_factory=list)


def _choices(
    issue: ConfigIssue,
    found: Sequence[tuple[str, tuple[TextEdit, ...], Optional[str]]],
    applicability: Applicability,
) -> Optional[Fix]:
    """One ``Fix`` of ``(title, edits, claims)`` choices: the first, the rest its alternatives."""
    if not found:
        return None
    fixes = [Fix(issue, title, edits, claims, applicability) for title, edits, claims in found]
    return Fix(
        issue, fixes[0].title, fixes[0].edits, fixes[0].claims, applicability, tuple(fixes[1:])
    )


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
    """``(start col, end col, text)`` of the one-line key or value at ``pos``.

    ``None`` for a YAML alias (``*V``: the value is written at its anchor, and
    other keys may read it too, so no fix of this key edits it) and for an
    anchor or a tag (``check`` places an issue after them, at the scalar; one
    found here is an empty scalar's, nothing to edit).
    """
    end = token_end(lines, fmt, pos)
    if end[0] != pos[0] or end[1] <= pos[1]:
        return None
    text = lines[pos[0] - 1][pos[1] - 1 : end[1] - 1]
    if fmt == "yaml" and text[0] in "*&!":
        return None
    return pos[1], end[1], text


# The anchors and tags written before a YAML value on its line (``&J !!str ``).
_PROPERTIES_BEFORE = re.compile(r"(?:(?<=[\s:,\[{-])|^)((?:(?:![^\s]*|&[0-9A-Za-z_-]+)[ \t]+)+)$")


def _properties(lines: Sequence[str], fmt: str, line: int, col: int) -> tuple[str, ...]:
    """The anchor and tags written just before the YAML value at ``(line, col)``."""
    if fmt != "yaml":
        return ()
    found = _PROPERTIES_BEFORE.search(lines[line - 1][: col - 1])
    return tuple(found.group(1).split()) if found else ()


def _aliased(text: str, properties: Sequence[str]) -> bool:
    """Whether an anchor among ``properties`` is used by an alias anywhere in ``text``."""
    return any(
        re.search(rf"\*{re.escape(name[1:])}(?![0-9A-Za-z_-])", text)
        for name in properties
        if name.startswith("&")
    )


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
    candidates = meant_keys(key)
    if not candidates or any(
        other.kind == "duplicate" and other.location == issue.location for other in result.issues
    ):
        return None  # given twice: renamed, the other one would be read (check says so)
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
    choices = []
    for meant in candidates:
        if (*section, meant) in result.key_positions:
            continue  # the section holds it: renamed, the key would be given twice
        edit = TextEdit(issue.line, start + 1, issue.line, end + 1, meant)
        claims = ".".join((*map(str, section), meant))
        choices.append((f"Rename {key!r} to {meant!r}", (edit,), claims))
    return _choices(issue, choices, SAFE if len(candidates) == 1 else DISPLAY_ONLY)


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
    return Fix(issue, f"Change rollout_backend {name!r} to {meant!r}", (edit,), None, SAFE)


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


@functools.cache
def _value_check(key: str) -> TypeAdapter[Any]:
    """The check of one of our keys' values, the field's own (no cross-field rule)."""
    field = RolloutFields.model_fields[key]
    annotated: Any = Annotated  # the field's type with its constraints, built at run time
    parts = (field.annotation, *field.metadata)
    return TypeAdapter(annotated[parts] if field.metadata else parts[0])


def _accepts(key: str, value: Any) -> bool:
    """Whether our ``key`` takes ``value`` as written, with no issue (a key of the trainer's
    own takes anything: its type is not ours to know)."""
    if key not in ROLLOUT_KEYS:
        return True
    if value is None or (key in INT_RANGES and type(value) is not int):
        return False  # null is unset; a string on an integer key is read with a warning
    try:
        _value_check(key).validate_python(value)
    except ValidationError:
        return False
    return True


def _yaml_version(
    issue: ConfigIssue, key: str, lines: Sequence[str], yaml_version: str, whole: str
) -> Optional[Fix]:
    token = _token(lines, "yaml", (issue.line, issue.col))
    if token is None or token[2][0] in "\"'[{":
        return None
    start, end, text = token
    # An anchored scalar that an alias reads too: the fix changes that value as well.
    shared = _aliased(whole, _properties(lines, "yaml", issue.line, start))
    other = "1.2" if yaml_version == "1.1" else "1.1"
    names = {"1.1": "yaml.safe_load", "1.2": "YAML 1.2"}
    readings = []  # (value, why): the trainer's reading, the other one, the string
    for version, why in (
        (yaml_version, f"as the trainer reads it: {names[yaml_version]}"),
        (other, f"as {names[other]} reads it"),
    ):
        readable, value = plain_scalar_value(text, version)
        if readable:
            readings.append((value, why))
    readings.append((text, "a string"))
    choices = []
    spelt_so_far = set()
    for value, why in readings:
        if key in INT_RANGES:
            value = integral_float(value)  # 1e3 is 1000 to an integer key
        spelt = _spelling(value)
        if spelt is None or spelt == text or spelt in spelt_so_far or not _accepts(key, value):
            continue
        spelt_so_far.add(spelt)
        edit = TextEdit(issue.line, start, issue.line, end, spelt)
        choices.append((f"Write {text} as {spelt} ({why})", (edit,), None))
    sure = key in ROLLOUT_KEYS and len(choices) == 1 and not shared
    return _choices(issue, choices, SAFE if sure else UNSAFE)


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _quoted_number(issue: ConfigIssue, key: str, lines: Sequence[str], fmt: str) -> Optional[Fix]:
    if key not in INT_RANGES:
        return None
    token = _token(lines, fmt, (issue.line, issue.col))
    if token is None or token[2][0] not in "\"'":
        return None
    start, end, text = token
    if any(part.startswith("!") for part in _properties(lines, fmt, issue.line, start)):
        return None  # ``!!str "10"``: a tag says what it is, unquoted or not
    inner = _unquoted(text)
    if inner is None or not _WHOLE_NUMBER.fullmatch(inner[1]):
        return None
    number = int(inner[1])
    low, high = INT_RANGES[key]
    if not low <= number <= high:
        return None
    edit = TextEdit(issue.line, start, issue.line, end, str(number))
    return Fix(issue, f"Unquote {text} (an int)", (edit,), None, SAFE)


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
            fix = _yaml_version(issue, key, lines, yaml_version, text)
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
    unsafe_fixes: bool = False,
) -> FixedText:
    """Check ``text``, apply the fixes that apply (the safe ones; the unsafe ones too with
    ``unsafe_fixes``; never a display-only one), and again while fixes apply
    (``MAX_FIX_ROUNDS``).

    The result is the check of the text as it ends; ``fixes`` are every fix
    applied, each with the issue it answered (positions as they were then);
    ``held_back``, the unsafe fixes of the text as it ends, left for
    ``unsafe_fixes``.
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
    current = text
    result = check_bytes(current, **options)
    fixes_of = functools.partial(
        issue_fixes, format=format, section=section, yaml_version=yaml_version
    )
    found = fixes_of(current, result)
    for _ in range(MAX_FIX_ROUNDS):
        chosen = [fix for fix in found if fix.applies(unsafe_fixes)]
        if not chosen:
            break
        current, done = apply_fixes(current, chosen, format)
        if not done:
            break
        applied.extend(done)
        result = check_bytes(current, **options)
        found = fixes_of(current, result)
    held = [] if unsafe_fixes else [fix for fix in found if fix.applicability == UNSAFE]
    return FixedText(current, applied, result, current != text, held)
