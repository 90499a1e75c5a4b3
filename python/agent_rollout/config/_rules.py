"""The cross-field rules of a section, derived from the backend table, and their severity.

A rule whose breach means the config cannot be right is an error
(``rule_errors``: a key of another backend, two keys of which only one may be
set, two keys set only together, a live-mode key without live mode, or live
mode without its keys); a
rule that only says the config is incomplete for the built-in adapter, and
may be completed at run time by a registered runner, is a warning
(``section_warnings``), kept on the validated model. Every config the seed's
rules accept validates without error. ``rules_schema`` states the error rules
as JSON Schema for editors. Which key belongs to which backend is read from
``agent_rollout.backends``, nowhere else.

A key is *set* when its value is not ``None`` and not its default
(``ROLLOUT_DEFAULTS``: ``rollout_group_size: 4`` is unset): the rules are
about what the user chose, so a dump of a valid model (which writes every
default back) and a host that copies our defaults validate again.

Values read as trainers' parsers read them, but not as written (a whole
number in quotes, ``null`` on a key with a default), are warnings too
(``coercion_warnings``). Messages name each key as the section spells it
(``names``: a host's alias such as ``rolloutJudgeModel``), our field name
otherwise.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic_core import InitErrorDetails

from agent_rollout._errors import ConfigIssue
from agent_rollout.backends import (
    BACKEND_KEYS,
    EXPECTED_KEYS,
    LIVE_KEYS,
    PAIRED_KEYS,
    REQUIRED_KEYS,
    ROLLOUT_DEFAULTS,
    RUN_TIME_HINT,
    RUNNER_HINT,
    validate_rollout_backend,
)
from agent_rollout.config._fields import INT_RANGES, backend_in, custom_error, int_text

KEY_BACKENDS: Mapping[str, tuple[str, ...]] = {key.name: key.backends for key in BACKEND_KEYS}
"""Which backends each optional key applies to (the key is an error elsewhere)."""


@dataclass(frozen=True)
class RolloutWarning:
    """A config that validates, with something to say: incomplete for the built-in
    adapter, or a value read as trainers read it but not as written."""

    key: str
    """Our name of the key: the key to set (the first of the alternatives, e.g.
    ``rollout_judge_model``), or the key whose value was read."""
    message: str
    kind: str = "incomplete"
    """``incomplete`` (a key the built-in adapter needs is unset), ``coerced`` (a
    whole number in quotes, or ``null`` on a key with a default) or
    ``yaml_version`` (YAML 1.1 and 1.2 read the value differently)."""
    issue: Optional[ConfigIssue] = field(default=None, compare=False, repr=False)
    """Where it is (``path:line:col``, as ``check`` reports it) when the settings
    were read from text by ``load_config``; ``None`` otherwise. Not compared."""

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def _namer(names: Optional[Mapping[str, str]]) -> Any:
    """How the section spells each key: ``names`` where it says, our field name otherwise."""
    if not names:
        return lambda key: key
    return lambda key: names.get(key, key)


def is_set(data: Mapping[Any, Any], key: str) -> bool:
    """The key holds a value of the user's: not ``None``, not its default.

    The default compares as a number (``4.0`` and ``"4"`` are 4, as the
    loader reads them); a bool never equals it.
    """
    value = data.get(key)
    if value is None:
        return False
    number = int_text(value)
    if number is not None:
        value = number
    if key in ROLLOUT_DEFAULTS and not isinstance(value, bool):
        try:
            return not (isinstance(value, (int, float)) and value == ROLLOUT_DEFAULTS[key])
        except Exception:  # a number type whose comparison fails: a value of the user's
            return True
    return True


def _unheld(groups: Iterable[tuple[str, ...]], held: Collection[str]) -> Iterator[tuple[str, ...]]:
    """The groups of keys none of which is ``held``."""
    return (group for group in groups if not any(key in held for key in group))


def canonical_backend(data: Mapping[Any, Any]) -> tuple[bool, Optional[str]]:
    """(usable, backend): usable is False when the backend itself is invalid."""
    raw_backend = data.get("rollout_backend")
    if raw_backend is None:
        return True, None
    try:
        return True, validate_rollout_backend(raw_backend)
    except ValueError:
        return False, None


def rule_errors(
    data: Mapping[Any, Any],
    names: Optional[Mapping[str, str]] = None,
    held: Collection[str] = (),
) -> list[InitErrorDetails]:
    """The cross-field rules that are errors, over the raw section (our keys by field name).

    They need the canonical backend only; when the backend itself is invalid
    its own error is reported and these rules are skipped. Each error's
    location and message spell the keys as ``names`` says (a host's aliases,
    a look-alike read as the key it stands for). A rule that reads a ``held``
    key (one a look-alike may stand for: ``read_as_meant``) is held back, and
    every rule when the backend is: each reads it.
    """
    usable, backend = canonical_backend(data)
    if not usable or "rollout_backend" in held:
        return []
    name = _namer(names)
    errors: list[InitErrorDetails] = []
    for key, allowed in KEY_BACKENDS.items():
        if key in held or not is_set(data, key) or backend in allowed:
            continue
        backends = " or ".join(repr(one) for one in allowed)
        got = "is not set" if backend is None else f"is {backend!r}"
        errors.append(
            InitErrorDetails(
                type=custom_error(
                    "rollout_cross_field",
                    f"{name(key)} needs {name('rollout_backend')} {backends}, "
                    f"but {name('rollout_backend')} {got}",
                ),
                loc=(name(key),),
                input=data[key],
            )
        )
    groups = (*REQUIRED_KEYS.get(backend or "", ()), *EXPECTED_KEYS.get(backend or "", ()))
    for group in _unheld(groups, held):
        present = [key for key in group if is_set(data, key)]
        if len(present) > 1:
            message = (
                f"set only one of {' and '.join(map(name, present))} when "
                f"{name('rollout_backend')} is {backend!r}"
            )
            errors.append(
                InitErrorDetails(
                    type=custom_error("rollout_cross_field", message),
                    loc=(name(present[-1]),),
                    input=data[present[-1]],
                )
            )
    for group in _unheld(PAIRED_KEYS.get(backend or "", ()), held):
        present = [key for key in group if is_set(data, key)]
        if not present or len(present) == len(group):
            continue
        absent = " and ".join(name(key) for key in group if key not in present)
        for key in present:
            message = (
                f"{name(key)} needs {absent} when {name('rollout_backend')} is {backend!r} "
                "(set both or neither)"
            )
            errors.append(
                InitErrorDetails(
                    type=custom_error("rollout_cross_field", message),
                    loc=(name(key),),
                    input=data[key],
                )
            )
    for group in _unheld(REQUIRED_KEYS.get(backend or "", ()), held):
        if not any(is_set(data, key) for key in group):
            message = (
                f"{' or '.join(map(name, group))} is required when "
                f"{name('rollout_backend')} is {backend!r}"
            )
            errors.append(
                InitErrorDetails(
                    type=custom_error("rollout_missing", message), loc=(name(group[0]),), input=None
                )
            )
    live_keys = LIVE_KEYS.get(backend or "")
    if live_keys is not None and live_keys[0] not in held:
        # The live keys mean nothing without the key that turns it on.
        switch, only_live, required = live_keys
        live = is_set(data, switch)
        for key in only_live:
            if key in held:
                continue
            if not live and is_set(data, key):
                kind, message = (
                    "rollout_cross_field",
                    f"{name(key)} needs {name(switch)} when {name('rollout_backend')} "
                    f"is {backend!r}",
                )
            elif live and key in required and not is_set(data, key):
                kind = "rollout_missing"
                message = f"{name(key)} is required when {name(switch)} is set"
            else:
                continue
            errors.append(
                InitErrorDetails(
                    type=custom_error(kind, message), loc=(name(key),), input=data.get(key)
                )
            )
    return errors


def section_warnings(
    data: Mapping[Any, Any],
    names: Optional[Mapping[str, str]] = None,
    held: Collection[str] = (),
) -> tuple[RolloutWarning, ...]:
    """The warnings a section gets: keys the built-in adapter needs that are unset.

    ``names`` and ``held`` as ``rule_errors`` reads them: a warning about a
    ``held`` key waits, as the rules do.
    """
    usable, backend = canonical_backend(data)
    if not usable or backend is None or "rollout_backend" in held:
        return ()
    name = _namer(names)
    found = []
    for group in _unheld(EXPECTED_KEYS.get(backend, ()), held):
        if any(is_set(data, key) for key in group):
            continue
        if len(group) == 1:
            unset, needs = f"{name(group[0])} is not set", "it"
        else:
            unset = f"neither {' nor '.join(map(name, group))} is set"
            needs = "one of them"
        found.append(
            RolloutWarning(
                group[0],
                f"{unset}: the built-in {backend!r} adapter needs {needs} "
                + RUN_TIME_HINT.get(backend, RUNNER_HINT),
            )
        )
    return tuple(found)


def coercion_warnings(data: Mapping[Any, Any]) -> tuple[RolloutWarning, ...]:
    """Values read as the trainers' parsers read them, not as written (kind ``coerced``).

    A whole number in quotes on an integer key (``rollout_group_size: "8"``:
    argparse, OmegaConf and a pydantic host in lax mode read 8), and ``null``
    on a key with a default (unset: the default). Only values the loader
    takes: an out-of-range number is an error instead.
    """
    found = []
    for key, (low, high) in INT_RANGES.items():
        if key not in data:
            continue
        value = data[key]
        if value is None and key in ROLLOUT_DEFAULTS:
            default = ROLLOUT_DEFAULTS[key]
            message = (
                f"null is unset; trainers read it as the default, {default}: leave the key out"
            )
        else:
            number = int_text(value)
            if number is None or not low <= number <= high:
                continue
            message = f"{value!r} is a string; trainers read it as {number}: write {number}"
        found.append(RolloutWarning(key, message, "coerced"))
    return tuple(found)


def _set_schema(key: str) -> dict[str, Any]:
    """The key is set: present, not null, not its default (as ``is_set`` reads it)."""
    if key in ROLLOUT_DEFAULTS:
        default = ROLLOUT_DEFAULTS[key]
        unset: dict[str, Any] = {
            "anyOf": [{"type": "null"}, {"const": default}, {"const": str(default)}]
        }
        return {"required": [key], "properties": {key: {"not": unset}}}
    return {"required": [key], "properties": {key: {"not": {"type": "null"}}}}


def rules_schema() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for key, allowed in KEY_BACKENDS.items():
        rules.append(
            {
                "if": _set_schema(key),
                "then": {
                    "required": ["rollout_backend"],
                    "properties": {"rollout_backend": backend_in(allowed)},
                },
            }
        )
    # Required groups (errors): exactly one key of each set. Expected groups
    # (warnings) are not rules here, but "only one of" them still is.
    needs: list[tuple[str, dict[str, Any]]] = []
    for backend, groups in REQUIRED_KEYS.items():
        for group in groups:
            need = (
                _set_schema(group[0])
                if len(group) == 1
                else {"oneOf": [_set_schema(key) for key in group]}
            )
            needs.append((backend, need))
    for backend, groups in EXPECTED_KEYS.items():
        for group in groups:
            if len(group) > 1:
                needs.append((backend, {"not": {"allOf": [_set_schema(key) for key in group]}}))
    for backend, groups in PAIRED_KEYS.items():
        for group in groups:
            # One key of the group set: all of them set.
            for key in group:
                needs.append(
                    (
                        backend,
                        {
                            "if": _set_schema(key),
                            "then": {"allOf": [_set_schema(other) for other in group]},
                        },
                    )
                )
    for backend, need in needs:
        rules.append(
            {
                "if": {
                    "required": ["rollout_backend"],
                    "properties": {"rollout_backend": backend_in([backend])},
                },
                "then": need,
            }
        )
    for backend, (switch, only_live, required) in LIVE_KEYS.items():
        # The live keys only with the key that turns live mode on; then the required ones.
        chosen = {
            "required": ["rollout_backend"],
            "properties": {"rollout_backend": backend_in([backend])},
        }
        rules.append(
            {
                "if": {"allOf": [chosen, {"not": _set_schema(switch)}]},
                "then": {"allOf": [{"not": _set_schema(key)} for key in only_live]},
                "else": {"if": chosen, "then": {"allOf": [_set_schema(key) for key in required]}},
            }
        )
    return rules


__all__ = [
    "KEY_BACKENDS",
    "RolloutWarning",
    "canonical_backend",
    "coercion_warnings",
    "is_set",
    "rule_errors",
    "rules_schema",
    "section_warnings",
]
