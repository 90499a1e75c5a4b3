"""The pure-Python engine: the row rules, step for step as the Rust engine.

Used when the native module is missing or ``AGENT_ROLLOUT_PURE_PYTHON=1``.
Every check runs in the same order as ``rust/rows.rs`` so the first broken
rule, and so the error text, is the same on both engines.

Both engines run the caller's code at the same points and no others: the
lookups of ``prompt`` and ``answer`` (a hash-colliding key's ``__eq__``),
``get``/``items`` of a non-dict mapping, ``isinstance(x, Mapping)``, and the
iteration of a non-list input. Built-in types are therefore recognised by
``type(x)`` (``issubclass``), never ``isinstance`` (which consults an object's
``__class__``), and str/int/float/list/tuple/dict subclasses are read through
the base type's own methods, never their overrides.
"""

from __future__ import annotations

import gc
import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn, Optional

from agent_rollout._errors import PathSegment, input_error, row_error


class RuleBroken(Exception):
    """A broken rule below the row level; segments are added as it unwinds."""

    def __init__(self, code: str, fact: Optional[str] = None) -> None:
        super().__init__(code)
        self.code = code
        self.fact = fact
        self.rev_path: list[PathSegment] = []


# What a type itself holds, as the Rust engine reads it: a metaclass cannot answer.
_type_qualname = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__


def _name(obj: object) -> str:
    """How messages name ``obj``'s type: a built-in type by its name (``int``,
    ``NoneType``), any other by its module and qualified name, as Python's
    ``repr`` of the class shows them (``numpy.bool``, whose name alone would say
    ``bool``). A ``__module__`` that is missing or not exactly a ``str`` leaves
    the name alone (``type_name`` in ``rust/rows.rs``)."""
    cls = type(obj)
    name: str = _type_qualname(cls)
    try:
        module = _type_module(cls)
    except Exception:
        return name
    if type(module) is not str or module == "builtins":
        return name
    return f"{module}.{name}"


def _is_mapping(obj: object) -> bool:
    """A dict (by type), or else whatever ``isinstance(obj, Mapping)`` says."""
    return issubclass(type(obj), dict) or isinstance(obj, Mapping)


class GcPause:
    """Pause the cyclic collector for a bulk build; then turn it back on if we turned it off.

    The rule, the same as the Rust engine's: only a collector that was on when
    the pause began is switched off, and it is switched back on at the end,
    however the block ends. A collector the caller had turned off stays off;
    one turned on meanwhile stays on. The switch is process-wide: callers keep
    pauses short (one batch of rows, never while waiting for input), because a
    ``gc.disable()`` another thread makes inside a pause cannot be told apart
    from ours and ends with it.
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._paused and not gc.isenabled():
            gc.enable()


def normalise_rows(raw: Any, backend: str, max_rows: int, max_depth: int) -> tuple[dict, ...]:
    """Normalise ``raw`` rows into a tuple of ``{prompt, answer?}`` dicts."""
    if raw is None or issubclass(type(raw), (str, bytes, bytearray)):
        raise input_error("input_not_iterable", backend, max_rows, _name(raw))
    if _is_mapping(raw):
        raise input_error("input_is_mapping", backend, max_rows, _name(raw))
    try:
        rows_in: Iterable[Any] = iter(raw)
    except TypeError:
        raise input_error("input_not_iterable", backend, max_rows, _name(raw)) from None
    if type(raw) is not list and type(raw) is not tuple:
        # A generator (or any other iterable) runs the caller's code: pull its
        # rows (at most one past the cap) with the collector on, so that code
        # never runs with the collector paused; then build.
        rows_in = list(itertools.islice(rows_in, max_rows + 1))
    out: list[dict] = []
    append = out.append
    with GcPause():
        for index, row in enumerate(rows_in):
            if index >= max_rows:
                raise input_error("too_many_rows", backend, max_rows)
            # Fast path: a plain dict with a non-empty str prompt and a str or
            # missing answer (only C-level lookups run, so the order of the
            # checks cannot be observed); everything else takes `_row`.
            if type(row) is dict:
                prompt = row.get("prompt")
                if type(prompt) is str and prompt:
                    answer = row.get("answer")
                    if type(answer) is str:
                        append(
                            {"prompt": prompt, "answer": answer} if answer else {"prompt": prompt}
                        )
                        continue
                    if answer is None:
                        append({"prompt": prompt})
                        continue
            try:
                append(normalise_row(row, max_depth))
            except RuleBroken as bad:
                bad.rev_path.reverse()
                raise row_error(bad.code, index, tuple(bad.rev_path), bad.fact) from None
    if not out:
        raise input_error("no_rows", backend, max_rows)
    return tuple(out)


def _get(row: Any, key: str) -> Any:
    return dict.get(row, key) if type(row) is dict else row.get(key)


def normalise_row(row: Any, max_depth: int) -> dict:
    if type(row) is not dict and not _is_mapping(row):
        raise RuleBroken("row_not_mapping", _name(row))
    prompt = _get(row, "prompt")
    try:
        if prompt is None:
            raise RuleBroken("prompt_missing")
        kind = type(prompt)
        if kind is str:
            if not prompt:
                raise RuleBroken("prompt_empty")
        elif issubclass(kind, list):
            prompt = _messages(prompt, max_depth)
        elif issubclass(kind, str):
            if str.__len__(prompt) == 0:
                raise RuleBroken("prompt_empty")
            prompt = str.__str__(prompt)
        else:
            raise RuleBroken("prompt_type", _name(prompt))
    except RuleBroken as bad:
        bad.rev_path.append("prompt")
        raise
    out = {"prompt": prompt}
    answer = _get(row, "answer")
    if answer is not None:
        if not issubclass(type(answer), str):
            wrong = RuleBroken("answer_type", _name(answer))
            wrong.rev_path.append("answer")
            raise wrong
        if str.__len__(answer):
            out["answer"] = answer if type(answer) is str else str.__str__(answer)
    return out


def _messages(prompt: list, max_depth: int) -> list:
    if list.__len__(prompt) == 0:
        raise RuleBroken("prompt_empty")
    out = []
    items = prompt if type(prompt) is list else list.__iter__(prompt)
    for i, message in enumerate(items):
        try:
            converted = _mapping(message, 1, max_depth)
            if converted is None:
                raise RuleBroken("message_not_mapping", _name(message))
            role = converted.get("role")
            if role is None and "role" not in converted:
                raise RuleBroken("role_missing")
            if type(role) is not str or not role:
                wrong = RuleBroken("role_empty" if type(role) is str else "role_type", _name(role))
                wrong.rev_path.append("role")
                raise wrong
        except RuleBroken as bad:
            bad.rev_path.append(i)
            raise
        out.append(converted)
    return out


def _fail_depth() -> NoReturn:
    raise RuleBroken("too_deep")


def _mapping(obj: Any, level: int, max_depth: int) -> Optional[dict]:
    """A fresh dict for a mapping at nesting ``level``; None if not a mapping."""
    if issubclass(type(obj), dict):
        if level > max_depth:
            _fail_depth()
        entries: Iterable[Any] = obj.items() if type(obj) is dict else dict.items(obj)
    elif isinstance(obj, Mapping):
        if level > max_depth:
            _fail_depth()
        entries = _pairs(obj)
    else:
        return None
    out = {}
    child = level + 1
    for key, value in entries:
        if type(key) is not str:
            if not issubclass(type(key), str):
                raise RuleBroken("key_not_str", _name(key))
            key = str.__str__(key)
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            out[key] = value
            continue
        try:
            out[key] = _value(value, child, max_depth)
        except RuleBroken as bad:
            bad.rev_path.append(key)
            raise
    return out


def _pairs(obj: Any) -> Iterator[tuple[Any, Any]]:
    """The ``(key, value)`` tuples of a non-dict mapping's ``items()``.

    A tuple subclass is read through ``tuple``'s own methods (its ``__len__``,
    ``__iter__`` or ``__getitem__`` never run), as the Rust engine reads it.
    """
    for entry in obj.items():
        kind = type(entry)
        if kind is tuple and len(entry) == 2:
            yield entry
        elif issubclass(kind, tuple) and tuple.__len__(entry) == 2:
            yield tuple.__getitem__(entry, 0), tuple.__getitem__(entry, 1)
        else:  # a TypeError, as the Rust engine raises it (rows.rs)
            raise TypeError(
                f"{_name(obj)}.items() must yield (key, value) tuples, got {_name(entry)}"
            )


def _finite(number: float) -> float:
    if number - number != 0.0:  # NaN or an infinity
        raise RuleBroken("float_not_finite", repr(number))
    return number


def _value(value: Any, level: int, max_depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return _finite(value)
    if issubclass(kind, (list, tuple)):
        if level > max_depth:
            _fail_depth()
        if kind is list or kind is tuple:
            items: Iterable[Any] = value
        elif issubclass(kind, list):
            items = list.__iter__(value)
        else:
            items = tuple.__iter__(value)
        out = []
        child = level + 1
        for i, item in enumerate(items):
            try:
                out.append(_value(item, child, max_depth))
            except RuleBroken as bad:
                bad.rev_path.append(i)
                raise
        return out
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, int):
        return operator.index(value)
    if issubclass(kind, float):
        return _finite(float.__float__(value))
    converted = _mapping(value, level, max_depth)
    if converted is None:
        raise RuleBroken("value_type", _name(value))
    return converted


__all__ = ["GcPause", "RuleBroken", "normalise_row", "normalise_rows"]
