"""agent_rollout: rollout-backend config rules and a fast, safe rollout row normaliser.

The public API lives here; everything in underscored modules is private.
The pydantic config types (``RolloutSettings`` and friends) are imported on
first use, so ``import agent_rollout`` stays cheap for row-only users.
"""

from __future__ import annotations

import sys as _sys

try:
    from typing import TYPE_CHECKING, Any

    from agent_rollout._engine import implementation, normalise_rollout_rows
    from agent_rollout._errors import RolloutBadRowsError, RolloutFileError, RolloutRowError
    from agent_rollout._exceptions import AgentRolloutError
    from agent_rollout._io import NormaliseReport, normalise_rollout_file, read_rollout_jsonl
    from agent_rollout._launch import (
        RolloutDrop,
        RolloutResult,
        launch_rollout,
        register_rollout_runner,
        unregister_rollout_runner,
    )
    from agent_rollout._limits import (
        MAX_JSON_DEPTH,
        MAX_LINE_BYTES,
        MAX_MESSAGE_DEPTH,
        MAX_ROLLOUT_BYTES,
        MAX_ROLLOUT_ROWS,
        MAX_ROLLOUT_STEPS,
        MAX_ROWS_LIMIT,
    )
    from agent_rollout.backends import (
        SUPPORTED_ROLLOUT_BACKENDS,
        RolloutBackendSpec,
        get_rollout_backend_spec,
        list_rollout_backends,
        required_rollout_package,
        resolve_rollout_func,
        validate_rollout_backend,
        validate_rollout_func,
    )
except KeyboardInterrupt:
    # Ctrl-C while the command line starts: `agent-rollout` (the console script) and
    # `python -m agent_rollout` import this package before agent_rollout.cli.main can
    # catch anything. End as main does on a Ctrl-C (exit 130, one line), not with a
    # traceback. Imported by anything else, the package lets the interrupt through.
    import os

    _script = os.path.basename(_sys.argv[0]) if _sys.argv else ""
    if _script.startswith("agent-rollout") or (
        _script == "-m"  # runpy, importing the package of the module it runs
        and any("agent_rollout" in arg for arg in getattr(_sys, "orig_argv", ()))
    ):
        _sys.stderr.write("agent-rollout: interrupted\n")
        raise SystemExit(130) from None
    raise

if TYPE_CHECKING:
    __version__: str
    from agent_rollout.arrow import arrow_to_rows as arrow_to_rows
    from agent_rollout.arrow import rows_to_arrow as rows_to_arrow
    from agent_rollout.arrow import to_dataset as to_dataset
    from agent_rollout.config import (
        ConfigError,
        ConfigIssue,
        RolloutBackend,
        RolloutFields,
        RolloutFunc,
        RolloutSettings,
        RolloutWarning,
        load_config,
    )


_LAZY = {
    "RolloutSettings": "config",
    "RolloutBackend": "config",
    "RolloutFunc": "config",
    "RolloutFields": "config",
    "RolloutWarning": "config",
    "load_config": "config",
    "ConfigError": "config",
    "ConfigIssue": "config",
    # Arrow needs pyarrow (the [arrow] extra): imported only when asked for, and
    # left out of __all__ so that `from agent_rollout import *` works without it
    # (agent_rollout.arrow.__all__ lists them).
    "rows_to_arrow": "arrow",
    "arrow_to_rows": "arrow",
    "to_dataset": "arrow",
}


def _version() -> str:
    # The version lives in Cargo.toml alone; the installed metadata carries it
    # (read on first use: importlib.metadata costs more than the package import).
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-rollout")
    except PackageNotFoundError:  # the source tree, not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_MESSAGE_DEPTH",
    "MAX_ROLLOUT_BYTES",
    "MAX_ROLLOUT_ROWS",
    "MAX_ROLLOUT_STEPS",
    "MAX_ROWS_LIMIT",
    "SUPPORTED_ROLLOUT_BACKENDS",
    "AgentRolloutError",
    "ConfigError",
    "ConfigIssue",
    "NormaliseReport",
    "RolloutBackend",
    "RolloutBackendSpec",
    "RolloutBadRowsError",
    "RolloutDrop",
    "RolloutFields",
    "RolloutFileError",
    "RolloutFunc",
    "RolloutResult",
    "RolloutRowError",
    "RolloutSettings",
    "RolloutWarning",
    "__version__",
    "get_rollout_backend_spec",
    "implementation",
    "launch_rollout",
    "list_rollout_backends",
    "load_config",
    "normalise_rollout_file",
    "normalise_rollout_rows",
    "read_rollout_jsonl",
    "register_rollout_runner",
    "required_rollout_package",
    "resolve_rollout_func",
    "unregister_rollout_runner",
    "validate_rollout_backend",
    "validate_rollout_func",
]
