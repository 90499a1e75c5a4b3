"""Checking config files and sections: ``check_file``, ``check_bytes``, ``load_config``.

Reads a config file (``agent_rollout.config._document``: only a regular
file, at most ``MAX_CONFIG_BYTES``, looked at before it is opened so that a
FIFO or device never blocks), parses it with positions as the trainer reads
it (``agent_rollout.config._parse``), finds the section, validates it with
``RolloutSettings`` and places every error and warning at its
``path:line:col``. Problems with the file itself (unreadable, not UTF-8, too
big, bad syntax, a root or section that is not a mapping, a key given twice
in our section) come out the same way, all of them, never a traceback. A
plain YAML scalar on a ``rollout_*`` key that YAML 1.1 and YAML 1.2 read
differently (``010``, ``yes``, ``1e3``) is a warning (kind ``yaml_version``)
at the value, and so is a value read as trainers read it but not as written
(kind ``coerced``: ``"8"``, ``null``). A key given twice elsewhere is the
trainer's business (its reader keeps the last one): a warning, for lint.

``load_config`` returns settings that keep every warning, placed in the file
(``RolloutWarning.issue``).
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import shlex
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from pydantic import ValidationError

from agent_rollout._errors import ConfigError, ConfigIssue
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_CONFIG_BYTES
from agent_rollout.backends import ROLLOUT_KEYS
from agent_rollout.config._document import (
    AUTO_SECTION,
    DEFAULT_SECTION,
    Section,
    error_issues,
    not_regular,
    parse_config_bytes,
    read_config_file,
    section_path,
    settled_duplicates,
    too_big,
    unsupported_suffix,
    version_warnings,
    warning_issue,
)
from agent_rollout.config._lookalike import (
    environment_name,
    key_set,
    lookalike_key,
    lookalikes,
    names_our_key,
    read_as_meant,
)
from agent_rollout.config._models import RolloutSettings, set_rollout_warnings
from agent_rollout.config._parse import (
    DEFAULT_YAML_VERSION,
    FORMATS,
    YAML_VERSIONS,
    KeyPath,
    Parsed,
    Pos,
    check_yaml_version,
    format_for_suffix,
    location,
)
from agent_rollout.config._rules import RolloutWarning, coercion_warnings, section_warnings
from agent_rollout.config._span import with_ends

__all__ = [
    "AUTO_SECTION",
    "YAML_VERSIONS",
    "CheckResult",
    "ConfigError",
    "ConfigIssue",
    "check_bytes",
    "check_file",
    "load_config",
    "load_config_bytes",
    "section_path",
    "version_warnings",
]


def _placed(
    source: str, parsed: Parsed, prefix: KeyPath, warnings: Iterable[RolloutWarning]
) -> list[RolloutWarning]:
    """The warnings of a section, each with its place in the file (``issue``)."""
    return [
        dataclasses.replace(w, issue=warning_issue(source, parsed, prefix, w, w.key))
        for w in warnings
    ]


def _version_warnings(
    source: str, parsed: Parsed, prefix: KeyPath, section_value: Mapping[Any, Any]
) -> list[RolloutWarning]:
    found = version_warnings(source, parsed, prefix, section_value)
    if not found:
        return []
    keys = {location((*prefix, key)): key for key in section_value}
    return [
        RolloutWarning(keys[issue.location], issue.message, issue.kind, issue) for issue in found
    ]


def _settings_issues(
    source: str,
    parsed: Parsed,
    prefix: KeyPath,
    section_value: Mapping[Any, Any],
    known_keys: Collection[str],
    base_dir: Optional[str] = None,
) -> tuple[Optional[RolloutSettings], list[ConfigIssue], list[RolloutWarning]]:
    """(settings or None, errors, warnings) of one section; the warnings are placed."""
    versions = _version_warnings(source, parsed, prefix, section_value)
    context: dict[str, Any] = {"known_keys": frozenset(known_keys)}
    if base_dir is not None:
        context["base_dir"] = base_dir
    try:
        settings = RolloutSettings.model_validate(section_value, context=context)
    except ValidationError as exc:
        errors = exc.errors()
    else:
        placed = [*_placed(source, parsed, prefix, settings.rollout_warnings), *versions]
        placed.sort(key=_warning_order)
        set_rollout_warnings(settings, placed)
        return settings, [], placed
    # The warnings read a look-alike as the rules do (``read_as_meant``): as the key it
    # stands for, or waiting for it; so ``rollout_fucn`` is not also "rollout_func is
    # not set", and a key the section holds keeps its value.
    typos = lookalikes(section_value, context["known_keys"])
    ruled, names, held = read_as_meant(section_value, typos)
    found = (*section_warnings(ruled, names, held), *coercion_warnings(section_value))
    # A look-alike's own error is the one issue at it: how its value reads waits too.
    versions = [warning for warning in versions if warning.key not in typos]
    warnings = [*_placed(source, parsed, prefix, found), *versions]
    issues = error_issues(source, parsed, errors, under=prefix, data=section_value)
    return None, issues, sorted(warnings, key=_warning_order)


def _warning_order(warning: RolloutWarning) -> tuple[int, int]:
    assert warning.issue is not None
    return (warning.issue.line, warning.issue.col)


class _OurSection:
    """Whether a duplicate key at ``where`` changes what we read: the section (or a
    mapping holding it) given twice, or one of our keys (or a look-alike) in it, or a
    key inside one of those.

    Worked out once per file, on its first duplicate: the section's location and
    where each of its prefixes ends in it, and what each of our keys adds to it
    (``.rollout_func``). Each question then compares ``where`` with the section's
    location once and looks up the few prefixes of the rest as long as one of
    those keys: a file of duplicates costs a few lookups each, never a walk of the
    section per duplicate, and no location is built per prefix or per key (the
    work grows with the section path's length, not with its square).
    """

    def __init__(self, path: KeyPath, section_value: Any) -> None:
        self.path = path
        self.section_value = section_value
        self.section = ""
        self.ends: set[int] = set()
        self.keys: set[str] = set()
        self.lengths: list[int] = []
        self.ready = False

    def _prepare(self) -> None:
        self.section = location(self.path)
        self.ends = set(_location_ends(self.path))
        if isinstance(self.section_value, dict):
            self.keys = {
                _after(self.section, key)
                for key in self.section_value
                if isinstance(key, str) and (key in ROLLOUT_KEYS or lookalike_key(key))
            }
        self.lengths = sorted({len(at) for at in self.keys})
        self.ready = True

    def holds(self, where: str) -> bool:
        if not self.ready:  # on the first duplicate: a file without one costs nothing
            self._prepare()
        if len(where) in self.ends and self.section.startswith(where):
            return True  # the section, or a mapping holding it
        if not where.startswith(self.section):
            return False
        rest = where[len(self.section) :]
        if rest in self.keys:
            return True
        return any(
            size < len(rest) and rest[size] in ".[" and rest[:size] in self.keys
            for size in self.lengths
        )


def _after(shown: str, key: Any) -> str:
    """What ``key`` adds to the location ``shown`` of the mapping that holds it."""
    return location(("x", key))[1:] if shown else location((key,))


def _location_ends(path: KeyPath) -> list[int]:
    """How long ``location(path[:n])`` is, for each ``n`` from 1."""
    ends = []
    size = 0
    for part in path:
        size += len(_after("x" if size else "", part))
        ends.append(size)
    return ends


@dataclass
class CheckResult:
    """What checking one file found: the settings (when valid) and every issue."""

    source: str
    settings: Optional[RolloutSettings]
    issues: list[ConfigIssue]
    """The errors (``severity == "error"``); any of them leaves ``settings`` None."""
    key_positions: dict[KeyPath, tuple[Pos, Pos]]
    """``(key, value)`` positions of the top-level and section keys."""
    warnings: list[ConfigIssue] = field(default_factory=list)
    """Warnings (``severity == "warning"``): an incomplete section, a value read
    otherwise than written, a key the trainer's part of the file gives twice;
    the settings stay valid."""
    skipped: bool = False
    """True when ``skip_unrelated`` found the file is not a training config: no mapping in
    it holds a key of ours or a look-alike (``_unrelated``, ``_unrelated_text``)."""
    section: Optional[KeyPath] = None
    """The key path the settings were read from (``()``: the top level); ``None`` when
    none was read (the file could not be read, or holds no such mapping)."""


def _ours(key: object) -> bool:
    """One of our keys (``ROLLOUT_KEYS``) or a look-alike of one: not merely a ``rollout_*``
    key, which a trainer may have of its own (OpenRLHF's ``rollout_batch_size``)."""
    return isinstance(key, str) and (key in ROLLOUT_KEYS or lookalike_key(key))


def _holds_rollout_keys(node: Any) -> bool:
    return isinstance(node, dict) and any(_ours(key) for key in node)


def _names_ours(key: object) -> bool:
    """``_ours``, for whether a file is ours (``skip_unrelated``): not a name written all in
    capitals (``ROLLOUT_BACKEND``), which is an environment variable's (a CI workflow's
    ``env:``, a compose file's, a ``launch.json``'s), never a key of a training config."""
    return _ours(key) and not environment_name(key)


def _names_rollout_keys(node: Any) -> bool:
    return isinstance(node, dict) and any(_names_ours(key) for key in node)


def _holds_our_keys(node: Any) -> bool:
    """One of ``ROLLOUT_KEYS`` by its exact name (no look-alike): what decides between a
    ``training`` mapping and the top level, as the default JSON schema can say it too."""
    return isinstance(node, dict) and any(key in ROLLOUT_KEYS for key in node)


def _section_read(section: Section, root: Any) -> Optional[KeyPath]:
    """The key path of the settings in ``root``; ``None`` when ``AUTO_SECTION`` finds none.

    ``AUTO_SECTION`` reads the ``DEFAULT_SECTION`` mapping, unless it holds none of
    ``ROLLOUT_KEYS`` while the top level holds one (a flat config with a ``training``
    mapping of the trainer's own); with no such mapping, the top level when it holds one
    of our keys or a look-alike of one (a flat trainer config). A ``DEFAULT_SECTION`` that
    is not a mapping is read (and refused) unless the top level holds rollout keys: then
    it is the trainer's own key. Any other ``section`` is read as ``section_path`` reads
    it. The default JSON schema (``config._schema``) says the same.
    """
    if section is not AUTO_SECTION:
        return section_path(section, root)
    if not isinstance(root, dict):
        return (DEFAULT_SECTION,)  # the "must hold a mapping" error says the rest
    flat = _holds_rollout_keys(root)
    if DEFAULT_SECTION in root:
        if isinstance(root[DEFAULT_SECTION], dict):
            if _holds_our_keys(root[DEFAULT_SECTION]) or not _holds_our_keys(root):
                return (DEFAULT_SECTION,)
            return ()
        if not flat:
            return (DEFAULT_SECTION,)
    return () if flat else None


def _holders(
    root: dict[Any, Any], holds: Callable[[Any], bool] = _holds_rollout_keys
) -> Iterator[KeyPath]:
    """The mappings in the top two levels below the root that hold our keys or a look-alike
    of one (``holds``), in the file's order."""
    for key, value in root.items():
        if not isinstance(value, dict):
            continue
        if holds(value):
            yield (key,)
        for inner, held in value.items():
            if holds(held):
                yield (key, inner)


_SHARED_KEYS = frozenset({"rollout_func"})
"""Keys of ours that other tools spell alike in mappings of their own: axolotl's
``trl.rollout_func`` (a dotted path for TRL). Alone in a mapping we do not read, such a
key does not make a file ours."""


def _holds_more_than_shared(node: Any) -> bool:
    return isinstance(node, dict) and any(
        _names_ours(key) and key not in _SHARED_KEYS for key in node
    )


def _section_name(path: KeyPath, root: dict[Any, Any]) -> Optional[str]:
    """``path`` as ``--section`` names it, when ``section_path`` reads that name back as
    ``path`` (not a key holding a dot below the top level, nor one a top-level key with
    the dotted name shadows)."""
    if not all(isinstance(part, str) for part in path):
        return None
    name = ".".join(path)
    return name if section_path(name, root) == path else None


def _not_found(root: dict[Any, Any]) -> str:
    """Why ``AUTO_SECTION`` read nothing, and how to say where the settings are."""
    looked = (
        f"no rollout settings found: looked for a {DEFAULT_SECTION!r} section, "
        "then rollout keys at the top level"
    )
    names = (_section_name(path, root) for path in _holders(root))
    holder = next((name for name in names if name is not None), None)
    if holder is not None:
        return f"{looked}; {holder!r} holds rollout keys: --section {shlex.quote(holder)}"
    return (
        f"{looked}; name the section that holds them with --section (section= in Python; "
        "a dotted path such as trainer.rollout for a nested one)"
    )


def _unrelated(root: Any, read: Optional[KeyPath]) -> bool:
    """Not a training config of ours (``skip_unrelated`` skips it): no mapping holds one of
    our keys or a look-alike of one, of those the settings may be in: the top level, the
    section ``read`` leads to (``None``: none found), and the mappings in the top two
    levels below the root (a config whose section is to be named: it is checked, and told
    where they are).

    The rule reads keys, never words: a ``training`` mapping without a key of ours (a
    model card's, another trainer's) is not ours, and other ``rollout_*`` keys are the
    trainer's own (OpenRLHF's ``rollout_batch_size``), as is a mapping elsewhere that
    holds only a key other tools share with us (``_SHARED_KEYS``: axolotl's
    ``trl.rollout_func``), and a name in capitals is an environment variable's
    (``_names_ours``).
    """
    if not isinstance(root, dict):
        return True
    if _names_rollout_keys(root):
        return False
    node: Any = root if read else None
    for part in read or ():
        node = node.get(part) if isinstance(node, dict) else None
    if _names_rollout_keys(node):
        return False
    return next(_holders(root, _holds_more_than_shared), None) is None


def _unrelated_text(text: str) -> bool:
    """The same question for a file that does not parse (or is too big to): no key of
    ours, nor a look-alike, written as a key in it (``names_our_key``). A JSONC file
    (comments, trailing commas: ``tsconfig.json``, ``.vscode/launch.json``) whose
    comments say "training" is not ours."""
    return not names_our_key(text)


def check_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Section = AUTO_SECTION,
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
    yaml_version: str = DEFAULT_YAML_VERSION,
    base_dir: Optional[str] = None,
) -> CheckResult:
    """Check a config held in memory; never raises for bad input.

    ``known_keys`` are the host trainer's own keys in the section (never
    flagged as look-alikes). With ``skip_unrelated``, a file in which no mapping
    holds one of our keys or a look-alike of one (the top level, the section,
    the mappings of the top two levels; see ``_unrelated``) is not a training
    config: the result is ``skipped`` and has no issues. So is a file that does
    not parse, or is too big, in whose text no such key is written as a key
    (keys, never words: a comment saying "training" does not count).
    ``yaml_version``: how YAML is read, ``"1.1"`` (``yaml.safe_load``'s reading,
    what trainers use; the default) or ``"1.2"`` (for a host whose loader reads
    YAML 1.2).
    ``base_dir``: the folder a relative ``rollout_source`` is read from (the
    config file's; ``check_file`` passes it); ``None`` keeps it as written.
    ``section``: see :func:`load_config`; the result's ``section`` says which was read.
    """
    if format not in FORMATS:
        raise RolloutValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    check_yaml_version(yaml_version)
    path = section_path(section)  # a section too long to name anything raises here
    known = key_set(known_keys)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_CONFIG_BYTES:
        if skip_unrelated and _unrelated_text(raw.decode("utf-8", "replace")):
            return CheckResult(source, None, [], {}, skipped=True)  # as check_file skips it
        message = too_big(len(raw))
        return CheckResult(source, None, [ConfigIssue(source, 1, 1, "", message, "file")], {})
    issues: list[ConfigIssue] = []

    def add(pos: Pos, where: str, message: str, kind: str) -> None:
        issues.append(ConfigIssue(source, pos[0], pos[1], where, message, kind))

    parsed = parse_config_bytes(raw, format, source, yaml_version, max(2, len(path) + 1))
    if isinstance(parsed, ConfigIssue):
        if skip_unrelated and _unrelated_text(raw.decode("utf-8", "replace")):
            return CheckResult(source, None, [], {}, skipped=True)
        return CheckResult(
            source, None, with_ends(raw.decode("utf-8", "replace"), format, [parsed]), {}
        )
    root = parsed.root
    read = _section_read(section, root)
    if skip_unrelated and _unrelated(root, read):
        return CheckResult(source, None, [], parsed.keys, skipped=True)
    path = () if read is None else read
    section_value: Any = root
    if not isinstance(root, dict):
        if parsed.empty:
            got = "an empty file"
        else:
            got = "null" if root is None else type(root).__name__
        message = f"the file must hold a mapping of settings, got {got}"
        add(parsed.root_pos, "", message, "structure")
        section_value = None
    elif read is None:
        add(parsed.root_pos, "", _not_found(root), "missing")
        section_value = None
    for depth, part in enumerate(path, 1):
        if not isinstance(section_value, dict):
            break
        if part not in section_value:
            name = ".".join(path[:depth])
            at = parsed.keys.get(path[: depth - 1], (parsed.root_pos,))[0]
            add(
                at,
                name,
                f"section {name!r} is missing (expected a mapping of training settings)",
                "missing",
            )
            section_value = None
            break
        section_value = section_value[part]
        if not isinstance(section_value, dict):
            pos = parsed.keys.get(path[:depth], (parsed.root_pos, parsed.root_pos))[1]
            got = "null" if section_value is None else type(section_value).__name__
            add(pos, ".".join(path[:depth]), f"section must be a mapping, got {got}", "structure")
    settings = None
    warnings: list[ConfigIssue] = []
    if isinstance(section_value, dict):
        settings, found, placed = _settings_issues(
            source, parsed, path, section_value, known, base_dir
        )
        issues.extend(found)
        warnings = [w.issue for w in placed if w.issue is not None]
    ours = _OurSection(path, section_value)
    for pos, where, message, kind in parsed.problems:
        if kind == "duplicate" and not ours.holds(where):
            # The trainer's keys: its reader keeps the last one, and so do we.
            warnings.append(ConfigIssue(source, pos[0], pos[1], where, message, kind, "warning"))
        else:
            add(pos, where, message, kind)
    if issues:
        settings = None
    issues = settled_duplicates(issues)
    text = raw.decode("utf-8")  # parsed: valid UTF-8
    issues, warnings = with_ends(text, format, issues), with_ends(text, format, warnings)
    return CheckResult(
        source,
        settings,
        sorted(issues, key=_order),
        parsed.keys,
        sorted(warnings, key=_order),
        section=path if isinstance(section_value, dict) else None,
    )


def _order(issue: ConfigIssue) -> tuple[int, int]:
    return (issue.line, issue.col)


def load_config_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Section = AUTO_SECTION,
    known_keys: Iterable[str] = (),
    yaml_version: str = DEFAULT_YAML_VERSION,
    base_dir: Optional[str] = None,
) -> RolloutSettings:
    """Like :func:`load_config`, for text already in memory (``source`` names it;
    ``base_dir``, the folder a relative ``rollout_source`` is read from)."""
    result = check_bytes(
        data,
        format=format,
        source=source,
        section=section,
        known_keys=known_keys,
        yaml_version=yaml_version,
        base_dir=base_dir,
    )
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings


_SCAN_LIMIT = 256 * 1024 * 1024
_SCAN_CHUNK = 1024 * 1024
_SCAN_OVERLAP = 256
"""Characters a window keeps of the one before it: a key of ours, its quotes, the spaces
before its ``:`` (a few tens of characters) read whole across two chunks."""


def _big_and_unrelated(name: str) -> bool:
    """Whether a file over the size limit holds no key of ours nor a look-alike, written as
    a key (``names_our_key``).

    Such files (``package-lock.json``, data files) are not training configs,
    so ``skip_unrelated`` skips them instead of reporting their size. The
    text is read in chunks, never parsed, up to ``_SCAN_LIMIT`` bytes (past
    it, the file is reported).
    """
    seen = 0
    tail = ""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        with os.fdopen(os.open(name, flags), "rb") as handle:
            if not_regular(os.fstat(handle.fileno()).st_mode) is not None:
                return False
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while True:
                chunk = handle.read(_SCAN_CHUNK)
                seen += len(chunk)
                window = tail + decoder.decode(chunk, final=not chunk)
                if names_our_key(window) or seen > _SCAN_LIMIT:
                    return False
                if not chunk:
                    return True
                tail = window[-_SCAN_OVERLAP:]
    except OSError:
        return False


def check_file(
    path: Union[str, os.PathLike[str]],
    *,
    section: Section = AUTO_SECTION,
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> CheckResult:
    """Check one config file; never raises for bad input.

    A relative ``rollout_source`` in the file is taken relative to the
    file's own directory (the settings hold the joined path). ``known_keys``,
    ``skip_unrelated`` and ``yaml_version``: see :func:`check_bytes`.
    """
    check_yaml_version(yaml_version)
    section_path(section)  # a section too long to name anything: RolloutValueError, at once
    name = os.fspath(path)
    fmt = format_for_suffix(name)
    if fmt is None:
        if not os.path.exists(name):
            # Missing (or out of reach): that comes first, whatever the suffix, so a missing
            # .txt is "unreadable" (the command line's usage error) as a missing .yaml is.
            missing = read_config_file(name)
            if isinstance(missing, ConfigIssue):
                return CheckResult(name, None, [missing], {})
        return CheckResult(name, None, [unsupported_suffix(name)], {})
    data = read_config_file(name)
    if isinstance(data, ConfigIssue):
        if skip_unrelated and data.kind == "file" and _big_and_unrelated(name):
            return CheckResult(name, None, [], {}, skipped=True)  # a lock file, a dataset
        return CheckResult(name, None, [data], {})
    return check_bytes(
        data,
        format=fmt,
        source=name,
        section=section,
        known_keys=known_keys,
        skip_unrelated=skip_unrelated,
        yaml_version=yaml_version,
        base_dir=os.path.dirname(os.path.abspath(name)),
    )


def load_config(
    path: Union[str, os.PathLike[str]],
    *,
    section: Section = AUTO_SECTION,
    known_keys: Iterable[str] = (),
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> RolloutSettings:
    """Load and validate the rollout settings of a ``.yaml``/``.yml``/``.json``/``.toml`` file.

    ``section`` names the key that holds the settings: a top-level key, a
    dotted path such as ``"trainer.rollout"``, or ``None`` for the top level
    (one of more than ``MAX_SECTION_KEYS`` keys or ``MAX_SECTION_LEN``
    characters is a ``RolloutValueError``, as a bad ``yaml_version`` is).
    The default, ``AUTO_SECTION``, reads the ``training`` section when the file
    has one (unless it holds none of our keys while the top level holds one),
    else the top level when it holds rollout keys (a flat trainer config, as
    TRL and axolotl write them).
    ``known_keys`` are the trainer's own keys, never taken for typos of ours.
    YAML is read as ``yaml.safe_load`` reads it (YAML 1.1, what trainers
    use); ``yaml_version="1.2"`` reads it as a YAML 1.2 loader does.
    Raises :class:`ConfigError` listing every error of the section (a key
    the trainer's part of the file gives twice is not one). Warnings do not
    raise: they are on the returned settings' ``rollout_warnings``, each with
    its place in the file (``warning.issue``), those about how the file is
    read included (YAML 1.1/1.2, a value read otherwise than written).
    """
    result = check_file(path, section=section, known_keys=known_keys, yaml_version=yaml_version)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings
