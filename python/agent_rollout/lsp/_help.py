"""Hover and completion: what a rollout key means, and which keys and backends fit here.

Both read the document's text around the cursor, never its parse, so they
answer in a half-typed document too, and are built here as the protocol's
JSON (``hover_reply``, ``completion_items``) in the markup the client takes
(``markup``). A hover over a diagnostic whose message was cut shows its
full text first; a key that is an error beside the document's backend is
completed last, marked. The words come from where the schema
takes them: each key's help text (``agent_rollout.config._fields``, the
schema's ``markdownDescription``, example included), its type and range from
the JSON Schema of ``RolloutSettings``, its default from ``ROLLOUT_DEFAULTS``,
and the backends that take it and the packages each needs from the backend
table (``agent_rollout.backends``), with the command that installs them
(``agent_rollout._extras``). The schema is built on the first hover or
completion, not at start.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from agent_rollout._extras import EXTRAS, pip_command, python_needed
from agent_rollout.backends import (
    BACKEND_NAMES,
    ROLLOUT_DEFAULTS,
    ROLLOUT_KEYS,
    backend_meant,
    get_rollout_backend_spec,
    key_backends,
)
from agent_rollout.config import AUTO_SECTION, RolloutSettings, Section, section_path
from agent_rollout.lsp._text import Lines

__all__ = [
    "Completion",
    "backend_help",
    "chosen_backend",
    "completion_items",
    "completion_sections",
    "completions",
    "hover_at",
    "hover_reply",
    "key_help",
    "markup",
]

_WORD = re.compile(r"[A-Za-z0-9_.-]+")
_BACKEND_VALUE = re.compile(
    r"""^\s*["']?rollout_backend["']?\s*[:=]\s*["']?(?P<typed>[A-Za-z0-9_.-]*)$"""
)
_CHOSEN_BACKEND = re.compile(
    r"""^\s*["']?rollout_backend["']?\s*[:=]\s*["']?(?P<name>[A-Za-z0-9_.-]+)""", re.M
)
_PRESENT_KEY = re.compile(r"""(rollout_[A-Za-z0-9_]+)["']?\s*[:=]""")
"""A rollout key set in the text (led by its literal name: the pattern is searched fast)."""
_KEY_START = {
    "yaml": re.compile(r"^(?P<indent>\s*)(?P<typed>[A-Za-z0-9_-]*)$"),
    "toml": re.compile(r"^(?P<indent>\s*)(?P<typed>[A-Za-z0-9_-]*)$"),
    "json": re.compile(r"""(?:^|[{,])(?P<indent>\s*)"(?P<typed>[A-Za-z0-9_-]*)$"""),
}


@functools.cache
def _properties() -> dict[str, dict[str, Any]]:
    """Each key's JSON Schema, its nullable ``anyOf`` folded into one mapping."""
    schema = RolloutSettings.model_json_schema()["properties"]
    out: dict[str, dict[str, Any]] = {}
    for key in ROLLOUT_KEYS:
        prop = dict(schema.get(key, {}))
        for member in prop.pop("anyOf", []):
            if member.get("type") != "null":
                prop = {**member, **prop}
        out[key] = prop
    return out


def _type_of(key: str) -> str:
    if key == "rollout_backend":
        return f"one of {', '.join(BACKEND_NAMES)} (any case)"
    if key == "rollout_func":
        return "string, 'module.path:function_name'"
    prop = _properties()[key]
    if prop.get("type") == "integer":
        return f"int in [{prop.get('minimum', '...')}, {prop.get('maximum', '...')}]"
    if "pattern" in prop and "http" in str(prop["pattern"]):
        return "string, an http:// or https:// URL"
    return str(prop.get("type", "string"))


def _backends_of(key: str) -> str:
    names = key_backends(key)
    return "every backend" if tuple(sorted(names)) == BACKEND_NAMES else ", ".join(names)


def key_help(key: str) -> str:
    """Markdown: what ``key`` means, its type, default and the backends that take it."""
    prop = _properties()[key]
    text = prop.get("markdownDescription") or prop.get("description") or ""
    default = ROLLOUT_DEFAULTS.get(key)
    facts = [
        f"type: {_type_of(key)}",
        f"default: {default if default is not None else 'unset'}",
        f"backends: {_backends_of(key)}",
    ]
    return f"**{key}**\n\n{text}\n\n" + "  \n".join(facts)


def backend_help(name: str) -> str:
    """Markdown: what backend ``name`` is and the package it needs."""
    spec = get_rollout_backend_spec(name)
    lines = [f"**{spec.name}** (rollout backend)", "", spec.description, ""]
    extra = spec.extra or ""
    install = f"(`{pip_command(extra)}`{python_needed(extra)})" if extra in EXTRAS else ""
    if spec.required_package is not None:
        lines.append(f"needs: `{spec.required_package}` {install}")
    else:
        lines.append("needs: no package of its own")
    if spec.live_package is not None and spec.live_package != spec.required_package:
        lines.append(f"  \nrunning it live needs: `{spec.live_package}` {install}")
    return "\n".join(lines)


def _word_at(line: str, col: int) -> Optional[tuple[int, int, str]]:
    """``(start, end, word)`` (0-based characters) of the word under column ``col``."""
    for found in _WORD.finditer(line):
        if found.start() <= col <= found.end():
            return found.start(), found.end(), found.group(0)
    return None


def hover_reply(
    lines: Lines,
    line: int,
    character: int,
    notes: Sequence[str],
    formats: Optional[Sequence[str]],
) -> Optional[dict[str, Any]]:
    """The protocol's ``Hover`` (JSON) at the client's ``(line, character)``: ``notes``
    (the full text of each diagnostic there whose message was cut), then the help of
    the key or backend name under it (and its range); ``None`` when there is neither."""
    at_line, col = lines.from_client(line, character)
    found = hover_at(lines.line_text(at_line), col - 1)
    if found is None and not notes:
        return None
    parts = list(notes)
    hover: dict[str, Any] = {}
    if found is not None:
        start, end, markdown = found
        parts.append(markdown)
        first = lines.to_client(at_line, start + 1)
        last = lines.to_client(at_line, end + 1)
        hover["range"] = {
            "start": {"line": first[0], "character": first[1]},
            "end": {"line": last[0], "character": last[1]},
        }
    hover["contents"] = markup("\n\n---\n\n".join(parts), formats)
    return hover


def hover_at(line: str, col: int) -> Optional[tuple[int, int, str]]:
    """``(start, end, markdown)`` for the key or backend name at ``col`` of ``line``."""
    word = _word_at(line, col)
    if word is None:
        return None
    start, end, text = word
    if text in ROLLOUT_KEYS:
        return start, end, key_help(text)
    value = _BACKEND_VALUE.match(line[:end])
    if value is not None and value.group("typed") == text:
        name = text.lower() if text.lower() in BACKEND_NAMES else backend_meant(text)
        if name is not None:
            return start, end, backend_help(name)
    return None


@dataclass(frozen=True)
class Completion:
    """One completion item: the label, what it inserts, a detail line, markdown help, order;
    ``wrong``: a key that is an error beside the backend the document chose (ranked last,
    its detail saying why)."""

    label: str
    insert: str
    detail: str
    documentation: str
    sort: str
    is_key: bool
    wrong: bool = False


def _yaml_path(lines: Sequence[str], row: int, indent: int) -> Optional[tuple[str, ...]]:
    """The keys whose block mapping holds a line at ``indent`` (YAML, read by indentation)."""
    path: list[str] = []
    for above in range(row - 1, -1, -1):
        text = lines[above]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        own = len(text) - len(text.lstrip())
        if own >= indent:
            continue
        found = re.match(r"""^\s*["']?([^"':#]+?)["']?\s*:\s*(?:#.*|&\S+\s*)?$""", text)
        if found is None:
            return None  # a list item or a flow mapping: not a plain section
        path.append(found.group(1))
        indent = own
        if own == 0:
            break
    return tuple(reversed(path))


def _toml_path(lines: Sequence[str], row: int) -> Optional[tuple[str, ...]]:
    for above in range(row - 1, -1, -1):
        header = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$", lines[above])
        if header is not None:
            return tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
        if lines[above].lstrip().startswith("[["):
            return None
    return ()


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def _json_path(text: str) -> Optional[tuple[str, ...]]:
    """The keys of the objects open at the end of ``text`` (JSON up to the cursor)."""
    stack: list[Optional[str]] = []
    pending: Optional[str] = None
    last = ""
    for token in _JSON_TOKEN.findall(text):
        if token == ":":
            pending = last
        elif token in "{[":
            stack.append(pending if token == "{" else None)
            pending = None
        elif token in "}]":
            if stack:
                stack.pop()
            pending = None
        elif token == ",":
            pending = None
        else:
            last = token[1:-1]
    if not stack or None in stack[1:]:
        return None
    return tuple(key for key in stack[1:] if key is not None)


def chosen_backend(text: str) -> Optional[str]:
    """The backend name the first line setting ``rollout_backend`` gives (as written), tried
    only at the lines that name it (found at memory speed), not at every line."""
    at = text.find("rollout_backend")
    while at >= 0:
        found = _CHOSEN_BACKEND.match(text, text.rfind("\n", 0, at) + 1)
        if found is not None:
            return found.group("name")
        at = text.find("rollout_backend", at + 1)
    return None


def completion_sections(section: Section, read: Optional[tuple[Any, ...]]) -> list[tuple[str, ...]]:
    """Where rollout keys are completed: the ``section`` the settings name; by default
    (``AUTO_SECTION``), the one the document's last check ``read``, or, none read yet,
    either place the default looks."""
    if section is not AUTO_SECTION:
        return [tuple(map(str, section_path(section)))]
    if read is not None:
        return [tuple(map(str, read))]
    return [tuple(map(str, section_path(AUTO_SECTION))), ()]


def completions(
    lines: Sequence[str],
    row: int,
    col: int,
    fmt: str,
    sections: Sequence[tuple[str, ...]],
    text: str,
    upto: Optional[str] = None,
) -> list[Completion]:
    """What fits at ``(row, col)`` (0-based line, characters): backend names after
    ``rollout_backend:``, or, in one of ``sections``, the rollout keys the section lacks:
    those the chosen backend takes first, then, marked ``wrong``, those that are an
    error beside it (a key of another backend, as the backend table says).

    ``lines`` are read from ``row`` upwards only as far as the section's keys need
    (YAML: up to the first line less indented, TOML: up to a table's header); JSON
    reads the text up to the cursor, ``upto`` (else joined from ``lines``)."""
    before = lines[row][:col] if row < len(lines) else ""
    value = _BACKEND_VALUE.match(before)
    if value is not None:
        return [
            Completion(
                name,
                name,
                get_rollout_backend_spec(name).description,
                backend_help(name),
                name,
                False,
            )
            for name in BACKEND_NAMES
        ]
    start = _KEY_START[fmt].search(before)
    if start is None:
        return []
    if fmt == "yaml":
        path = _yaml_path(lines, row, len(start.group("indent")))
    elif fmt == "toml":
        path = _toml_path(lines, row)
    else:
        path = _json_path(upto if upto is not None else "\n".join([*lines[:row], before]))
    if path not in sections:
        return []
    present = set(_PRESENT_KEY.findall(text))
    name = chosen_backend(text)
    backend = None
    if name is not None:
        backend = name.lower() if name.lower() in BACKEND_NAMES else backend_meant(name)
    items = []
    for order, key in enumerate(ROLLOUT_KEYS):
        if key in present:
            continue
        insert = {"yaml": f"{key}: ", "toml": f"{key} = ", "json": key}[fmt]
        allowed = key_backends(key)
        if backend is None or backend in allowed:
            items.append(
                Completion(key, insert, _type_of(key), key_help(key), f"0{order:02d}", True)
            )
            continue
        # The backend table's rule (config._rules reads the same table): an error here.
        needs = " or ".join(repr(name) for name in allowed)
        why = f"not for {backend!r}: needs rollout_backend {needs}"
        items.append(
            Completion(
                key,
                insert,
                why,
                f"**Not for `{backend}`**: set beside rollout_backend {backend!r}, it is an error "
                f"(it needs rollout_backend {needs}).\n\n{key_help(key)}",
                f"9{order:02d}",
                True,
                wrong=True,
            )
        )
    return items


def markup(markdown: str, formats: Optional[Sequence[str]]) -> Any:
    """Markdown where the client takes it, else the same words as plain text (a plain
    string where the client names no format at all)."""
    if formats and "markdown" in formats:
        return {"kind": "markdown", "value": markdown}
    plain = markdown.replace("**", "").replace("```yaml\n", "").replace("```", "")
    plain = plain.replace("`", "").replace("  \n", "\n")
    if formats and "plaintext" in formats:
        return {"kind": "plaintext", "value": plain}
    return plain


def completion_items(
    found: Sequence[Completion], formats: Optional[Sequence[str]], tags: Sequence[int]
) -> list[dict[str, Any]]:
    """``completions`` as the protocol's ``CompletionItem`` (JSON): ``formats``, the
    documentation formats the client takes; ``tags``, the item tags it shows (a key
    ``wrong`` here is tagged deprecated, drawn struck through, where it shows that)."""
    items = []
    for item in found:
        entry: dict[str, Any] = {
            "label": item.label,
            "kind": 10 if item.is_key else 20,  # Property, EnumMember
            "detail": item.detail,
            "documentation": markup(item.documentation, formats),
            "sortText": item.sort,
            "insertText": item.insert,
        }
        if item.wrong and 1 in tags:
            entry["tags"] = [1]
        items.append(entry)
    return items
