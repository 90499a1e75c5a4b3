"""The optional packages: what each extra installs, and the command that installs it today.

``EXTRAS`` holds, per extra of ``pyproject.toml``'s
``[project.optional-dependencies]``, the requirements it pins (the same
strings: ``tests/test_extras.py`` holds the two equal) and the modules that
prove it is installed. Every message that tells a user what to install is
built here (:func:`install_hint`): a missing backend package, pyarrow,
pygls, openenv-core, NeMo Gym.

The hints name the packages themselves (``pip install 'pyarrow>=19'``), not
the extra: agent-rollout is not published yet, so ``pip install
'agent-rollout[arrow]'`` finds nothing (PyPI's ``agent-rollouts`` is another
project), and the README's ``pip install '.[arrow]'`` installs the extra of
whatever project is in the current folder: right in a clone, where the README
runs it, wrong wherever else a command says it. The packages by name, pinned as
the extra pins them, install the same thing from any folder (docs/messages.md).
Once a release exists, :func:`install_hint` is the one place to switch to the
extra. An extra that installs only on newer Pythons (``nemo-gym``: 3.12+) says
so when the running Python is older. :func:`missing_text` is what a command
says of a missing one.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Extra:
    """One extra: its requirements as ``pyproject.toml`` pins them, the modules that
    prove them installed, and the oldest Python its packages install on (``None``:
    the package's own, 3.10)."""

    name: str
    requires: tuple[str, ...]
    imports: tuple[str, ...]
    python: Optional[tuple[int, int]] = None


EXTRAS: Mapping[str, Extra] = types.MappingProxyType(
    {
        # ART's own client fails under openai 3 (httpx2): the extra keeps openai 2.
        "art": Extra("art", ("openpipe-art>=0.5.18,<0.6", "openai>=2.14,<3"), ("art",)),
        "openenv": Extra("openenv", ("openenv-core>=0.3.0,<0.4",), ("openenv",)),
        "nemo-gym": Extra("nemo-gym", ("nemo-gym>=0.4,<0.5",), ("nemo_gym",), python=(3, 12)),
        "arrow": Extra("arrow", ("pyarrow>=19",), ("pyarrow",)),
        "ray": Extra("ray", ("pyarrow>=19", "ray[data]>=2.40"), ("ray",)),
        "lsp": Extra("lsp", ("pygls>=2,<3", "lsprotocol>=2025.0.0"), ("pygls", "lsprotocol")),
    }
)
"""Each extra by its ``pyproject.toml`` name (the ``test``, ``bench`` and ``dev`` sets
are for working on the package, not features, and are left out)."""

_SHELL_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.=")


def _quoted(requirement: str) -> str:
    return requirement if set(requirement) <= _SHELL_PLAIN else f"'{requirement}'"


def pip_command(extra: str) -> str:
    """The command that installs ``extra``'s packages: ``pip install 'pyarrow>=19'``."""
    return "pip install " + " ".join(_quoted(req) for req in EXTRAS[extra].requires)


def python_needed(extra: str) -> str:
    """``", which needs Python 3.12+ (this is Python 3.11)"`` when this Python is older
    than ``extra``'s packages need, else ``""``."""
    need = EXTRAS[extra].python
    if need is None or sys.version_info[:2] >= need:
        return ""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f", which needs Python {need[0]}.{need[1]}+ (this is Python {here})"


def install_hint(extra: str) -> str:
    """What to install for ``extra``: :func:`pip_command`, then :func:`python_needed`."""
    return pip_command(extra) + python_needed(extra)


def missing_text(exc: BaseException) -> Optional[str]:
    """What a command says of a package that is not installed, after its
    ``agent-rollout COMMAND: `` prefix: ``pyarrow is not installed: pip install
    'pyarrow>=19'``, when ``exc`` is (or was raised from, or while handling) an
    ``ImportError`` naming a module an extra installs (``lsprotocol`` names the
    ``lsp`` extra, whose hint installs both its packages); else ``None``."""
    seen: set[int] = set()
    found: Optional[BaseException] = exc
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        name = getattr(found, "name", None) if isinstance(found, ImportError) else None
        extra = extra_for_module(name)
        if name and extra is not None:
            return f"{name.partition('.')[0]} is not installed: {install_hint(extra)}"
        found = found.__cause__ or found.__context__
    return None


def first_missing(extra: str) -> Optional[str]:
    """The first module of ``extra`` that cannot be imported (``"lsprotocol"`` where
    pygls is installed without it), or ``None`` when all are there: looked for, not
    imported, so that a command says what is missing before it starts anything."""
    for module in EXTRAS[extra].imports:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):  # a parent missing, or a module without a spec
            found = None
        if found is None:
            return module
    return None


def extra_for_module(module: Optional[str]) -> Optional[str]:
    """The extra that installs the top-level package of ``module`` (``'pyarrow.parquet'``:
    ``'arrow'``), or ``None`` when no extra does."""
    top = (module or "").partition(".")[0]
    for spec in EXTRAS.values():
        if top in spec.imports:
            return spec.name
    return None


__all__ = [
    "EXTRAS",
    "Extra",
    "extra_for_module",
    "first_missing",
    "install_hint",
    "missing_text",
    "pip_command",
    "python_needed",
]
