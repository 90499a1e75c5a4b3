"""A config file read as the trainer reads it, with a position for every key, and
pydantic errors placed at ``path:line:col``.

For a host that validates the whole file (or a section of it) with its own
pydantic model, after its own merging (command-line overrides, defaults,
composition): ``read_config`` keeps the positions, the host validates
``document.data`` (or what it made of it) with its model, and
``document.issues(error)`` turns each error of the ``ValidationError`` --
the host's and ours, at any depth, list indices included -- into a
``ConfigIssue``. A key the file does not hold (added by an override) is
placed at the nearest key that holds it. ``document.validate(Model)`` does
all three at once and raises ``ConfigError``.

Also the file side of ``check`` (``agent_rollout.config.check``): the one
reader of config files (``read_config_file``: regular files only, at most
``MAX_CONFIG_BYTES``, looked at before they are opened so that a FIFO or
device never blocks), ``error_issues``, the one translation of pydantic
errors into positioned issues, ``warning_issue`` (where a warning of the
model is in the file) and ``version_warnings`` (plain YAML scalars that YAML
1.1 and 1.2 read differently).
"""

from __future__ import annotations

import enum
import math
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any, Final, Optional, TypeVar, Union

from pydantic import BaseModel, ValidationError

from agent_rollout._errors import ConfigError, ConfigIssue, loc_key, shown
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_CONFIG_BYTES, check_section
from agent_rollout.config._parse import (
    DEFAULT_YAML_VERSION,
    FORMATS,
    KeyPath,
    Parsed,
    ParseProblem,
    Pos,
    check_yaml_version,
    decode,
    format_for_suffix,
    location,
    parse,
    plain_scalar_value,
)

Model = TypeVar("Model", bound=BaseModel)
Under = Union[str, Sequence[Any], None]

_KINDS = {
    "rollout_unknown_key": "unknown_key",
    "rollout_missing": "missing",
    "rollout_cross_field": "cross_field",
    "missing": "missing",
    "extra_forbidden": "unknown_key",
}
_AT_KEY = frozenset(("rollout_unknown_key", "rollout_cross_field", "extra_forbidden"))
_MISSING = frozenset(("rollout_missing", "missing"))


# ---------------------------------------------------------------- reading files

_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_regular(mode: int) -> Optional[str]:
    """Why a file of this ``st_mode`` is not read (``None``: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _FILE_TYPES:
        if test(mode):
            return f"cannot read file: it is {name}, not a regular file"
    return "cannot read file: not a regular file"


def too_big(size: int) -> str:
    return f"larger than the {MAX_CONFIG_BYTES:,}-byte limit ({size:,} bytes)"


def read_config_file(name: str) -> Union[bytes, ConfigIssue]:
    """The bytes of a regular file of at most ``MAX_CONFIG_BYTES``, or the issue.

    The path is looked at with ``stat`` before it is opened, and opened
    non-blocking, so a FIFO or device never blocks the caller; the open file
    is checked again (it may have been swapped in between).
    """

    def unreadable(message: str) -> ConfigIssue:
        return ConfigIssue(name, 1, 1, "", message, "unreadable")

    try:
        info = os.stat(name)
        problem = not_regular(info.st_mode)
        if problem is not None:
            return unreadable(problem)
        if info.st_size > MAX_CONFIG_BYTES:
            return ConfigIssue(name, 1, 1, "", too_big(info.st_size), "file")
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(name, flags)
        with os.fdopen(fd, "rb") as handle:
            problem = not_regular(os.fstat(handle.fileno()).st_mode)
            if problem is not None:
                return unreadable(problem)
            return handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        return unreadable(f"cannot read file: {exc.strerror or exc}")


def unsupported_suffix(name: str) -> ConfigIssue:
    """The issue of a path whose suffix names no format we read (or that is a folder)."""
    try:
        problem = not_regular(os.stat(name).st_mode)
    except OSError:
        problem = None  # missing: its type is the first problem to name
    if problem is not None:  # a folder: a usage error, as for any unreadable path
        return ConfigIssue(name, 1, 1, "", problem, "unreadable")
    suffix = os.path.splitext(name)[1] or "(none)"
    message = f"unsupported file type {suffix} (expected .yaml, .yml, .json or .toml)"
    return ConfigIssue(name, 1, 1, "", message, "file")


class _Auto(enum.Enum):
    AUTO = "auto"

    def __repr__(self) -> str:
        return "AUTO_SECTION"


AUTO_SECTION: Final = _Auto.AUTO
"""The default ``section``: the ``DEFAULT_SECTION`` when the file has it, else the top
level when it holds rollout keys (a flat trainer config: TRL, axolotl)."""

DEFAULT_SECTION = "training"
"""The section ``AUTO_SECTION`` looks for first."""

Section = Union[str, None, _Auto]
"""What a ``section`` argument takes: a key or dotted path, ``None`` (or ``''``) for the
top level, or ``AUTO_SECTION``."""


def section_path(section: Section, root: Any = None) -> KeyPath:
    """The key path a ``section`` names: ``None`` is the top level, ``a.b`` is nested.

    A top-level key that itself holds a dot wins over the dotted reading.
    ``AUTO_SECTION`` is read as ``DEFAULT_SECTION`` here: which of the two
    places it reads is decided with the file's keys (``config.check``). A
    section of more than ``MAX_SECTION_KEYS`` keys, read as a dotted path (no
    file we read nests that deep), or longer than ``MAX_SECTION_LEN``, is a
    ``RolloutValueError`` (``check_section``).
    """
    if isinstance(section, _Auto):
        section = DEFAULT_SECTION
    if section is None or section == "":
        return ()
    check_section(section)
    if isinstance(root, dict) and section in root:
        return (section,)
    return tuple(section.split("."))


# ---------------------------------------------------------------- errors to issues


def _child(node: Any, part: Any) -> tuple[bool, Any]:
    if isinstance(node, Mapping):
        try:
            if part in node:
                return True, node[part]
        except TypeError:  # an unhashable location part
            return False, None
    elif isinstance(node, (list, tuple)) and isinstance(part, int) and not isinstance(part, bool):
        if 0 <= part < len(node):
            return True, node[part]
    return False, None


_LOST = "\ufffd"  # what pydantic writes for each byte of a lone surrogate (``loc_key``)


def _loc_child(node: Any, part: Any, lost: dict[int, dict[str, Any]]) -> tuple[bool, Any, Any]:
    """``(found, key, value)`` of a location part in ``node``, the key as the data holds it.

    pydantic writes a key holding a lone surrogate with U+FFFD in its place
    (``loc_key``): such a part is looked up among the keys written that way,
    indexed once per mapping (``lost``, by ``id``), the first of them when two
    read alike.
    """
    found, value = _child(node, part)
    if found or not (isinstance(part, str) and _LOST in part and isinstance(node, Mapping)):
        return found, part, value
    index = lost.get(id(node))
    if index is None:
        index = {}
        for key in node:
            if isinstance(key, str):
                index.setdefault(loc_key(key), key)
        lost[id(node)] = index
    if part in index:
        key = index[part]
        return True, key, node[key]
    return False, part, None


def split_location(
    data: Any, loc: Sequence[Any], lost: Optional[dict[int, dict[str, Any]]] = None
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(path in the data, path to show)`` of a pydantic error location.

    pydantic puts the name of a union member into the location
    (``('lr', 'float')``, ``('items', 0, 'Cat', 'name')``): a part the data
    does not hold, where the data goes on past it, is such a name and is
    left out. A missing key is shown (it ends the path in the data). A key
    holding a lone surrogate, which the location holds with U+FFFD in its
    place, is the data's own key again (``lost``: the index of such keys
    ``_loc_child`` keeps, to share between the errors of one validation).
    Without the data (``None``), the location is taken as it is.
    """
    if data is None:
        return tuple(loc), tuple(loc)
    if lost is None:
        lost = {}
    node = data
    real: list[Any] = []
    show: list[Any] = []
    inside = True
    for index, part in enumerate(loc):
        if not inside:
            show.append(part)
            continue
        found, key, value = _loc_child(node, part, lost)
        if found:
            real.append(key)
            show.append(key)
            node = value
        elif isinstance(node, Mapping):
            following = loc[index + 1] if index + 1 < len(loc) else None
            if following is not None and _loc_child(node, following, lost)[0]:
                continue  # a union member's name
            show.append(part)
            inside = False
        elif isinstance(node, (list, tuple)) and not isinstance(part, str):
            show.append(part)
            inside = False
        # else: a union member's name under a list or a scalar
    return tuple(real), tuple(show)


def _holds_key(data: Any, path: Sequence[Any], key: Any) -> bool:
    """Whether the mapping at ``path`` in ``data`` holds the str key ``key``."""
    if data is None or not isinstance(key, str):
        return False
    node = data
    for part in path:
        found, node = _child(node, part)
        if not found:
            return False
    return isinstance(node, Mapping) and _child(node, key)[0]


def error_issues(
    source: str,
    parsed: Parsed,
    errors: Sequence[Any],
    *,
    under: Sequence[Any] = (),
    data: Any = None,
) -> list[ConfigIssue]:
    """Each pydantic error (``ValidationError.errors()``) as a positioned ``ConfigIssue``.

    ``data`` is what was validated, found at key path ``under`` in the file.
    A bad value is placed at the value; an unknown key, a cross-field rule
    and ``extra_forbidden`` at the key; a missing key at the key of the
    mapping that lacks it; a key the file does not hold at the nearest one
    it does. Our own errors (types ``rollout_*``) keep their message; the
    host's get the value they refused appended.
    """
    issues = []
    prefix = tuple(under)
    lost: dict[int, dict[str, Any]] = {}
    for error in errors:
        kind = error["type"]
        real, show = split_location(data, tuple(error["loc"]), lost)
        bad_key = kind == "string_unicode" and _holds_key(data, real, error.get("input"))
        if bad_key:  # a key holding a lone surrogate, which pydantic cannot read as a str
            real, show = (*real, error["input"]), (*show, error["input"])
        path = (*prefix, *real)
        found, key_pos, value_pos = parsed.locate(path)
        if found < len(path) or kind in _MISSING or kind in _AT_KEY or bad_key:
            pos = key_pos
        else:
            pos = value_pos
        message = error["msg"]
        if not kind.startswith("rollout_") and kind not in _MISSING:
            message = f"{message} (got {shown(error.get('input'))})"
        issues.append(
            ConfigIssue(
                source,
                pos[0],
                pos[1],
                location((*prefix, *show)),
                message,
                _KINDS.get(kind, "value"),
            )
        )
    return issues


def _field_key(model: BaseModel, name: str) -> Any:
    field = type(model).model_fields.get(name)
    if field is None:
        return name
    alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
    return alias if alias is not None else name


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _reading(readable: bool, value: Any) -> str:
    return f"{type(value).__name__} {shown(value)}" if readable else "an error"


def version_warnings(
    source: str, parsed: Parsed, prefix: KeyPath, section_value: Mapping[Any, Any]
) -> list[ConfigIssue]:
    """Plain scalars on ``rollout_*`` keys that YAML 1.1 and YAML 1.2 read differently.

    ``rollout_max_steps: 010`` is 8 to ``yaml.safe_load`` (the trainers'
    reading) and 10 to a YAML 1.2 loader or editor: the value works in one
    place and not the other. Quoted or tagged values are read alike.
    """
    found = []
    for key in section_value:
        if not (isinstance(key, str) and key.startswith("rollout_")):
            continue
        plain = parsed.plain_scalar((*prefix, key))
        if plain is None:
            continue
        pos, text = plain
        old = plain_scalar_value(text, "1.1")
        new = plain_scalar_value(text, "1.2")
        if old[0] and new[0] and _same(old[1], new[1]):
            continue
        message = (
            f"{shown(text)} reads as {_reading(*old)} under YAML 1.1 (yaml.safe_load, as trainers "
            f"read it) and as {_reading(*new)} under YAML 1.2 (YAML editors and 1.2 loaders); "
            "quote it, or write it so that both read it alike"
        )
        found.append(
            ConfigIssue(
                source, pos[0], pos[1], location((*prefix, key)), message, "yaml_version", "warning"
            )
        )
    return found


def warning_issue(
    source: str, parsed: Parsed, path: KeyPath, warning: Any, key: Any
) -> ConfigIssue:
    """Where a ``RolloutWarning`` of the model validated from ``path`` is in the file.

    An incomplete section (kind ``incomplete``) at the section's key; a value
    read otherwise than written (``coerced``, ``yaml_version``) at the value
    of ``key`` (the key as the section spells it).
    """
    found, key_pos, value_pos = parsed.locate((*path, key))
    if warning.kind == "incomplete":
        pos = parsed.locate(path)[1]
    else:
        pos = value_pos if found == len(path) + 1 else key_pos
    return ConfigIssue(
        source, pos[0], pos[1], location((*path, key)), warning.message, warning.kind, "warning"
    )


def _values_at(root: Any, path: Sequence[Any]) -> Any:
    node = root
    for part in path:
        found, node = _child(node, part)
        if not found:
            return None
    return node


def warning_issues(
    source: str, parsed: Parsed, model: Any, *, under: Sequence[Any] = ()
) -> list[ConfigIssue]:
    """The ``rollout_warnings`` of every model inside ``model``, positioned (see
    ``warning_issue``), with the YAML 1.1/1.2 warnings on the keys of its section."""
    issues = []
    todo: list[tuple[tuple[Any, ...], Any]] = [((), model)]
    seen: set[int] = set()
    while todo:
        path, value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, BaseModel):
            full = (*under, *path)
            mine = []
            for warning in getattr(value, "rollout_warnings", ()):
                key = _field_key(value, warning.key)
                mine.append(warning.issue or warning_issue(source, parsed, full, warning, key))
            if hasattr(value, "rollout_warnings"):
                section = _values_at(parsed.root, full)
                if isinstance(section, Mapping):
                    said = {(issue.location, issue.kind) for issue in mine}
                    for issue in version_warnings(source, parsed, full, section):
                        if (issue.location, issue.kind) not in said:
                            mine.append(issue)
            issues.extend(mine)
            for name in type(value).model_fields:
                todo.append(((*path, _field_key(value, name)), getattr(value, name, None)))
        elif isinstance(value, (list, tuple)):
            todo.extend(((*path, index), item) for index, item in enumerate(value))
        elif isinstance(value, dict):
            todo.extend(((*path, key), item) for key, item in value.items())
    return sorted(issues, key=lambda issue: (issue.line, issue.col))


# ---------------------------------------------------------------- the document


class ConfigDocument:
    """A config file as values (what ``yaml.safe_load``, ``json.loads`` or
    ``tomllib`` give) plus the position of every key in it.

    ``data`` is the whole file; ``problems`` the errors the reader could read
    past (duplicate keys, which YAML and JSON readers silently resolve).
    """

    def __init__(
        self,
        source: str,
        fmt: str,
        parsed: Parsed,
        yaml_version: str,
        base_dir: Optional[str] = None,
    ) -> None:
        self.source = source
        self.format = fmt
        self.yaml_version = yaml_version
        self.base_dir = base_dir
        """The file's folder (``read_config``; ``None`` for text in memory): ``validate``
        reads a relative ``rollout_source`` from there, as ``load_config`` does."""
        self.data: Any = parsed.root
        self.problems: list[ConfigIssue] = [
            ConfigIssue(source, pos[0], pos[1], where, message, kind)
            for pos, where, message, kind in parsed.problems
        ]
        self._parsed = parsed

    def __repr__(self) -> str:
        return f"ConfigDocument({self.source!r}, format={self.format!r})"

    def path_of(self, under: Under) -> tuple[Any, ...]:
        """``under`` as a key path: a dotted string (a top-level key holding a dot
        is taken whole), a sequence of keys and list indices, or ``None`` (the top)."""
        if under is None or isinstance(under, str):
            return section_path(under, self.data)
        return tuple(under)

    def section(self, under: Under = None) -> Any:
        """The values at ``under``; ``ConfigError`` when the file does not hold it."""
        path = self.path_of(under)
        node = self.data
        for depth, part in enumerate(path, 1):
            found, node = _child(node, part)
            if not found:
                at = self._parsed.locate(path[: depth - 1])[1]
                name = location(path[:depth])
                raise ConfigError(
                    [
                        ConfigIssue(
                            self.source,
                            at[0],
                            at[1],
                            name,
                            f"section {name!r} is missing",
                            "missing",
                        )
                    ]
                )
        return node

    def position(self, path: Sequence[Any]) -> Pos:
        """``(line, col)`` of the value at ``path`` (or of the nearest key the file holds)."""
        found, key_pos, value_pos = self._parsed.locate(tuple(path))
        return value_pos if found == len(tuple(path)) else key_pos

    def key_position(self, path: Sequence[Any]) -> Pos:
        """``(line, col)`` of the key at the end of ``path`` (a list item: the item)."""
        return self._parsed.locate(tuple(path))[1]

    def issues(
        self, error: ValidationError, *, under: Under = None, data: Any = None
    ) -> list[ConfigIssue]:
        """Every error of ``error`` as a ``ConfigIssue`` at its ``path:line:col``, in file order.

        ``under``: where in the file the validated data sits (default: the
        top); ``data``: what was validated, when the host changed it after
        reading (default: the file's own values at ``under``).
        """
        path = self.path_of(under)
        if data is None:
            data = self._values_at(path)
        found = error_issues(self.source, self._parsed, error.errors(), under=path, data=data)
        return _ordered(found)

    def warnings(self, model: Any, *, under: Under = None) -> list[ConfigIssue]:
        """The ``rollout_warnings`` of ``model`` (and of the models inside it), positioned,
        with the YAML 1.1/1.2 warnings on their sections' ``rollout_*`` keys."""
        return warning_issues(self.source, self._parsed, model, under=self.path_of(under))

    def validate(
        self,
        model: type[Model],
        *,
        under: Under = None,
        data: Any = None,
        context: Optional[Mapping[str, Any]] = None,
    ) -> Model:
        """``model.model_validate`` of the file (or of ``under``, or of ``data``), every
        error positioned; raises ``ConfigError`` listing them, duplicate keys included.

        A relative ``rollout_source`` is read from the file's folder (``base_dir``
        in the context, unless ``context`` gives one), as ``load_config`` reads it.
        """
        path = self.path_of(under)
        if data is None:
            data = self.section(path)
        given = dict(context) if context else {}
        if self.base_dir is not None:
            given.setdefault("base_dir", self.base_dir)
        try:
            result = model.model_validate(data, context=given or None)
        except ValidationError as exc:
            found = error_issues(self.source, self._parsed, exc.errors(), under=path, data=data)
            raise ConfigError(_ordered(settled_duplicates([*self.problems, *found]))) from None
        if self.problems:
            raise ConfigError(_ordered(self.problems))
        return result

    def _values_at(self, path: tuple[Any, ...]) -> Any:
        return _values_at(self.data, path)


def _ordered(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    return sorted(issues, key=lambda issue: (issue.line, issue.col))


def settled_duplicates(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    """``issues`` without the look-alike error (``unknown_key``) at a key given twice there.

    One place, one issue: ``rolout_backend`` written twice is the duplicate's
    error only. Which of the two values is meant is the first thing to settle,
    and renaming the live one would bring the other back to life (a fix that
    changes the value read); once one is gone, the look-alike is reported with
    its fix.
    """
    twice = {(i.path, i.line, i.col) for i in issues if i.kind == "duplicate"}
    if not twice:
        return issues
    return [i for i in issues if i.kind != "unknown_key" or (i.path, i.line, i.col) not in twice]


def parse_config_bytes(
    raw: bytes, fmt: str, source: str, yaml_version: str, depth: int = 2
) -> Union[Parsed, ConfigIssue]:
    """Text to values with positions, or the issue that stopped the reader."""
    try:
        text = decode(raw)
        parsed = parse(text, fmt, depth, yaml_version)
    except ParseProblem as problem:
        line, col = problem.pos
        return ConfigIssue(source, line, col, problem.location, problem.message, problem.kind)
    return parsed


def read_config_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    yaml_version: str = DEFAULT_YAML_VERSION,
    base_dir: Optional[str] = None,
) -> ConfigDocument:
    """A config held in memory as a ``ConfigDocument``; ``ConfigError`` when it
    cannot be read (too big, not UTF-8, bad syntax, too deep). ``base_dir``:
    the folder a relative ``rollout_source`` is read from (see ``validate``)."""
    if format not in FORMATS:
        raise RolloutValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    check_yaml_version(yaml_version)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError([ConfigIssue(source, 1, 1, "", too_big(len(raw)), "file")])
    parsed = parse_config_bytes(raw, format, source, yaml_version)
    if isinstance(parsed, ConfigIssue):
        raise ConfigError([parsed])
    return ConfigDocument(source, format, parsed, yaml_version, base_dir)


def read_config(
    path: Union[str, os.PathLike[str]], *, yaml_version: str = DEFAULT_YAML_VERSION
) -> ConfigDocument:
    """A ``.yaml``/``.yml``/``.json``/``.toml`` file as a ``ConfigDocument``.

    YAML is read as ``yaml.safe_load`` reads it (``yaml_version="1.2"``: as
    YAML 1.2 loaders do). Raises ``ConfigError`` when the file cannot be
    read at all (missing, not a regular file, over ``MAX_CONFIG_BYTES``, not
    UTF-8, bad syntax, too deep).
    """
    check_yaml_version(yaml_version)
    name = os.fspath(path)
    fmt = format_for_suffix(name)
    if fmt is None:
        raise ConfigError([unsupported_suffix(name)])
    data = read_config_file(name)
    if isinstance(data, ConfigIssue):
        raise ConfigError([data])
    base_dir = os.path.dirname(os.path.abspath(name))
    return read_config_bytes(
        data, format=fmt, source=name, yaml_version=yaml_version, base_dir=base_dir
    )


__all__ = [
    "AUTO_SECTION",
    "DEFAULT_SECTION",
    "ConfigDocument",
    "Section",
    "error_issues",
    "not_regular",
    "parse_config_bytes",
    "read_config",
    "read_config_bytes",
    "read_config_file",
    "section_path",
    "settled_duplicates",
    "split_location",
    "too_big",
    "unsupported_suffix",
    "version_warnings",
    "warning_issue",
    "warning_issues",
]
