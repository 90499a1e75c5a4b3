"""The backend allowlist, its metadata and every limit, in one place.

Everything else (the pydantic models, the row rules of both engines, the
command line) reads its names and numbers from here; the Rust engine receives
the limits it needs as arguments.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

MAX_BACKEND_NAME_LEN = 32
MAX_ROLLOUT_FUNC_LEN = 260
MAX_ROLLOUT_ROWS = 100_000
"""Default cap on the rows one rollout may produce."""
MAX_ROWS_LIMIT = 10_000_000
"""The largest ``max_rows`` a caller may ask for."""
MAX_ROLLOUT_STEPS = 100_000
DEFAULT_ROLLOUT_STEPS = 64
MAX_MESSAGE_DEPTH = 64
"""How deeply containers may nest inside one chat message.

The message mapping itself is level 1; a ``content`` list inside it is level 2,
a content part inside that list level 3, and so on. A message nested deeper
(or a container that holds itself) is refused with ``RolloutRowError``.
"""

MAX_JSON_DEPTH = 128
"""How deeply arrays and objects may nest in one JSONL line (the row object is 1)."""
MAX_INT_DIGITS = 4300
"""CPython's default limit on the digits of an int read from text.

The limit in force is the interpreter's own (``sys.get_int_max_str_digits()``,
0 for none), read at each call: ``int_digits_limit()``."""


def int_digits_limit() -> int:
    """The longest integer (in digits) a JSONL line may hold right now."""
    import sys

    limit = sys.get_int_max_str_digits()
    return limit if limit > 0 else 2**62


MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSONL line accepted, in bytes (without its newline)."""

MAX_ROLLOUT_BYTES = 4 * 1024**3
"""Default cap on the bytes one rollout file may hold, after gzip decompression (4 GiB).

Chosen for real files: 100,000 rows (the default row cap) of long multi-turn
agent trajectories (a 20-turn episode with tool output and the dropped extra
keys kept by loggers, about 40 KiB a row) come to about 3.8 GiB, while the
rows users normalise most (a few turns, under 5 KiB) stay far below. It stops
a small ``.jsonl.gz`` that expands without end (or to blank lines) long before
memory or the disk runs out. Blank lines count.
"""
MAX_BYTES_LIMIT = 2**40
"""The largest ``max_bytes`` a caller may ask for (1 TiB)."""

# ------------------------------------------------------------ config files

MAX_CONFIG_BYTES = 1024 * 1024
"""The largest training config file read, in bytes (checked before reading).

Real configs are a few kilobytes (the largest in tests/data/trainer_keys.json's
sources, verl's generated PPO trainer YAML, is under 40 KB); a file past this
is refused at once instead of being parsed for seconds."""
MAX_NESTING_DEPTH = 200
"""How deeply mappings and lists may nest in a config file (the root is level 1).

One limit for YAML, JSON and TOML; a YAML alias counts as a copy of what it
names, so aliases stacked on aliases cannot get past it."""
MAX_YAML_EXPANDED_NODES = 1_000_000
"""The most values a YAML document may hold, each alias counted as a full copy."""

# ``module.path:function_name``. ``fullmatch`` is used, so no trailing newline
# slips through the way ``$`` would let it.
ROLLOUT_FUNC_PATTERN = r"[A-Za-z_][A-Za-z0-9_.]{0,127}:[A-Za-z_][A-Za-z0-9_]{0,127}"
_ROLLOUT_FUNC_RE = re.compile(ROLLOUT_FUNC_PATTERN)

SUPPORTED_ROLLOUT_BACKENDS: frozenset[str] = frozenset({"art", "ruler", "nemo_gym", "openenv"})


@dataclass(frozen=True)
class RolloutBackendSpec:
    """What one rollout backend is and what it needs.

    ``required_package`` is the pip name to install (``None`` when nothing is
    needed); ``import_name`` is the module whose presence proves it is there.
    ``live_wired`` says ``launch_rollout`` can generate rollouts with the
    backend (not only convert data); when that live mode needs another package
    than the default mode, ``live_package``/``live_import_name`` name it
    (``nemo_gym``: converting files needs nothing, running Gym needs nemo-gym).
    """

    name: str
    description: str
    required_package: Optional[str]
    live_wired: bool
    import_name: Optional[str] = None
    extra: Optional[str] = None
    live_package: Optional[str] = None
    live_import_name: Optional[str] = None


_BACKEND_METADATA: Mapping[str, RolloutBackendSpec] = types.MappingProxyType(
    {
        "art": RolloutBackendSpec(
            name="art",
            description="OpenPipe ART: multi-turn agent rollouts gathered as trajectory groups",
            required_package="openpipe-art",
            live_wired=True,
            import_name="art",
            extra="art",
        ),
        "ruler": RolloutBackendSpec(
            name="ruler",
            description="RULER (inside openpipe-art): trajectory groups ranked by an LLM judge",
            required_package="openpipe-art",
            live_wired=True,
            import_name="art.rewards",
            extra="art",
        ),
        "nemo_gym": RolloutBackendSpec(
            name="nemo_gym",
            description=(
                "NVIDIA NeMo Gym: task and rollout data converted to rows, or rollouts "
                "collected live by Gym's servers (rollout_gym_config; needs nemo-gym)"
            ),
            required_package=None,
            live_wired=True,
            import_name=None,
            extra="nemo-gym",
            live_package="nemo-gym",
            live_import_name="nemo_gym",
        ),
        "openenv": RolloutBackendSpec(
            name="openenv",
            description="OpenEnv rollout_func protocol: a user function returns the rows",
            required_package=None,
            live_wired=True,
            import_name=None,
            extra="openenv",
        ),
    }
)

BACKEND_NAMES: tuple[str, ...] = tuple(sorted(SUPPORTED_ROLLOUT_BACKENDS))


def list_rollout_backends() -> tuple[str, ...]:
    """The supported backend names, sorted."""
    return BACKEND_NAMES


def validate_rollout_backend(name: object) -> str:
    """Check a backend name and return its canonical (lower-case) form.

    Raises ``ValueError`` for a bool or any other non-string, an empty string,
    a NUL byte, more than ``MAX_BACKEND_NAME_LEN`` characters, or a name that
    is not on the allowlist (the message lists the valid names).
    """
    if isinstance(name, bool):
        raise ValueError("rollout_backend must be a string, got bool")
    if not isinstance(name, str):
        raise ValueError(f"rollout_backend must be a string, got {type(name).__name__}")
    if not name:
        raise ValueError("rollout_backend must be a non-empty string")
    if "\x00" in name:
        raise ValueError("rollout_backend must not contain null bytes")
    if len(name) > MAX_BACKEND_NAME_LEN:
        raise ValueError(f"rollout_backend exceeds {MAX_BACKEND_NAME_LEN} chars")
    canonical = str.lower(name)
    if canonical not in SUPPORTED_ROLLOUT_BACKENDS:
        raise ValueError(
            f"rollout_backend={name!r} is not supported; valid: {', '.join(BACKEND_NAMES)}"
        )
    return canonical


def get_rollout_backend_spec(name: str) -> RolloutBackendSpec:
    """The :class:`RolloutBackendSpec` of a (validated) backend name."""
    return _BACKEND_METADATA[validate_rollout_backend(name)]


def required_rollout_package(name: str, *, live: bool = False) -> Optional[str]:
    """The pip package a backend needs, or ``None`` when it needs none.

    ``live=True`` asks about the mode that generates rollouts, where that
    differs (``nemo_gym``: ``None`` to convert Gym files, ``'nemo-gym'`` to run Gym).
    """
    spec = get_rollout_backend_spec(name)
    if live and spec.live_package is not None:
        return spec.live_package
    return spec.required_package


def validate_rollout_func(value: object) -> Optional[str]:
    """Check a ``module.path:function_name`` spec without importing anything.

    ``None`` passes through (the setting is unset).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"rollout_func must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError("rollout_func must not be empty")
    if "\x00" in value:
        raise ValueError("rollout_func must not contain null bytes")
    if len(value) > MAX_ROLLOUT_FUNC_LEN:
        raise ValueError(f"rollout_func must be <= {MAX_ROLLOUT_FUNC_LEN} chars")
    if _ROLLOUT_FUNC_RE.fullmatch(value) is None:
        raise ValueError(
            f"rollout_func={value!r} must match 'module.path:function_name' "
            "(letters, digits, underscore and dots only)"
        )
    return str.__str__(value)


def resolve_rollout_func(spec: str) -> Callable[..., Any]:
    """Import the module a validated spec names and return its callable.

    The spec names operator-controlled code: importing it runs that code, as a
    reward file or prompt strategy would.
    """
    validated = validate_rollout_func(spec)
    if validated is None:
        raise ValueError("rollout_func must not be None")
    module_path, _, fn_name = validated.partition(":")
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise ValueError(
            f"rollout_func module {module_path!r} could not be imported: {exc}"
        ) from exc
    if not hasattr(module, fn_name):
        raise ValueError(
            f"rollout_func {validated!r}: module {module_path!r} has no attribute {fn_name!r}"
        )
    fn = getattr(module, fn_name)
    if not callable(fn):
        raise ValueError(
            f"rollout_func {validated!r}: resolved attribute is not callable ({type(fn).__name__})"
        )
    return fn


def _module_available(import_name: str) -> bool:
    """``find_spec`` that treats a broken or half-installed parent as absent."""
    try:
        return importlib.util.find_spec(import_name) is not None
    except (ImportError, ValueError):
        return False


def require_backend_package(name: str, *, live: bool = False) -> None:
    """Raise a friendly ``ImportError`` when a backend's package (for the mode) is missing."""
    spec = get_rollout_backend_spec(name)
    package, import_name = spec.required_package, spec.import_name
    if live and spec.live_package is not None:
        package, import_name = spec.live_package, spec.live_import_name
    if import_name is None or _module_available(import_name):
        return
    mode = " live" if live and spec.live_package is not None else ""
    raise ImportError(
        f"rollout_backend={spec.name!r}{mode} requires the {package!r} package: "
        f"pip install {package} (or pip install 'agent-rollout[{spec.extra}]')"
    )
