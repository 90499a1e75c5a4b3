"""The engine seam: which engine runs, and the public ``normalise_rollout_rows``.

This package is the only place that imports the Rust bindings or asks which
engine is in use. Its modules give the rest of the package functions that
behave the same on both engines and raise our exceptions: rows here, files in
``_engine.jsonl``, Arrow in ``_engine.arrow``.

The Rust engine (``agent_rollout._native``) is used when it imports; setting
``AGENT_ROLLOUT_PURE_PYTHON=1`` (read once, at import) forces the pure-Python
twin. The pure-Python wheel (``py3-none-any``) has no native module by design:
a marker file it carries (``_pure_python_wheel``) makes it use the twin without
a word. Anywhere else, a missing or broken native module is a broken install:
the twin takes over and a ``RuntimeWarning`` says so once.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from typing import Any, Literal, Optional

from agent_rollout import _rows
from agent_rollout._errors import from_native
from agent_rollout._exceptions import RolloutRuntimeError, RolloutValueError
from agent_rollout._limits import (
    MAX_MESSAGE_DEPTH,
    MAX_ROLLOUT_ROWS,
    check_max_rows,
)
from agent_rollout.backends import validate_rollout_backend

Engine = Literal["rust", "python"]

PURE_PYTHON_ENV = "AGENT_ROLLOUT_PURE_PYTHON"

PURE_WHEEL_MARKER = "_pure_python_wheel"

native: Any = None
"""The Rust engine's module (``agent_rollout._native``), or None where it is not there."""
_PACKAGE = "agent_rollout"
_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The folder of the package, where the native module and the pure wheel's marker are."""
_pure_wheel = os.path.exists(os.path.join(_HOME, PURE_WHEEL_MARKER))
if not _pure_wheel and os.environ.get(PURE_PYTHON_ENV, "").strip() in ("", "0"):
    try:
        native = importlib.import_module(f"{_PACKAGE}._native")
    except ImportError as exc:
        # Fall back only when the native module itself is absent or broken (a
        # file that is missing, truncated or built for another interpreter);
        # an ImportError about anything else is a real bug: re-raise it.
        own_file = exc.path is not None and os.path.dirname(os.path.abspath(exc.path)) == _HOME
        if exc.name != f"{_PACKAGE}._native" and not (exc.name == "_native" and own_file):
            raise
        warnings.warn(
            f"agent_rollout: the Rust engine could not be imported ({exc}); "
            "using the pure-Python engine, which is slower",
            RuntimeWarning,
            stacklevel=2,
        )

_active: Engine = "rust" if native is not None else "python"


def implementation() -> Engine:
    """The engine in use: ``"rust"`` or ``"python"``."""
    return _active


ENGINES: tuple[Engine, ...] = ("python", "rust")
"""Every engine, slowest first."""


def available() -> tuple[Engine, ...]:
    """The engines ``set_engine`` can switch to here, slowest first."""
    return ENGINES if native is not None else ("python",)


def description() -> str:
    """The engine in use as ``--version`` names it: ``rust, release build`` (or ``debug
    build``), or ``python``."""
    if _active == "python":
        return "python"
    return f"rust, {build_profile()} build"


def native_available() -> bool:
    """Whether the Rust engine was imported (it may still be switched off)."""
    return native is not None


def build_profile() -> Optional[str]:
    """The Rust engine's build profile, ``"release"`` or ``"debug"`` (several times
    slower: a development build), or None where the Rust engine was not imported."""
    return None if native is None else str(native.BUILD_PROFILE)


def set_engine(engine: Engine) -> Engine:
    """Switch engines (tests and benchmarks run both in one process); returns the old one."""
    global _active
    if engine == "rust" and native is None:
        raise RolloutRuntimeError("the Rust engine is not available")
    if engine not in ("rust", "python"):
        raise RolloutValueError(f"unknown engine {engine!r}")
    previous, _active = _active, engine
    return previous


def _rust_rows(rows: Any, backend: str, max_rows: int) -> tuple[dict, ...]:
    try:
        result: tuple[dict, ...] = native.normalise_rows(rows, max_rows, MAX_MESSAGE_DEPTH)
    except native.NativeRowError as exc:
        raise from_native(exc, backend, max_rows) from None
    return result


def _python_rows(rows: Any, backend: str, max_rows: int) -> tuple[dict, ...]:
    return _rows.normalise_rows(rows, backend, max_rows, MAX_MESSAGE_DEPTH)


_RUNNERS: dict[str, Callable[[Any, str, int], tuple[dict, ...]]] = {
    "rust": _rust_rows,
    "python": _python_rows,
}


def normalise_rollout_rows(
    rows: Any, backend: str = "openenv", *, max_rows: int = MAX_ROLLOUT_ROWS
) -> tuple[dict, ...]:
    """Check rollout rows and return them as fresh ``{prompt, answer?}`` dicts.

    ``rows`` is any iterable of row mappings (a list, a tuple, a generator...).
    It is read at most ``max_rows + 1`` items deep, so an endless generator is
    stopped, not drained. The result holds only exact built-in types and
    shares no mutable object with the input.

    Raises:
        RolloutRowError: a row breaks a rule (``.index``, ``.path`` say where).
        ValueError: the input as a whole is unusable: not an iterable of rows
            (``None``, a string, bytes, a single mapping), empty, or longer
            than ``max_rows``; also an unknown ``backend`` name.
        TypeError: ``max_rows`` is not an int.
    """
    backend = validate_rollout_backend(backend)
    max_rows = check_max_rows(max_rows)
    return _RUNNERS[_active](rows, backend, max_rows)
