"""The backend table: which backends there are, what each needs and which keys it takes.

Everything that depends on a backend reads it from here: the allowlist
(``validate_rollout_backend``), the packages to install, the config keys each
backend takes and the launch option each key becomes, and the keys the
built-in adapter expects. The config rules, their JSON Schema and
``RolloutFields.to_launch_kwargs`` are derived from these tables
(``agent_rollout.config._rules``). The adapters themselves are the modules of
this package (``art``, ``ruler``, ``openenv``, ``nemo_gym``), imported only
when a rollout of theirs is launched.

Adding a key: its field on ``agent_rollout.config.RolloutFields`` (type and
JSON Schema), then a ``RolloutKey`` here; the rules, the schema, the
look-alike check and the launch options follow.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from agent_rollout._exceptions import MissingPackageError, RolloutValueError
from agent_rollout._extras import install_hint
from agent_rollout._limits import (
    DEFAULT_GROUP_SIZE,
    DEFAULT_ROLLOUT_STEPS,
    MAX_BACKEND_NAME_LEN,
    MAX_ROLLOUT_FUNC_LEN,
)

# ``module.path:function_name``. ``fullmatch`` is used, so no trailing newline
# slips through the way ``$`` would let it.
ROLLOUT_FUNC_PATTERN = r"[A-Za-z_][A-Za-z0-9_.]{0,127}:[A-Za-z_][A-Za-z0-9_]{0,127}"
_ROLLOUT_FUNC_RE = re.compile(ROLLOUT_FUNC_PATTERN)

SUPPORTED_ROLLOUT_BACKENDS: frozenset[str] = frozenset({"art", "ruler", "nemo_gym", "openenv"})
BACKEND_NAMES: tuple[str, ...] = tuple(sorted(SUPPORTED_ROLLOUT_BACKENDS))


@dataclass(frozen=True)
class RolloutBackendSpec:
    """What one rollout backend is and what it needs.

    ``required_package`` is the pip name to install (``None`` when nothing is
    needed); ``import_name`` is the module whose presence proves it is there.
    ``live_wired`` says ``launch_rollout`` can generate rollouts with the
    backend (not only convert data); when that live mode needs another package
    than the default mode, ``live_package``/``live_import_name`` name it
    (``nemo_gym``: converting files needs nothing, running Gym needs nemo-gym).
    ``extra`` is the extra that installs them (``agent_rollout._extras.EXTRAS``,
    whose ``install_hint`` every message about a missing one gives).
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

# ---- the keys of a training config section ----------------------------------------------


@dataclass(frozen=True)
class RolloutKey:
    """One optional ``rollout_*`` key that only some backends take.

    ``backends`` are the backends it applies to, in the order error messages
    name them (elsewhere the key is an error); ``option`` is the
    ``launch_rollout(options=...)`` name it becomes (``None``: it is an
    argument of its own, ``rollout_func``).
    """

    name: str
    backends: tuple[str, ...]
    option: Optional[str] = None


BACKENDS_WITH_FUNC: tuple[str, ...] = ("art", "openenv", "ruler")
"""Backends that take ``rollout_func`` (``art`` may read ``rollout_source`` instead)."""

ROLLOUT_KEYS: tuple[str, ...] = (
    "rollout_backend",
    "rollout_func",
    "rollout_max_steps",
    "rollout_group_size",
    "rollout_judge_model",
    "rollout_judge_base_url",
    "rollout_policy_model",
    "rollout_policy_base_url",
    "rollout_source",
    "rollout_gym_config",
    "rollout_gym_head_port",
)
"""Every key of ours, in the order the models and the schema list them."""

ROLLOUT_DEFAULTS: Mapping[str, Any] = types.MappingProxyType(
    {"rollout_max_steps": DEFAULT_ROLLOUT_STEPS, "rollout_group_size": DEFAULT_GROUP_SIZE}
)
"""The keys whose unset value is not ``None``, and that value.

A key holding its default counts as unset for the cross-field rules (so a
dump of the model, or a host that copies the defaults, validates again); any
other value counts as set."""

BACKEND_KEYS: tuple[RolloutKey, ...] = (
    RolloutKey("rollout_func", BACKENDS_WITH_FUNC),
    RolloutKey("rollout_group_size", ("art", "ruler", "nemo_gym"), "group_size"),
    RolloutKey("rollout_judge_model", ("ruler",), "judge_model"),
    RolloutKey("rollout_judge_base_url", ("ruler",), "judge_base_url"),
    RolloutKey("rollout_policy_model", ("art", "ruler", "nemo_gym"), "policy_model"),
    RolloutKey("rollout_policy_base_url", ("art", "ruler", "nemo_gym"), "policy_base_url"),
    RolloutKey("rollout_source", ("art", "nemo_gym"), "source"),
    RolloutKey("rollout_gym_config", ("nemo_gym",), "gym_config"),
    RolloutKey("rollout_gym_head_port", ("nemo_gym",), "gym_head_port"),
)
"""The keys that apply to some backends only (``rollout_backend`` and
``rollout_max_steps`` apply to every one)."""

REQUIRED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {}
"""Per backend, groups of keys one of which must be set, whoever runs it (an
error). None today: every backend can be completed at run time."""

EXPECTED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "art": (("rollout_func", "rollout_source"),),
    "ruler": (("rollout_func",), ("rollout_judge_model",)),
    "openenv": (("rollout_func",),),
}
"""Per backend, groups of keys one of which the built-in adapter needs (a
warning: a caller may supply it at run time). art runs a rollout_func or reads
an ART trajectory file; ruler runs a rollout_func and asks a judge model (a
runner registered with register_rollout_runner may need neither); openenv
calls rollout_func, which ``launch_rollout(rollout_func=...)`` may pass as a
callable. The seed's config rules accept all three without these keys."""

RUN_TIME_HINT: Mapping[str, str] = {
    "openenv": "(launch_rollout(rollout_func=...) may pass it at run time)",
}
"""How a backend's missing keys can be supplied at run time (warning text)."""
RUNNER_HINT = "(a runner registered with register_rollout_runner may not)"

LIVE_KEYS: Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "nemo_gym": (
        "rollout_gym_config",
        (
            "rollout_policy_model",
            "rollout_policy_base_url",
            "rollout_group_size",
            "rollout_gym_head_port",
        ),
        ("rollout_policy_model", "rollout_policy_base_url"),
    ),
}
"""Per backend with a live mode: (the key that turns it on, the keys that mean
something only then, the keys it then requires)."""

PAIRED_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "art": (("rollout_policy_model", "rollout_policy_base_url"),),
    "ruler": (("rollout_policy_model", "rollout_policy_base_url"),),
}
"""Per backend, groups of keys that are set together or not at all (an error):
the policy of art and ruler is a model name on a server, both or neither (the
caller's own model then). nemo_gym live requires both through ``LIVE_KEYS``."""


def key_backends(key: str) -> tuple[str, ...]:
    """The backends an optional key applies to (every backend for the others)."""
    for entry in BACKEND_KEYS:
        if entry.name == key:
            return entry.backends
    return BACKEND_NAMES


def launch_options(backend: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``launch_rollout(options=...)`` of a validated section's ``values``.

    Only the keys that apply to ``backend`` and are set, under their option
    names; for a backend with a live mode that is off, its live-only keys are
    left out (the rules refuse them, but ``rollout_group_size`` keeps its
    default there and means nothing).
    """
    options: dict[str, Any] = {}
    for entry in BACKEND_KEYS:
        value = values.get(entry.name)
        if entry.option is not None and backend in entry.backends and value is not None:
            options[entry.option] = value
    live = LIVE_KEYS.get(backend)
    if live is not None and values.get(live[0]) is None:
        for key in live[1]:
            option = next(e.option for e in BACKEND_KEYS if e.name == key)
            options.pop(option or "", None)
    return options


# ---- names and packages ------------------------------------------------------------------


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
        raise RolloutValueError("rollout_backend must be a string, got bool")
    if not isinstance(name, str):
        raise RolloutValueError(f"rollout_backend must be a string, got {type(name).__name__}")
    if not name:
        raise RolloutValueError("rollout_backend must be a non-empty string")
    if "\x00" in name:
        raise RolloutValueError("rollout_backend must not contain null bytes")
    if len(name) > MAX_BACKEND_NAME_LEN:
        raise RolloutValueError(f"rollout_backend exceeds {MAX_BACKEND_NAME_LEN} chars")
    canonical = str.lower(name)
    if canonical not in SUPPORTED_ROLLOUT_BACKENDS:
        meant = backend_suggestion(name)
        hint = f"; did you mean {meant!r}?" if meant is not None else ""
        raise RolloutValueError(
            f"rollout_backend={name!r} is not supported; valid: {', '.join(BACKEND_NAMES)}{hint}"
        )
    return canonical


def backend_meant(name: str) -> Optional[str]:
    """The backend a misspelt name means: ``'Nemo-Gym'``, ``'NEMOGYM'`` and ``'nemo gym'``
    mean ``nemo_gym`` (case, ``-``, ``_``, ``.`` and spaces aside); ``None`` for any other."""
    folded = re.sub(r"[-_. ]", "", str.lower(name))
    for backend in BACKEND_NAMES:
        if backend.replace("_", "") == folded:
            return backend
    return None


def _close_match(word: str, names: list[str]) -> Optional[str]:
    """The one of ``names`` closest to ``word`` (``difflib``'s default cutoff), if any."""
    close = difflib.get_close_matches(word, names, n=1)
    return close[0] if close else None


def backend_suggestion(name: str) -> Optional[str]:
    """The backend a name not on the allowlist likely means, for a did-you-mean:
    ``backend_meant``'s (the fix ``check --fix`` makes), else the closest name
    (``opnenv``: ``openenv``); ``None`` when none is close (``verl``)."""
    return backend_meant(name) or _close_match(str.lower(name), list(BACKEND_NAMES))


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
    # The extra's requirements, not the bare package: they pin what it needs alongside
    # (a bare `pip install openpipe-art` resolves openai 3, which breaks ART's client).
    raise MissingPackageError(
        f"rollout_backend={spec.name!r}{mode} requires the {package!r} package: "
        f"{install_hint(spec.extra or '')}"
    )


# ---- rollout_func ------------------------------------------------------------------------


def validate_rollout_func(value: object) -> Optional[str]:
    """Check a ``module.path:function_name`` spec without importing anything.

    ``None`` passes through (the setting is unset).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise RolloutValueError(f"rollout_func must be a string, got {type(value).__name__}")
    if not value:
        raise RolloutValueError("rollout_func must not be empty")
    if "\x00" in value:
        raise RolloutValueError("rollout_func must not contain null bytes")
    if len(value) > MAX_ROLLOUT_FUNC_LEN:
        raise RolloutValueError(f"rollout_func must be <= {MAX_ROLLOUT_FUNC_LEN} chars")
    if _ROLLOUT_FUNC_RE.fullmatch(value) is None:
        raise RolloutValueError(
            f"rollout_func={value!r} must match 'module.path:function_name' "
            "(letters, digits, underscore and dots only)"
        )
    return str.__str__(value)


def _public_callables(module: types.ModuleType) -> list[str]:
    """The names a ``rollout_func`` may mean in ``module``: its public callables."""
    try:
        namespace = dict(vars(module))
    except TypeError:  # no __dict__ (a module object of another kind)
        return []
    return sorted(
        name
        for name, value in namespace.items()
        if isinstance(name, str) and not name.startswith("_") and callable(value)
    )


def resolve_rollout_func(spec: str) -> Callable[..., Any]:
    """Import the module a validated spec names and return its callable.

    The spec names operator-controlled code: importing it runs that code, as a
    reward file or prompt strategy would.
    """
    validated = validate_rollout_func(spec)
    if validated is None:
        raise RolloutValueError("rollout_func must not be None")
    module_path, _, fn_name = validated.partition(":")
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        raise RolloutValueError(
            f"rollout_func module {module_path!r} could not be imported: {exc}"
        ) from exc
    if not hasattr(module, fn_name):
        meant = _close_match(fn_name, _public_callables(module))
        hint = f"; did you mean {meant!r}?" if meant is not None else ""
        raise RolloutValueError(
            f"rollout_func {validated!r}: module {module_path!r} has no attribute {fn_name!r}{hint}"
        )
    fn = getattr(module, fn_name)
    if not callable(fn):
        raise RolloutValueError(
            f"rollout_func {validated!r}: resolved attribute is not callable ({type(fn).__name__})"
        )
    return fn


def adapter(name: str) -> Any:
    """The built-in adapter module of a backend (``agent_rollout.backends.<name>``)."""
    return importlib.import_module(f"{__name__}.{validate_rollout_backend(name)}")


__all__ = [
    "BACKENDS_WITH_FUNC",
    "BACKEND_KEYS",
    "BACKEND_NAMES",
    "EXPECTED_KEYS",
    "LIVE_KEYS",
    "PAIRED_KEYS",
    "REQUIRED_KEYS",
    "ROLLOUT_DEFAULTS",
    "ROLLOUT_FUNC_PATTERN",
    "ROLLOUT_KEYS",
    "SUPPORTED_ROLLOUT_BACKENDS",
    "RolloutBackendSpec",
    "RolloutKey",
    "adapter",
    "backend_meant",
    "backend_suggestion",
    "get_rollout_backend_spec",
    "key_backends",
    "launch_options",
    "list_rollout_backends",
    "require_backend_package",
    "required_rollout_package",
    "resolve_rollout_func",
    "validate_rollout_backend",
    "validate_rollout_func",
]
