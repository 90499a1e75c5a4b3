"""Engine choice, the fallback when the native module cannot be imported, and ``__all__``.

The engine is chosen once, when the package is imported, so every case that
needs a different choice runs in a child interpreter.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agent_rollout
from agent_rollout import _engine

PACKAGE_DIR = Path(agent_rollout.__file__).parent
NATIVE_BUILT = importlib.util.find_spec("agent_rollout._native") is not None
needs_native = pytest.mark.skipif(not NATIVE_BUILT, reason="the Rust extension is not built")
# The pure-Python wheel carries a marker and never tries the engine's import.
PURE_WHEEL = (PACKAGE_DIR / _engine.PURE_WHEEL_MARKER).exists()
tries_native_import = pytest.mark.skipif(PURE_WHEEL, reason="the pure wheel never imports _native")

FALLBACK_WARNING = (
    "agent_rollout: the Rust engine could not be imported ({reason}); "
    "using the pure-Python engine, which is slower"
)

# Imports the package with warnings recorded, uses it twice and reports as JSON.
USE_PACKAGE = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import agent_rollout
    first = agent_rollout.normalise_rollout_rows([{"prompt": "a", "answer": "b", "x": 1}])
    second = agent_rollout.normalise_rollout_rows(
        [{"prompt": [{"role": "user", "content": "hi"}]}]
    )
print(json.dumps({
    "implementation": agent_rollout.implementation(),
    "native_imported": "agent_rollout._native" in sys.modules,
    "rows": [list(first), list(second)],
    "runtime_warnings": [str(w.message) for w in caught if w.category is RuntimeWarning],
    "file": agent_rollout.__file__,
}))
"""

EXPECTED_ROWS = [
    [{"prompt": "a", "answer": "b"}],
    [{"prompt": [{"role": "user", "content": "hi"}]}],
]


def block_native(error: str) -> str:
    """Code for a meta-path finder that makes ``import agent_rollout._native`` raise ``error``."""
    return f"""
import sys

class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "agent_rollout._native":
            raise {error}
        return None

sys.meta_path.insert(0, _Block())
"""


def run_child(
    code: str, tmp_path: Path, **env_changes: str | None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; ``env_changes`` sets (None: removes) variables."""
    env = dict(os.environ)
    env.pop(_engine.PURE_PYTHON_ENV, None)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


# ---- which engine -----------------------------------------------------------------


def test_implementation_is_one_of_the_two() -> None:
    assert agent_rollout.implementation() in ("rust", "python")


@needs_native
def test_default_run_uses_rust_in_this_process() -> None:
    if os.environ.get(_engine.PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        pytest.skip(f"{_engine.PURE_PYTHON_ENV} is set for this run")
    assert _engine.native_available()
    assert agent_rollout.implementation() == "rust"


@needs_native
def test_default_run_uses_rust(tmp_path: Path) -> None:
    out = report(run_child(USE_PACKAGE, tmp_path))
    assert out["implementation"] == "rust"
    assert out["native_imported"] is True
    assert out["rows"] == EXPECTED_ROWS
    assert out["runtime_warnings"] == []


@needs_native
def test_env_zero_keeps_rust(tmp_path: Path) -> None:
    out = report(run_child(USE_PACKAGE, tmp_path, AGENT_ROLLOUT_PURE_PYTHON="0"))
    assert out["implementation"] == "rust"


def test_env_one_forces_python(tmp_path: Path) -> None:
    out = report(run_child(USE_PACKAGE, tmp_path, AGENT_ROLLOUT_PURE_PYTHON="1"))
    assert out["implementation"] == "python"
    assert out["native_imported"] is False
    assert out["rows"] == EXPECTED_ROWS
    assert out["runtime_warnings"] == []


# ---- the native module cannot be imported ----------------------------------------


@tries_native_import
def test_unimportable_native_falls_back_and_warns_once(tmp_path: Path) -> None:
    code = block_native('ImportError("blocked for the test", name="agent_rollout._native")')
    out = report(run_child(code + USE_PACKAGE, tmp_path))
    assert out["implementation"] == "python"
    assert out["native_imported"] is False
    assert out["rows"] == EXPECTED_ROWS
    assert out["runtime_warnings"] == [FALLBACK_WARNING.format(reason="blocked for the test")]


def test_fallback_errors_match_the_rust_texts(tmp_path: Path) -> None:
    code = (
        block_native('ImportError("blocked", name="agent_rollout._native")')
        + """
import json, warnings
warnings.simplefilter("ignore")
import agent_rollout
try:
    agent_rollout.normalise_rollout_rows([{"prompt": "ok"}, {"prompt": 3}])
except agent_rollout.RolloutRowError as exc:
    print(json.dumps([str(exc), exc.index, exc.path, agent_rollout.implementation()]))
"""
    )
    out = run_child(code, tmp_path)
    assert out.returncode == 0, out.stderr
    text, index, path, engine = json.loads(out.stdout.splitlines()[-1])
    assert engine == "python"
    assert (text, index, path) == (
        "row 1: prompt: must be a str or a list of chat messages, got 'int'",
        1,
        "prompt",
    )


@tries_native_import
def test_unrelated_import_error_is_not_swallowed(tmp_path: Path) -> None:
    code = (
        block_native('ImportError("numpy is missing", name="numpy")')
        + """
import json
try:
    import agent_rollout
except ImportError as exc:
    print(json.dumps({"raised": True, "name": exc.name, "message": str(exc)}))
else:
    print(json.dumps({"raised": False, "implementation": agent_rollout.implementation()}))
"""
    )
    out = report(run_child(code, tmp_path))
    assert out == {"raised": True, "name": "numpy", "message": "numpy is missing"}


def _package_copy(tmp_path: Path) -> Path:
    """A copy of the installed package with no native module (a broken install); its parent."""
    root = tmp_path / "site"
    shutil.copytree(
        PACKAGE_DIR,
        root / "agent_rollout",
        ignore=shutil.ignore_patterns(
            "__pycache__", "_native.*.so", "_native.*.pyd", "_native.so", _engine.PURE_WHEEL_MARKER
        ),
    )
    for leftover in (root / "agent_rollout").glob("_native*"):
        if leftover.suffix != ".pyi":
            leftover.unlink()
    return root


def test_missing_native_file_falls_back(tmp_path: Path) -> None:
    root = _package_copy(tmp_path)
    out = report(run_child(USE_PACKAGE, tmp_path, PYTHONPATH=str(root)))
    assert Path(out["file"]).is_relative_to(root)
    assert out["implementation"] == "python"
    assert out["rows"] == EXPECTED_ROWS
    assert len(out["runtime_warnings"]) == 1


def test_broken_native_file_falls_back(tmp_path: Path) -> None:
    root = _package_copy(tmp_path)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (root / "agent_rollout" / f"_native{suffix}").write_bytes(b"not a shared library\n")
    out = report(run_child(USE_PACKAGE, tmp_path, PYTHONPATH=str(root)))
    assert Path(out["file"]).is_relative_to(root)
    assert out["implementation"] == "python"
    assert out["rows"] == EXPECTED_ROWS
    assert len(out["runtime_warnings"]) == 1


def test_pure_wheel_marker_means_python_without_a_warning(tmp_path: Path) -> None:
    # A broken native file next to the marker: it would warn if the import were tried.
    root = _package_copy(tmp_path)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (root / "agent_rollout" / f"_native{suffix}").write_bytes(b"not a shared library\n")
    (root / "agent_rollout" / _engine.PURE_WHEEL_MARKER).write_text("pure wheel\n")
    out = report(run_child(USE_PACKAGE, tmp_path, PYTHONPATH=str(root)))
    assert Path(out["file"]).is_relative_to(root)
    assert out["implementation"] == "python"
    assert out["native_imported"] is False
    assert out["rows"] == EXPECTED_ROWS
    assert out["runtime_warnings"] == []


# ---- the public surface -----------------------------------------------------------

PUBLIC = {
    "AgentRolloutError",
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "ConfigError",
    "ConfigIssue",
    "NormaliseReport",
    "RolloutBadRowsError",
    "RolloutFileError",
    "load_config",
    "normalise_rollout_file",
    "read_rollout_jsonl",
    "MAX_MESSAGE_DEPTH",
    "MAX_ROLLOUT_BYTES",
    "MAX_ROLLOUT_ROWS",
    "MAX_ROLLOUT_STEPS",
    "MAX_ROWS_LIMIT",
    "SUPPORTED_ROLLOUT_BACKENDS",
    "RolloutBackend",
    "RolloutBackendSpec",
    "RolloutDrop",
    "RolloutFields",
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
    "normalise_rollout_rows",
    "register_rollout_runner",
    "required_rollout_package",
    "resolve_rollout_func",
    "unregister_rollout_runner",
    "validate_rollout_backend",
    "validate_rollout_func",
}


def test_all_lists_exactly_the_public_names() -> None:
    assert len(agent_rollout.__all__) == len(set(agent_rollout.__all__))
    assert set(agent_rollout.__all__) == PUBLIC


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(agent_rollout, name) is not None


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, Any] = {}
    exec("from agent_rollout import *", namespace)
    assert PUBLIC <= set(namespace)


def test_lazy_config_names_are_the_config_module_objects() -> None:
    from agent_rollout import config

    assert agent_rollout.RolloutSettings is config.RolloutSettings
    assert agent_rollout.RolloutBackend is config.RolloutBackend
    assert agent_rollout.RolloutFunc is config.RolloutFunc
    assert agent_rollout.RolloutSettings.model_validate({}).rollout_backend is None


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'agent_rollout' has no attribute 'nope'"):
        agent_rollout.nope  # noqa: B018


def test_import_does_not_load_the_config_models(tmp_path: Path) -> None:
    code = """
import json, sys
import agent_rollout
before = ["agent_rollout.config" in sys.modules, "pydantic" in sys.modules]
agent_rollout.RolloutSettings
print(json.dumps(before + ["agent_rollout.config" in sys.modules]))
"""
    assert report(run_child(code, tmp_path)) == [False, False, True]  # type: ignore[comparison-overlap]
