"""YAML text as values with the position of any key, read as the trainers read it.

By default (``yaml_version="1.1"``) the values are exactly ``yaml.safe_load``'s:
PyYAML's own reader, scanner, parser, YAML 1.1 resolver and ``SafeConstructor``
(``010`` is 8, ``0o10`` the string ``'0o10'``, ``1_000`` is 1000,
``yes``/``on`` are booleans, ``1:30`` is 90, dates are ``datetime`` values,
``<<`` merges as PyYAML merges). Only the composer (events to nodes) is ours,
for the limits below. ``yaml_version="1.2"`` reads the YAML 1.2 core schema,
as YAML editors and YAML 1.2 loaders do (``yes`` is a string, ``0o10`` is 8,
only the core tags).

Which parser reads the text is ours to choose, never the caller's concern:
PyYAML's C parser (libyaml, in PyYAML's wheels) where it is present and
cannot read the text otherwise than the pure-Python one, the pure-Python
parser everywhere else (``yaml_events``, ``libyaml_reading``). The values,
the positions (start and end of every node) and the verdict, message
included, are the pure parser's either way; ``AGENT_ROLLOUT_PURE_YAML=1``
(``PURE_YAML_ENV``) makes every read take the pure parser, for tests and
benchmarks.

Limits (their values live in :mod:`agent_rollout._limits`):
- mappings and lists nest at most ``MAX_NESTING_DEPTH`` levels (aliases count
  as copies of what they name);
- only the tags ``yaml.safe_load`` constructs (YAML 1.1: str, int, float,
  bool, null, binary, timestamp, omap, pairs, set, map, seq, merge ``<<``;
  YAML 1.2: the core ones), so no YAML tag can build a Python object;
- YAML aliases are never expanded: a document whose values, each alias
  counted as a full copy of what it names, add up to more than
  ``MAX_YAML_EXPANDED_NODES`` is refused ("billion laughs": nine levels of
  nine-way fan-out would be 387 million values). An alias to a node that is
  not complete yet (a node containing itself, which PyYAML would build) and
  nesting deeper than ``MAX_NESTING_DEPTH`` are refused too; one document.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from agent_rollout._errors import shown
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_NESTING_DEPTH, MAX_YAML_EXPANDED_NODES, int_digits_limit
from agent_rollout.config._parse.positions import (
    KeyPath,
    Lines,
    Parsed,
    ParseProblem,
    Pos,
    location,
)
from agent_rollout.config._parse.yaml_events import (
    compose,
    event_readers,
    may_differ,
    pure_yaml_forced,
    syntax_error_pos,
)

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
        raise RolloutValueError(
            f"yaml_version must be one of {', '.join(YAML_VERSIONS)}, got {version!r}"
        )
    return version


@dataclass(frozen=True)
class _YamlKit:
    """What reads one YAML version: the loaders (events), the resolver, the constructor.

    ``loader`` is PyYAML's pure-Python parser; ``fast`` its C parser (libyaml),
    ``None`` where PyYAML has none or its libyaml is not one of ``LIBYAML_VERSIONS``.
    """

    loader: Any
    fast: Any
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
        failed: Any = None
        """The scalar the constructor refused, if it refused one."""

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except (ParseProblem, yaml.YAMLError):
                raise
            except Exception as exc:
                # PyYAML's constructors fail on odd scalars with whatever their code meets:
                # ValueError (``!!int abc``), KeyError (``!!bool maybe``), IndexError
                # (``!!int`` or ``!!float "_"``: nothing left to read), AttributeError
                # (``!!timestamp x``), OverflowError. Every one is the scalar's fault.
                self.failed = node  # placed and named by ``_read_yaml``, which has the text
                raise ParseProblem(_mark(node), _bad_scalar(node, exc), "value") from None

        def sexagesimal_int(self, node: Any) -> Any:
            """PyYAML's int, but a sexagesimal one (``1:30:00``) no longer than the
            interpreter's digit limit: its cost grows with the square of its length."""
            text = self.construct_scalar(node)
            limit = int_digits_limit()
            if isinstance(text, str) and ":" in text and len(text) > limit:
                raise RolloutValueError(f"a sexagesimal int longer than {limit} characters")
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
        Values.add_constructor(_TAG + "int", Values.sexagesimal_int)
        tags = frozenset(tag for tag in SafeConstructor.yaml_constructors if tag is not None)
        return _YamlKit(*event_readers(Resolver), Resolver, Values, tags, True)

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

    return _YamlKit(*event_readers(CoreResolver), CoreResolver, CoreValues, _CORE_TAGS, False)


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


# An anchor (``&name``) or a tag (``!!str``, ``!local``, ``!<verbatim>``) before a node's
# content, and the blanks after it (PyYAML's anchors are of these characters; a tag
# ends at a blank).
_PROPERTY = re.compile(r"(?:![^\s]*|&[0-9A-Za-z_-]+)[ \t]*")
_LINE_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _path_to(root: Any, target: Any, values: dict[Any, Any]) -> tuple[Any, ...]:
    """The key path (keys as constructed so far, else as written) of ``target``'s first
    place in the document; ``()`` at the root or when it is not found."""
    paths: dict[int, tuple[Any, ...]] = {id(root): ()}
    todo = [root]
    while todo:
        node = todo.pop()
        if node is target:
            return paths[id(node)]
        path = paths[id(node)]
        if node.id == "sequence":
            children = list(enumerate(node.value))
        elif node.id == "mapping":
            children = []
            for key_node, value_node in node.value:
                key = values.get(key_node, key_node.value if key_node.id == "scalar" else "?")
                children += [(key, key_node), (key, value_node)]
        else:
            continue
        for key, child in reversed(children):
            if id(child) not in paths:
                paths[id(child)] = (*path, key)
                todo.append(child)
    return ()


class _YamlWalker:
    """Positions in a composed YAML document, read from its nodes on demand.

    A scalar is placed at its content, after any anchor or tag (``&J yes``: at
    ``yes``, where a fix edits; an empty one stays at them); a value given by
    an alias (``*V``) at the alias, not at the anchored node it stands for.
    """

    def __init__(
        self,
        root: Any,
        values: dict[Any, Any],
        plain: set[int],
        aliases: dict[tuple[int, int], Pos],
        text: str,
    ) -> None:
        self.root = root
        self.values = values
        self.plain = plain
        self.aliases = aliases
        self.text = text
        self.lines: Optional[list[str]] = None
        self.indexes: dict[int, dict[Any, tuple[Any, Any]]] = {}

    def node_pos(self, node: Any) -> Pos:
        """Where ``node`` is: a scalar with an anchor or tag at its content."""
        pos = _mark(node)
        if node.id != "scalar" or not (node.value or node.style):
            return pos
        if self.lines is None:
            self.lines = _LINE_BREAKS.split(self.text)
        lines = self.lines
        line, col = pos[0] - 1, pos[1] - 1
        if line >= len(lines) or lines[line][col : col + 1] not in ("&", "!"):
            return pos
        while line < len(lines):
            text = lines[line]
            found = _PROPERTY.match(text, col)
            if found is not None:
                col = found.end()
            elif col < len(text) and text[col] != "#":
                break
            else:  # the content is on a later line
                line += 1
                col = len(lines[line]) - len(lines[line].lstrip(" \t")) if line < len(lines) else 0
        end = (node.end_mark.line, node.end_mark.column)
        return (line + 1, col + 1) if (line, col) < end else pos

    def value_pos(self, pair: tuple[Any, Any]) -> Pos:
        """Where the value of a mapping's ``(key node, value node)`` is written."""
        return self.aliases.get((id(pair), -1)) or self.node_pos(pair[1])

    def _index(self, node: Any) -> dict[Any, tuple[Any, Any]]:
        """A mapping node's keys -> its ``(key node, value node)`` pair, built once per
        mapping (the last of equal keys is kept, as the values keep it)."""
        index = self.indexes.get(id(node))
        if index is None:
            index = {}
            for pair in node.value:
                if pair[0] in self.values:
                    try:
                        index[self.values[pair[0]]] = pair
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
            return found[1], self.node_pos(found[0]), self.value_pos(found)
        if node.id == "sequence" and isinstance(part, int) and not isinstance(part, bool):
            if 0 <= part < len(node.value):
                item = node.value[part]
                at = self.aliases.get((id(node), part)) or self.node_pos(item)
                return item, at, at
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
            for pair in node.value:
                key = self.values.get(pair[0])
                if isinstance(key, str):
                    last[key] = pair
            for key, pair in last.items():
                child = (*path, key)
                keys[child] = (self.node_pos(pair[0]), self.value_pos(pair))
                todo.append((child, pair[1]))
        return keys

    def duplicates(self, own: dict[int, list[Any]]) -> list[tuple[Pos, str, str, str]]:
        """Keys a mapping gives twice (YAML readers silently keep the last)."""
        values = self.values
        for keys in own.values():
            if len(keys) > 1 and len({(type(k), k) for k in map(values.get, keys)}) < len(keys):
                break
        else:  # none: the walk below, which finds the paths, is not needed
            return []
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
                                self.node_pos(key_node),
                                location((*path, key)),
                                f"duplicate key {shown(key)} (first at line {line}, column {col}); "
                                "YAML would silently keep this one",
                                "duplicate",
                            )
                        )
                    first_seen[identity] = self.node_pos(key_node)
                children = [(self.values.get(k), v) for k, v in node.value]
            for key, child in reversed(children):
                if id(child) not in paths:
                    paths[id(child)] = (*path, key)
                    todo.append(child)
        return problems


def parse_yaml(text: str, depth: int = 2, yaml_version: str = DEFAULT_YAML_VERSION) -> Parsed:
    """Values, positions and problems of a YAML text, as the pure-Python parser reads them.

    The C parser answers where ``libyaml_reading`` can (and ``PURE_YAML_ENV``
    is not set); every other text, and every refusal, is the pure parser's.
    """
    if not pure_yaml_forced():
        found = libyaml_reading(text, depth, yaml_version)
        if found is not None:
            return found
    return _read_yaml(text, depth, _yaml_kit(check_yaml_version(yaml_version)), False)


def libyaml_reading(
    text: str, depth: int = 2, yaml_version: str = DEFAULT_YAML_VERSION
) -> Optional[Parsed]:
    """The C parser's reading of a text, where it is the pure parser's; ``None`` elsewhere.

    ``None`` where PyYAML has no libyaml (or not one of ``LIBYAML_VERSIONS``),
    where ``_may_differ`` finds something in the text, and where the read
    stops short of a result for any reason: libyaml refuses the text, meets a
    shape the pure parser may read otherwise (``_MayDiffer``), or one of our
    limits or a scalar's constructor refuses it. A refusal is thus always the
    pure parser's to word and place, and costs one more (fast) read.
    """
    kit = _yaml_kit(check_yaml_version(yaml_version))
    if kit.fast is None or may_differ(text):
        return None
    try:
        return _read_yaml(text, depth, kit, True)
    except Exception:  # every refusal is the pure parser's to word
        return None


def _read_yaml(text: str, depth: int, kit: _YamlKit, fast: bool) -> Parsed:
    import yaml

    plain: set[int] = set()
    stack: list[list[Any]] = []
    aliases: dict[tuple[int, int], Pos] = {}
    try:
        root, shared = compose(
            text, kit.fast if fast else kit.loader, fast, kit.unique_anchors, plain, stack, aliases
        )
        if root is None:
            return Parsed(None, (1, 1), {}, [], empty=True)
        if shared:
            _yaml_size(root)
        own = _yaml_shape(_document_order(root), kit.tags)
        constructor = kit.values()
        walker = _YamlWalker(root, constructor.constructed_objects, plain, aliases, text)
        try:
            value = constructor.document(root)
        except ParseProblem as refused:
            if constructor.failed is not None:  # a scalar refused: at it, named as others are
                refused.pos = walker.node_pos(constructor.failed)
                refused.location = location(_path_to(root, constructor.failed, walker.values))
            raise
    except yaml.MarkedYAMLError as exc:
        pos = syntax_error_pos(exc, stack, len(text))
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        raise ParseProblem(pos, f"invalid YAML: {problem}{context}") from None
    except yaml.reader.ReaderError as exc:
        at = Lines(text).pos(exc.position) if isinstance(exc.position, int) else (1, 1)
        character = exc.character
        shown_char = f"#x{character:04x}" if isinstance(character, int) else repr(character)
        raise ParseProblem(
            at, f"invalid YAML: unacceptable character {shown_char}: {exc.reason}"
        ) from None
    except yaml.YAMLError as exc:
        raise ParseProblem((1, 1), f"invalid YAML: {exc}") from None
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
