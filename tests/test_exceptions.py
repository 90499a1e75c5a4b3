"""One base for the package's own exceptions: ``agent_rollout.AgentRolloutError``.

Every exception class the public modules export derives from it and keeps its
builtin base; no module of the package raises a bare ``ValueError``,
``TypeError``, ``RuntimeError`` or ``ImportError`` of its own (the source is
read, so a new raise site cannot slip past).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import agent_rollout
from agent_rollout import AgentRolloutError

PACKAGE = Path(agent_rollout.__file__).parent
PUBLIC_MODULES = (
    "agent_rollout",
    "agent_rollout.config",
    "agent_rollout.arrow",
    "agent_rollout.ray",
)
BUILTINS = {"ValueError", "TypeError", "RuntimeError", "ImportError"}
KEPT = {
    # rows.rs raises a plain TypeError for a mapping whose items() yields no pair, and the
    # twin must raise what the Rust engine raises
    ("_rows.py", "TypeError"),
}
"""Raise sites that keep a builtin on purpose: (file, exception)."""


def exported_exceptions() -> list[tuple[str, type[BaseException]]]:
    found = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append((f"{name}.{attr}", value))
    return found


def test_the_public_modules_export_exception_classes() -> None:
    names = {name for name, _ in exported_exceptions()}
    assert "agent_rollout.RolloutRowError" in names and "agent_rollout.ConfigError" in names


@pytest.mark.parametrize(("name", "cls"), exported_exceptions())
def test_every_exported_exception_has_the_base_and_a_builtin_one(
    name: str, cls: type[BaseException]
) -> None:
    assert issubclass(cls, AgentRolloutError), name
    if cls is not AgentRolloutError:
        builtin = [b for b in cls.__mro__ if b.__module__ == "builtins" and b is not Exception]
        assert builtin[0] in (ValueError, TypeError, RuntimeError, ImportError), name


def bare_raises(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each ``raise X(...)`` / ``return X(...)`` of a builtin in BUILTINS."""
    found = []
    for node in ast.walk(ast.parse(source)):
        value = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(node, ast.Return):
            value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in BUILTINS:
                found.append((node.lineno, value.func.id))
    return found


def test_the_scan_finds_a_bare_raise_and_a_returned_error() -> None:
    source = "def f():\n    raise ValueError('x')\n\ndef g():\n    return TypeError('y')\n"
    assert bare_raises(source) == [(2, "ValueError"), (5, "TypeError")]
    assert bare_raises("raise RolloutValueError('x')\n") == []


def test_no_module_raises_a_bare_builtin_of_its_own() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "examples":
            continue  # example code, outside the package's layers
        for line, name in bare_raises(path.read_text(encoding="utf-8")):
            if (path.name, name) not in KEPT:
                found.append(f"{rel}:{line}: {name}")
    assert found == []


def test_the_base_catches_what_the_package_raises() -> None:
    with pytest.raises(AgentRolloutError):
        agent_rollout.validate_rollout_backend("no-such-backend")
    with pytest.raises(AgentRolloutError):
        agent_rollout.normalise_rollout_rows([{"prompt": 1}])
    with pytest.raises(ValueError):  # the builtin base still catches it
        agent_rollout.validate_rollout_backend("no-such-backend")
