"""Config text (YAML, JSON, TOML) as plain values, with the position of every key.

This module knows nothing of rollouts. Each parser turns the text into plain
Python values plus the line and column of keys, so that every error can read
``path:line:col: location: message`` (1-based): the keys on the paths asked
for (the top level and the section) at once in ``Parsed.keys``, and any key
path or list index, at any depth, through ``Parsed.locate``. A problem it
cannot read past (bad syntax, not UTF-8, too deep, too big once aliases are
counted) is a ``ParseProblem`` with its position; problems it can read past
(duplicate keys) are collected on ``Parsed.problems``.

YAML is read as the trainers read it. By default (``yaml_version="1.1"``)
the values are exactly ``yaml.safe_load``'s: PyYAML's own reader, scanner,
parser, YAML 1.1 resolver and ``SafeConstructor`` (``010`` is 8, ``0o10`` the
string ``'0o10'``, ``1_000`` is 1000, ``yes``/``on`` are booleans, ``1:30`` is
90, dates are ``datetime`` values, ``<<`` merges as PyYAML merges). Only the
composer (events to nodes) is ours, for the limits below. ``yaml_version="1.2"``
reads the YAML 1.2 core schema, as YAML editors and YAML 1.2 loaders do
(``yes`` is a string, ``0o10`` is 8, only the core tags).

Limits (their values live in :mod:`agent_rollout._limits`):
- mappings and lists nest at most ``MAX_NESTING_DEPTH`` levels in every
  format (YAML aliases count as copies of what they name);
- only the tags ``yaml.safe_load`` constructs (YAML 1.1: str, int, float,
  bool, null, binary, timestamp, omap, pairs, set, map, seq, merge ``<<``;
  YAML 1.2: the core ones), so no YAML tag can build a Python object;
- YAML aliases are never expanded: a document whose values, each alias
  counted as a full copy of what it names, add up to more than
  ``MAX_YAML_EXPANDED_NODES`` is refused ("billion laughs": nine levels of
  nine-way fan-out would be 387 million values). An alias to a node that is
  not complete yet (a node containing itself, which PyYAML would build) and
  nesting deeper than ``MAX_NESTING_DEPTH`` are refused too; one document;
- TOML positions come from a small line scanner: keys written inside an
  inline table (``training = {rollout_backend = "art"}``) or an inline array
  are reported at the line of the table's own key.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from agent_rollout._errors import shown
from agent_rollout._limits import MAX_NESTING_DEPTH, MAX_YAML_EXPANDED_NODES, int_digits_limit

FORMATS = ("yaml", "json", "toml")
_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}

Pos = tuple[int, int]
KeyPath = tuple[str, ...]


class ParseProblem(Exception):
    """A parser stops at a problem it cannot read past: its position, message and kind."""

    def __init__(self, pos: Pos, message: str, kind: str = "syntax") -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.kind = kind


class _TableWalker:
    """Positions from a table of key paths (TOML's line scanner)."""

    root: Any = ()

    def __init__(self, table: dict[tuple[Any, ...], tuple[Pos, Pos]]) -> None:
        self.table = table

    def step(self, path: tuple[Any, ...], part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        child = (*path, part)
        found = self.table.get(child)
        return None if found is None else (child, found[0], found[1])

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


@dataclass
class Parsed:
    """What every parser returns: values, key positions, and problems found."""

    root: Any
    root_pos: Pos
    keys: dict[KeyPath, tuple[Pos, Pos]]  # key path (the top levels) -> (key, value)
    problems: list[tuple[Pos, str, str, str]]  # (pos, location, message, kind)
    walker: Any = None
    """Finds positions at any depth (``locate``); ``None``: ``keys`` only."""
    empty: bool = False
    """The text holds no document at all (an empty or comment-only YAML file): ``root``
    is ``None`` then, as it is for a document that holds ``null``."""

    def locate(self, path: Sequence[Any]) -> tuple[int, Pos, Pos]:
        """``(found, key position, value position)`` of ``path`` (keys and list indices).

        ``found`` is how many leading parts of the path the text holds; the
        positions are those of the deepest of them (the document start when
        none is), so a key added after reading (a command-line override) is
        placed at the nearest enclosing key the file has. A list item's key
        position is its value position.
        """
        walker = self.walker if self.walker is not None else _TableWalker(dict(self.keys))
        handle = walker.root
        key_pos = value_pos = self.root_pos
        for found, part in enumerate(path):
            step = walker.step(handle, part)
            if step is None:
                return found, key_pos, value_pos
            handle, key_pos, value_pos = step
        return len(path), key_pos, value_pos

    def plain_scalar(self, path: Sequence[Any]) -> Optional[tuple[Pos, str]]:
        """``(position, text)`` of the value at ``path`` when it is a plain YAML scalar.

        Plain: written without quotes or tag, so its type is the reading's
        choice (``010``, ``yes``, ``1e3``). ``None`` otherwise, and for JSON and TOML.
        """
        if self.walker is None:
            return None
        handle, pos = self.walker.root, self.root_pos
        for part in path:
            step = self.walker.step(handle, part)
            if step is None:
                return None
            handle, _, pos = step
        text = self.walker.plain_text(handle)
        return None if text is None else (pos, text)


# ---------------------------------------------------------------- YAML

YAML_VERSIONS: tuple[str, ...] = ("1.1", "1.2")
"""The YAML readings: ``1.1`` is PyYAML's ``yaml.safe_load`` (what trainers use),
``1.2`` the core schema (YAML editors, YAML 1.2 loaders)."""
DEFAULT_YAML_VERSION = "1.1"

_TAG = "tag:yaml.org,2002:"
_CORE_TAGS = frozenset(
    _TAG + name for name in ("str", "int", "float", "bool", "null", "map", "seq")
)
_KEY_TAGS = frozenset((_TAG + "merge", _TAG + "value"))  # only as mapping keys


def check_yaml_version(version: str) -> str:
    if version not in YAML_VERSIONS:
        raise ValueError(f"yaml_version must be one of {', '.join(YAML_VERSIONS)}, got {version!r}")
    return version


@dataclass(frozen=True)
class _YamlKit:
    """What reads one YAML version: the loader (events), the resolver, the constructor."""

    loader: Any
    resolver: Any
    values: Any
    tags: frozenset[str]
    unique_anchors: bool


def _mark(node: Any) -> Pos:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _bad_scalar(node: Any, exc: Exception) -> str:
    """A tagged scalar its constructor refused (``!!int abc``, ``!!bool maybe``)."""
    tag = node.tag[len(_TAG) :] if node.tag.startswith(_TAG) else node.tag
    text = node.value if isinstance(node.value, str) else ""
    if tag in ("bool", "null") and isinstance(exc, KeyError):
        return f"{shown(text)} is not a YAML {tag}"
    if isinstance(exc, ValueError):
        # Without the value Python's text repeats whole ("...float: '1e3e3...'"): shown here.
        reason = str(exc).split(";")[0].partition(": '")[0]
    else:
        reason = f"not a YAML {tag}"
    return f"bad {tag} {shown(text)}: {reason}"


@functools.cache
def _yaml_kit(version: str) -> _YamlKit:
    import yaml
    from yaml.constructor import SafeConstructor
    from yaml.resolver import BaseResolver, Resolver

    class Values(SafeConstructor):
        """``yaml.safe_load``'s constructor, over our node graph.

        A scalar its constructor refuses becomes a ``ParseProblem`` at the
        scalar, and what each node became stays readable
        (``constructed_objects``) so that keys can be placed afterwards.
        """

        state_generators: list[Any]

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except (ParseProblem, yaml.YAMLError):
                raise
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
                raise ParseProblem(_mark(node), _bad_scalar(node, exc), "value") from None

        def sexagesimal_int(self, node: Any) -> Any:
            """PyYAML's int, but a sexagesimal one (``1:30:00``) no longer than the
            interpreter's digit limit: its cost grows with the square of its length."""
            text = self.construct_scalar(node)
            limit = int_digits_limit()
            if isinstance(text, str) and ":" in text and len(text) > limit:
                raise ValueError(f"a sexagesimal int longer than {limit} characters")
            return SafeConstructor.construct_yaml_int(self, node)

        def document(self, root: Any) -> Any:
            """``construct_document`` without forgetting what each node became."""
            data = self.construct_object(root)
            while self.state_generators:
                generators: list[Any] = self.state_generators
                self.state_generators = []
                for generator in generators:
                    for _ in generator:
                        pass
            return data

    if version == "1.1":
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        # The pure-Python reader, scanner and parser: the ones yaml.safe_load
        # runs (libyaml accepts a few documents they refuse, such as a tab
        # before a flow item), with PyYAML's YAML 1.1 resolver.
        class SafeEvents(Reader, Scanner, Parser, Resolver):  # type: ignore[misc]
            def __init__(self, stream: str) -> None:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)
                Resolver.__init__(self)

        Values.add_constructor(_TAG + "int", Values.sexagesimal_int)
        tags = frozenset(tag for tag in SafeConstructor.yaml_constructors if tag is not None)
        return _YamlKit(SafeEvents, Resolver, Values, tags, True)

    class CoreResolver(BaseResolver):
        """YAML 1.2 core schema: the implicit types editors resolve."""

        yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}

    core = [
        ("bool", r"(?:true|True|TRUE|false|False|FALSE)\Z", "tTfF"),
        ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", "-+0123456789"),
        (
            "float",
            r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z",
            "-+0123456789.",
        ),
        ("null", r"(?:~|null|Null|NULL|)\Z", ["~", "n", "N", ""]),
        ("merge", r"<<\Z", "<"),
    ]
    for tag, pattern, first in core:
        CoreResolver.add_implicit_resolver(_TAG + tag, re.compile(pattern), list(first))

    class CoreValues(Values):
        """The core schema's scalars: ``0o``/``0x`` ints, no ``yes``/``on``, no sexagesimal."""

        def core_null(self, node: Any) -> None:
            text = self.construct_scalar(node)
            if text not in ("", "~", "null", "Null", "NULL"):
                raise KeyError(text)

        def core_bool(self, node: Any) -> bool:
            text = self.construct_scalar(node)
            if text not in ("true", "True", "TRUE", "false", "False", "FALSE"):
                raise KeyError(text)
            return bool(text.lower() == "true")

        def core_int(self, node: Any) -> int:
            text = self.construct_scalar(node)
            if text[:2] in ("0o", "0x"):
                return int(text[2:], 8 if text[1] == "o" else 16)
            return int(text)

        def core_float(self, node: Any) -> float:
            text = self.construct_scalar(node)
            lowered = text.lower()
            if lowered.endswith(".inf"):
                return -math.inf if lowered.startswith("-") else math.inf
            if lowered == ".nan":
                return math.nan
            return float(text)

    for name in ("null", "bool", "int", "float"):
        CoreValues.add_constructor(_TAG + name, getattr(CoreValues, f"core_{name}"))

    if getattr(yaml, "__with_libyaml__", False):
        from yaml.cyaml import CParser

        class CoreEvents(CParser, CoreResolver):  # type: ignore[misc]
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                CoreResolver.__init__(self)

        return _YamlKit(CoreEvents, CoreResolver, CoreValues, _CORE_TAGS, False)
    from yaml.parser import Parser as PyParser
    from yaml.reader import Reader as PyReader
    from yaml.scanner import Scanner as PyScanner

    class PyCoreEvents(PyReader, PyScanner, PyParser, CoreResolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            PyReader.__init__(self, stream)
            PyScanner.__init__(self)
            PyParser.__init__(self)
            CoreResolver.__init__(self)

    return _YamlKit(PyCoreEvents, CoreResolver, CoreValues, _CORE_TAGS, False)


def _yaml_size(root: Any) -> None:
    """Refuse alias bombs and deep nesting before any walk.

    Values are counted as if aliases were copies, and depth likewise (an
    alias of a deep list is as deep where it is used). Shared nodes are
    measured once each, bottom-up with an explicit stack, so this costs one
    visit per node written in the file and no recursion, however the
    aliases stack.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth)
    todo: list[tuple[Any, bool]] = [(root, False)]
    while todo:
        node, children_done = todo.pop()
        if id(node) in measured:
            continue
        if node.id == "sequence":
            children = node.value
        elif node.id == "mapping":
            children = [child for pair in node.value for child in pair]
        else:
            measured[id(node)] = (1, 0)
            continue
        if not children_done:
            todo.append((node, True))
            todo.extend((child, False) for child in children if id(child) not in measured)
            continue
        total, depth = 1, 0
        for child in children:
            child_total, child_depth = measured[id(child)]
            total += child_total
            depth = max(depth, child_depth)
            if total > MAX_YAML_EXPANDED_NODES:
                raise ParseProblem(
                    _mark(node),
                    f"the document expands to more than {MAX_YAML_EXPANDED_NODES:,} values "
                    "(aliases count as copies of what they name); refusing to expand it",
                )
        if depth + 1 > MAX_NESTING_DEPTH:
            raise ParseProblem(
                _mark(node),
                f"nested deeper than {MAX_NESTING_DEPTH} levels "
                "(aliases count as copies of what they name)",
            )
        measured[id(node)] = (total, depth + 1)


def _document_order(root: Any) -> list[Any]:
    """Every node once (aliases are not visited again), in the order the text has them."""
    seen: set[int] = set()
    order: list[Any] = []
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        if node.id == "sequence":
            todo.extend(reversed(node.value))
        elif node.id == "mapping":
            todo.extend(child for pair in reversed(node.value) for child in reversed(pair))
    return order


def _yaml_shape(order: list[Any], tags: frozenset[str]) -> dict[int, list[Any]]:
    """Refuse tags the reading does not construct and keys that are not scalars.

    Returns the key nodes each mapping holds itself (merges left out), taken
    before the constructor flattens ``<<`` merges into the mapping.
    """
    as_key: set[int] = set()
    own: dict[int, list[Any]] = {}
    for node in order:
        if node.id == "mapping":
            keys = []
            for key_node, value_node in node.value:
                if key_node.id != "scalar":
                    raise ParseProblem(_mark(key_node), "mapping keys must be scalars", "structure")
                as_key.add(id(key_node))
                if key_node.tag == _TAG + "merge":
                    sources = value_node.value if value_node.id == "sequence" else [value_node]
                    for source in sources:
                        if source.id != "mapping":
                            raise ParseProblem(
                                _mark(source), "a '<<' merge takes a mapping or a list of them"
                            )
                else:
                    keys.append(key_node)
            own[id(node)] = keys
        if node.tag in tags or (node.tag in _KEY_TAGS and id(node) in as_key):
            continue
        raise ParseProblem(_mark(node), f"unsupported YAML tag {shown(node.tag)}", "value")
    return own


def _compose_yaml(text: str, kit: _YamlKit, plain: set[int]) -> Any:
    """The node graph of a single-document YAML text, composed without recursion.

    PyYAML's own composer recurses once per nesting level (the C one can crash
    the interpreter on very deep input), so the events are put together here,
    with the depth checked as they arrive. An anchor is usable only once its
    node is complete, so no node can contain itself. Under YAML 1.1 an anchor
    name may be given once, as PyYAML's composer requires. The ids of plain
    scalars whose tag was resolved (not written) go to ``plain``.
    """
    loader = kit.loader(text)
    try:
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        return _compose_events(loader, kit, plain)
    finally:
        loader.dispose()


def _compose_events(loader: Any, kit: _YamlKit, plain: set[int]) -> Any:
    """``_compose_yaml``'s work, on a loader its caller disposes of."""
    from yaml import events, nodes

    anchors: dict[str, Any] = {}
    named: dict[str, Pos] = {}
    stack: list[list[Any]] = []  # [node, anchor, pending mapping key]
    root: Any = None
    documents = 0

    def attach(node: Any) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        frame = stack[-1]
        if isinstance(frame[0], nodes.SequenceNode):
            frame[0].value.append(node)
        elif frame[2] is None:
            frame[2] = node
        else:
            frame[0].value.append((frame[2], node))
            frame[2] = None

    def name_anchor(event: Any) -> None:
        at = (event.start_mark.line + 1, event.start_mark.column + 1)
        if kit.unique_anchors and event.anchor in named:
            line, col = named[event.anchor]
            raise ParseProblem(
                at,
                f"invalid YAML: found duplicate anchor {shown(event.anchor)} "
                f"(first at line {line}, column {col})",
            )
        named[event.anchor] = at

    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, events.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    "expected a single YAML document, found another one here",
                )
        elif isinstance(event, events.AliasEvent):
            if event.anchor not in anchors:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    f"alias *{event.anchor} names no complete anchor "
                    "(undefined, or a node that would contain itself)",
                )
            attach(anchors[event.anchor])
        elif isinstance(event, events.ScalarEvent):
            tag = event.tag
            if event.anchor is not None:
                name_anchor(event)
            if tag is None or tag == "!":
                tag = loader.resolve(nodes.ScalarNode, event.value, event.implicit)
            node = nodes.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            if event.tag is None and not event.style:  # libyaml: "", PyYAML: None
                plain.add(id(node))
            if event.anchor is not None:
                anchors[event.anchor] = node
            attach(node)
        elif isinstance(event, events.CollectionStartEvent):
            if len(stack) >= MAX_NESTING_DEPTH:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    f"nested deeper than {MAX_NESTING_DEPTH} levels",
                )
            if event.anchor is not None:
                name_anchor(event)
            is_map = isinstance(event, events.MappingStartEvent)
            kind = nodes.MappingNode if is_map else nodes.SequenceNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, None, event.implicit)
            stack.append(
                [kind(tag, [], event.start_mark, None, event.flow_style), event.anchor, None]
            )
        elif isinstance(event, events.CollectionEndEvent):
            node, anchor, _ = stack.pop()
            node.end_mark = event.end_mark
            if anchor is not None:
                anchors[anchor] = node
            attach(node)
    return root


def _part(key: Any) -> str:
    return key if isinstance(key, str) else shown(key)


def location(path: Sequence[Any]) -> str:
    """A key path as messages show it: ``training.items[0].name`` (an int, a list
    index or an int key, in brackets)."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{shown(part)}]"
        else:
            text += ("." if text else "") + _part(part)
    return text


class _YamlWalker:
    """Positions in a composed YAML document, read from its nodes on demand."""

    def __init__(self, root: Any, values: dict[Any, Any], plain: set[int]) -> None:
        self.root = root
        self.values = values
        self.plain = plain
        self.indexes: dict[int, dict[Any, tuple[Any, Any]]] = {}

    def _index(self, node: Any) -> dict[Any, tuple[Any, Any]]:
        """A mapping node's keys -> ``(key node, value node)``, built once per mapping
        (the last of equal keys is kept, as the values keep it)."""
        index = self.indexes.get(id(node))
        if index is None:
            index = {}
            for key_node, value_node in node.value:
                if key_node in self.values:
                    try:
                        index[self.values[key_node]] = (key_node, value_node)
                    except TypeError:  # an unhashable key: the values cannot hold it either
                        continue
            self.indexes[id(node)] = index
        return index

    def step(self, node: Any, part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        if node.id == "mapping":
            try:
                found = self._index(node).get(part)
            except TypeError:  # an unhashable part: no key of a mapping
                return None
            if found is None:
                return None
            key_node, value_node = found
            return value_node, _mark(key_node), _mark(value_node)
        if node.id == "sequence" and isinstance(part, int) and not isinstance(part, bool):
            if 0 <= part < len(node.value):
                item = node.value[part]
                return item, _mark(item), _mark(item)
        return None

    def plain_text(self, node: Any) -> Optional[str]:
        return node.value if node.id == "scalar" and id(node) in self.plain else None

    def key_table(self, depth: int) -> dict[KeyPath, tuple[Pos, Pos]]:
        keys: dict[KeyPath, tuple[Pos, Pos]] = {}
        todo: list[tuple[KeyPath, Any]] = [((), self.root)]
        while todo:
            path, node = todo.pop()
            if node.id != "mapping" or len(path) >= depth:
                continue
            last: dict[Any, tuple[Any, Any]] = {}
            for key_node, value_node in node.value:
                key = self.values.get(key_node)
                if isinstance(key, str):
                    last[key] = (key_node, value_node)
            for key, (key_node, value_node) in last.items():
                child = (*path, key)
                keys[child] = (_mark(key_node), _mark(value_node))
                todo.append((child, value_node))
        return keys

    def duplicates(self, own: dict[int, list[Any]]) -> list[tuple[Pos, str, str, str]]:
        """Keys a mapping gives twice (YAML readers silently keep the last)."""
        problems = []
        paths: dict[int, tuple[Any, ...]] = {id(self.root): ()}
        todo = [self.root]
        while todo:
            node = todo.pop()
            path = paths[id(node)]
            children: list[tuple[Any, Any]] = []
            if node.id == "sequence":
                children = list(enumerate(node.value))
            elif node.id == "mapping":
                first_seen: dict[tuple[type, Any], Pos] = {}
                for key_node in own.get(id(node), ()):
                    key = self.values[key_node]
                    identity = (type(key), key)
                    if identity in first_seen:
                        line, col = first_seen[identity]
                        problems.append(
                            (
                                _mark(key_node),
                                location((*path, key)),
                                f"duplicate key {shown(key)} (first at line {line}, column {col}); "
                                "YAML would silently keep this one",
                                "duplicate",
                            )
                        )
                    first_seen[identity] = _mark(key_node)
                children = [(self.values.get(k), v) for k, v in node.value]
            for key, child in reversed(children):
                if id(child) not in paths:
                    paths[id(child)] = (*path, key)
                    todo.append(child)
        return problems


def _parse_yaml(text: str, depth: int = 2, yaml_version: str = DEFAULT_YAML_VERSION) -> Parsed:
    import yaml

    kit = _yaml_kit(check_yaml_version(yaml_version))
    plain: set[int] = set()
    try:
        root = _compose_yaml(text, kit, plain)
        if root is None:
            return Parsed(None, (1, 1), {}, [], empty=True)
        _yaml_size(root)
        own = _yaml_shape(_document_order(root), kit.tags)
        constructor = kit.values()
        value = constructor.document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or "invalid YAML"
        if "maximum nesting depth" in problem:
            # PyYAML >= 6.0.4 has a nesting limit of its own, and its scanner
            # (which reads ahead) can reach it before our composer sees the
            # level past MAX_NESTING_DEPTH: report it as our limit.
            raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
        context = f" ({exc.context})" if exc.context else ""
        raise ParseProblem(pos, f"invalid YAML: {problem}{context}") from None
    except yaml.reader.ReaderError as exc:
        at = _Lines(text).pos(exc.position) if isinstance(exc.position, int) else (1, 1)
        character = exc.character
        shown_char = f"#x{character:04x}" if isinstance(character, int) else repr(character)
        raise ParseProblem(
            at, f"invalid YAML: unacceptable character {shown_char}: {exc.reason}"
        ) from None
    except yaml.YAMLError as exc:
        raise ParseProblem((1, 1), f"invalid YAML: {exc}") from None
    walker = _YamlWalker(root, constructor.constructed_objects, plain)
    return Parsed(value, _mark(root), walker.key_table(depth), walker.duplicates(own), walker)


def plain_scalar_value(text: str, yaml_version: str) -> tuple[bool, Any]:
    """``(readable, value)`` of a plain (unquoted, untagged) YAML scalar under ``yaml_version``."""
    from yaml.error import Mark
    from yaml.nodes import ScalarNode

    kit = _yaml_kit(check_yaml_version(yaml_version))
    tag = kit.resolver().resolve(ScalarNode, text, (True, False))
    if tag not in kit.tags:
        return False, None
    mark = Mark("", 0, 0, 0, None, None)
    try:
        return True, kit.values().construct_object(ScalarNode(tag, text, mark, mark))
    except Exception:  # a plain scalar its constructor refuses (a 5,000-digit int)
        return False, None


# ---------------------------------------------------------------- JSON

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:([{}\[\]:,])|("(?:[^"\\]|\\.)*")|([^ \t\r\n{}\[\]:,"]+))', re.S
)


def _long_number(text: str, language: str, exc: ValueError) -> ParseProblem:
    digits = re.search(r"[0-9]{4000,}", text)
    pos = _Lines(text).pos(digits.start()) if digits else (1, 1)
    return ParseProblem(pos, f"invalid {language}: {str(exc).split(';')[0]}")


class _Lines:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect_right(self.starts, offset)
        return (line, offset - self.starts[line - 1] + 1)


class _TreeWalker:
    """Positions from the tree a JSON token walk leaves, as character offsets.

    A container is ``[key offset, value offset, children]`` (children: a dict
    by key for an object, a list for an array); a scalar in an object is
    ``(key offset, value offset)``, in an array its value offset alone. The
    offsets become (line, column) only for the keys asked for.
    """

    def __init__(self, root: list[Any], lines: _Lines) -> None:
        self.root = root
        self.lines = lines

    def step(self, entry: Any, part: Any) -> Optional[tuple[Any, Pos, Pos]]:
        children = entry[2] if isinstance(entry, list) else None
        child: Any = None
        if isinstance(children, dict) and isinstance(part, str):
            child = children.get(part)
        elif isinstance(children, list) and isinstance(part, int) and not isinstance(part, bool):
            child = children[part] if 0 <= part < len(children) else None
        if child is None:
            return None
        if isinstance(child, int):
            at = self.lines.pos(child)
            return child, at, at
        return child, self.lines.pos(child[0]), self.lines.pos(child[1])

    def plain_text(self, handle: Any) -> Optional[str]:
        return None


def _json_path(frame: list[Any]) -> tuple[Any, ...]:
    """The key path of a frame of the JSON walk, read up its parents."""
    parts: list[Any] = []
    while frame[6] is not None:
        parts.append(frame[7])
        frame = frame[6]
    return tuple(reversed(parts))


def _parse_json(text: str, depth: int = 2) -> Parsed:
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseProblem((exc.lineno, exc.colno), f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "JSON", exc) from None
    lines = _Lines(text)
    keys: dict[KeyPath, tuple[Pos, Pos]] = {}
    problems: list[tuple[Pos, str, str, str]] = []
    # The text is valid JSON now, so a flat token walk is enough to place keys.
    # A frame: [is_object, key path (None when it is not str keys within depth),
    # keys seen, expecting a key, (key, start), its tree entry, parent frame,
    # its key or index in the parent].
    stack: list[list[Any]] = []
    tree: list[Any] = [0, 0, None]
    for match in _JSON_TOKEN.finditer(text):
        punct, string, _scalar = match.groups()
        start = match.start(1 if punct else 2 if string else 3)
        top = stack[-1] if stack else None
        if top is not None and top[0] and top[3] and string is not None:
            key = json.loads(string)
            top[3], top[4] = False, (key, start)
            if key in top[2]:
                line, col = lines.pos(top[2][key])
                problems.append(
                    (
                        lines.pos(start),
                        location((*_json_path(top), key)),
                        f"duplicate key {shown(key)} (first at line {line}, column {col}); "
                        "JSON readers silently keep this one",
                        "duplicate",
                    )
                )
            top[2][key] = start
            continue
        if punct == ":":
            continue
        if punct == ",":
            if top is not None and top[0]:
                top[3] = True
            continue
        if punct in ("}", "]"):
            stack.pop()
            continue
        opens = punct in ("{", "[")
        children: Any = ({} if punct == "{" else []) if opens else None
        path: Optional[KeyPath] = None
        name: Any = None
        entry: Any
        if top is None:
            tree = [start, start, children]
            entry, path = tree, ()
        elif top[0]:
            name, key_start = top[4]
            entry = [key_start, start, children] if opens else (key_start, start)
            top[5][2][name] = entry
            if top[1] is not None and len(top[1]) < depth:
                path = (*top[1], name)
                keys[path] = (lines.pos(key_start), lines.pos(start))
        else:
            name = len(top[5][2])
            entry = [start, start, children] if opens else start
            top[5][2].append(entry)
        if not opens:
            continue
        if len(stack) >= MAX_NESTING_DEPTH:
            raise ParseProblem(lines.pos(start), f"nested deeper than {MAX_NESTING_DEPTH} levels")
        is_object = punct == "{"
        stack.append([is_object, path, {}, is_object, None, entry, top, name])
    root_pos = lines.pos(tree[0])
    return Parsed(root, root_pos, keys, problems, _TreeWalker(tree, lines))


# ---------------------------------------------------------------- TOML

_TOML_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_TOML_KEY = re.compile(rf"{_TOML_KEY_PART}(?:[ \t]*\.[ \t]*{_TOML_KEY_PART})*")
_TOML_PART = re.compile(_TOML_KEY_PART)
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _toml_key_parts(text: str) -> KeyPath:
    parts = []
    for match in _TOML_PART.finditer(text):
        part = match.group(0)
        if part.startswith('"'):
            try:
                parts.append(json.loads(part))
            except ValueError:  # an escape JSON lacks; the TOML parser judges it
                parts.append(part[1:-1])
        elif part.startswith("'"):
            parts.append(part[1:-1])
        else:
            parts.append(part)
    return tuple(parts)


def _toml_scan_value(text: str, start: int, state: dict[str, Any], where: Pos) -> None:
    """Follow brackets and multi-line strings from ``start`` to the end of a line.

    ``where`` is the (line, column) of ``text[0]``. ``state["base"]`` is the
    nesting level of the table that holds the value; an array or inline table
    that would nest past ``MAX_NESTING_DEPTH`` is refused here, before the
    TOML parser (which recurses once per level) sees it.
    """
    i = start
    while i < len(text):
        quote = state["string"]
        if quote is not None:
            end = text.find(quote, i)
            if quote == '"""':
                while end > 0 and text[end - 1] == "\\" and not _even_backslashes(text, end):
                    end = text.find(quote, end + 1)
            if end < 0:
                return
            i = end + len(quote)
            state["string"] = None
            continue
        char = text[i]
        if char == "#":
            return
        if text.startswith(('"""', "'''"), i):
            state["string"] = text[i : i + 3]
            i += 3
            continue
        if char in "\"'":
            end = i + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            i = end + 1
            continue
        if char in "[{":
            state["depth"] += 1
            if state["base"] + state["depth"] > MAX_NESTING_DEPTH:
                raise ParseProblem(
                    (where[0], where[1] + i), f"nested deeper than {MAX_NESTING_DEPTH} levels"
                )
        elif char in "]}":
            state["depth"] -= 1
        i += 1


def _even_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 0


def _toml_module() -> Any:
    import importlib

    try:
        return importlib.import_module("tomllib")
    except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
        return importlib.import_module("tomli")


def _depth(value: Any) -> int:
    """How deeply dicts and lists nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        todo.extend((child, level + 1) for child in children)
    return deepest


def _toml_deep_value(root: dict[str, Any], keys: dict[KeyPath, tuple[Pos, Pos]]) -> None:
    """Refuse nesting the line scanner cannot see (dotted keys, tables in arrays)."""
    if _depth(root) <= MAX_NESTING_DEPTH:
        return
    pos: Pos = (1, 1)
    for key, value in root.items():
        if 1 + _depth(value) > MAX_NESTING_DEPTH:
            pos = keys.get((key,), (pos, pos))[1]
            if isinstance(value, dict):
                for inner, inner_value in value.items():
                    if 2 + _depth(inner_value) > MAX_NESTING_DEPTH:
                        pos = keys.get((key, inner), (pos, pos))[1]
                        break
            break
    raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels")


def _toml_scan(
    text: str, key_depth: int = 2
) -> tuple[dict[KeyPath, tuple[Pos, Pos]], dict[tuple[Any, ...], tuple[Pos, Pos]]]:
    """Key positions of a TOML text, and its bracket nesting checked.

    Returns the positions of the key paths up to ``key_depth`` long, and of
    every key path the scanner sees (arrays of tables ``[[x]]`` give their
    elements an index: ``("x", 0, "name")``).
    """
    found: dict[tuple[Any, ...], tuple[Pos, Pos]] = {}
    arrays: dict[tuple[Any, ...], int] = {}  # [[x]] paths -> elements so far

    def resolved(parts: tuple[Any, ...]) -> tuple[Any, ...]:
        path: tuple[Any, ...] = ()
        for part in parts:
            path = (*path, part)
            if path in arrays:  # a table under an array of tables: its last element
                path = (*path, arrays[path] - 1)
        return path

    table: Optional[tuple[Any, ...]] = ()
    state: dict[str, Any] = {"string": None, "depth": 0, "base": 1}
    for number, line in enumerate(text.split("\n"), 1):
        if state["string"] is not None or state["depth"] > 0:
            _toml_scan_value(line, 0, state, (number, 1))
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("["):
            header = stripped.startswith("[[")
            match = _TOML_KEY.match(stripped.lstrip("[").lstrip())
            if match is None:
                table = None
                continue
            offset = indent + stripped.index(match.group(0))
            at = ((number, offset + 1), (number, offset + 1))
            parts = _toml_key_parts(match.group(0))
            if header:
                array = (*resolved(parts[:-1]), parts[-1])
                arrays[array] = arrays.get(array, 0) + 1
                found.setdefault(array, at)
                table = (*array, arrays[array] - 1)
            else:
                table = resolved(parts)
            for depth in range(1, len(table) + 1):  # [a.b] also places a, as a.b = 1 does
                found.setdefault(table[:depth], at)
            continue
        match = _TOML_KEY.match(stripped)
        if match is None or not stripped or stripped.startswith("#"):
            continue
        rest = stripped[match.end() :]
        eq = len(rest) - len(rest.lstrip(" \t"))
        if not rest[eq:].startswith("="):
            continue
        value_at = match.end() + eq + 1
        value_at += len(stripped[value_at:]) - len(stripped[value_at:].lstrip(" \t"))
        parts = _toml_key_parts(match.group(0))
        if table is not None:
            path = (*table, *parts)
            for depth in range(len(table) + 1, len(path) + 1):
                found.setdefault(
                    path[:depth], ((number, indent + 1), (number, indent + value_at + 1))
                )
        # The value's container: the root, its tables, then the dotted key's parts.
        state["base"] = len(table or ()) + len(parts)
        _toml_scan_value(stripped, value_at, state, (number, indent + 1))
    keys = {
        path: at
        for path, at in found.items()
        if len(path) <= key_depth and all(isinstance(part, str) for part in path)
    }
    return keys, found


def _parse_toml(text: str, depth: int = 2) -> Parsed:
    tomllib = _toml_module()
    keys, found = _toml_scan(text, depth)
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        pos = (int(at.group(1)), int(at.group(2))) if at else (1, 1)
        if at:
            message = message[: at.start()]
        raise ParseProblem(pos, f"invalid TOML: {message}") from None
    except RecursionError:  # the scanner missed some nesting: still our limit
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "TOML", exc) from None
    _toml_deep_value(root, keys)
    return Parsed(root, (1, 1), keys, [], _TableWalker(found))


# ---------------------------------------------------------------- the loader


def format_for_suffix(path: str) -> Optional[str]:
    """``yaml``, ``json`` or ``toml`` for a file name, ``None`` when unknown."""
    return _SUFFIXES.get(os.path.splitext(path)[1].lower())


def decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise ParseProblem(
            (line, col), f"not UTF-8: byte 0x{data[exc.start]:02x}", "file"
        ) from None
    return text.removeprefix("\ufeff")


def parse(text: str, fmt: str, depth: int = 2, yaml_version: str = DEFAULT_YAML_VERSION) -> Parsed:
    """Values and the positions of keys on paths up to ``depth`` long (any path: ``locate``).

    ``yaml_version`` chooses the YAML reading (``YAML_VERSIONS``); JSON and
    TOML have one reading each (``json.loads``'s, ``tomllib``'s).
    """
    if fmt == "yaml":
        return _parse_yaml(text, depth, yaml_version)
    check_yaml_version(yaml_version)
    if fmt == "json":
        return _parse_json(text, depth)
    return _parse_toml(text, depth)


__all__ = [
    "DEFAULT_YAML_VERSION",
    "FORMATS",
    "YAML_VERSIONS",
    "KeyPath",
    "ParseProblem",
    "Parsed",
    "Pos",
    "check_yaml_version",
    "decode",
    "format_for_suffix",
    "location",
    "parse",
    "plain_scalar_value",
]
