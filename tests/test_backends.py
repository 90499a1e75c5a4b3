"""The backend allowlist, its metadata and the ``rollout_func`` spec rules."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_rollout import (
    SUPPORTED_ROLLOUT_BACKENDS,
    RolloutBackendSpec,
    get_rollout_backend_spec,
    list_rollout_backends,
    required_rollout_package,
    resolve_rollout_func,
    validate_rollout_backend,
    validate_rollout_func,
)
from support import facts

VALID = ("art", "nemo_gym", "openenv", "ruler")
SPEC_FORM = "module.path:function_name"


class Name(str):
    pass


class LyingName(str):
    """A str subclass whose ``lower`` lies: the checks must not call it."""

    def lower(self) -> str:  # type: ignore[override]
        return "openenv"


# ---- the allowlist ----------------------------------------------------------------


def test_supported_backends_is_the_closed_allowlist() -> None:
    assert isinstance(SUPPORTED_ROLLOUT_BACKENDS, frozenset)
    assert frozenset({"art", "ruler", "nemo_gym", "openenv"}) == SUPPORTED_ROLLOUT_BACKENDS


def test_list_rollout_backends_is_sorted_tuple() -> None:
    names = list_rollout_backends()
    assert names == ("art", "nemo_gym", "openenv", "ruler")
    assert names == tuple(sorted(SUPPORTED_ROLLOUT_BACKENDS))


@pytest.mark.parametrize("value", [True, False])
def test_backend_bool_refused(value: bool) -> None:
    with pytest.raises(ValueError, match=facts("rollout_backend", "bool")):
        validate_rollout_backend(value)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(None, "NoneType"), (1, "int"), (b"art", "bytes"), (["art"], "list"), (1.5, "float")],
)
def test_backend_non_string_refused(value: object, type_name: str) -> None:
    with pytest.raises(ValueError, match=facts("rollout_backend", type_name)):
        validate_rollout_backend(value)


def test_backend_empty_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_backend", "non-empty")):
        validate_rollout_backend("")


@pytest.mark.parametrize("value", ["art\x00", "\x00", "open\x00env"])
def test_backend_nul_refused(value: str) -> None:
    with pytest.raises(ValueError, match=facts("rollout_backend", "null")):
        validate_rollout_backend(value)


def test_backend_over_32_chars_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_backend", 32)):
        validate_rollout_backend("a" * 33)


def test_backend_of_32_chars_reaches_the_allowlist_check() -> None:
    name = "b" * 32
    with pytest.raises(ValueError, match=facts(repr(name), *VALID)):
        validate_rollout_backend(name)


@pytest.mark.parametrize("name", ["bogus", "open env", " art", "art ", "nemo-gym", "ART\n"])
def test_backend_unknown_lists_the_valid_names(name: str) -> None:
    with pytest.raises(ValueError, match=facts(repr(name), *VALID)):
        validate_rollout_backend(name)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("art", "art"),
        ("ART", "art"),
        ("Ruler", "ruler"),
        ("NeMo_GyM", "nemo_gym"),
        ("OPENENV", "openenv"),
    ],
)
def test_backend_is_case_insensitive_and_canonical(name: str, canonical: str) -> None:
    result = validate_rollout_backend(name)
    assert result == canonical
    assert type(result) is str


def test_backend_str_subclass_becomes_exact_str() -> None:
    result = validate_rollout_backend(Name("OpenEnv"))
    assert result == "openenv"
    assert type(result) is str


def test_backend_str_subclass_lower_is_not_trusted() -> None:
    with pytest.raises(ValueError, match=facts("'bogus'", *VALID)):
        validate_rollout_backend(LyingName("bogus"))


# ---- metadata ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUPPORTED_ROLLOUT_BACKENDS))
def test_spec_per_backend(name: str) -> None:
    spec = get_rollout_backend_spec(name.upper())
    assert isinstance(spec, RolloutBackendSpec)
    assert spec.name == name
    assert spec.description
    assert spec.required_package == required_rollout_package(name)


def test_spec_unknown_name_refused() -> None:
    with pytest.raises(ValueError, match=facts("'nope'", *VALID)):
        get_rollout_backend_spec("nope")
    with pytest.raises(ValueError, match=facts("rollout_backend", "bool")):
        required_rollout_package(True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("art", "openpipe-art"),
        ("ruler", "openpipe-art"),
        ("RULER", "openpipe-art"),
        ("openenv", None),
        ("nemo_gym", None),
        ("Nemo_Gym", None),
    ],
)
def test_required_rollout_package(name: str, package: str | None) -> None:
    assert required_rollout_package(name) == package


def test_ruler_is_checked_through_art_rewards() -> None:
    assert get_rollout_backend_spec("ruler").import_name == "art.rewards"
    assert get_rollout_backend_spec("art").import_name == "art"
    assert get_rollout_backend_spec("openenv").import_name is None


def test_spec_is_frozen() -> None:
    spec = get_rollout_backend_spec("art")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "ruler"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.required_package = None  # type: ignore[misc]
    assert get_rollout_backend_spec("art").required_package == "openpipe-art"


_PROBE = """
import json
from agent_rollout.backends import require_backend_package
out = {}
for name in ("art", "ruler", "openenv", "nemo_gym"):
    try:
        require_backend_package(name)
        out[name] = None
    except ImportError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


def _probe_packages(path_entry: Path) -> dict[str, str | None]:
    """Run ``require_backend_package`` in a child whose ``art`` is the one under ``path_entry``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path_entry), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=env,
        cwd=path_entry,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, str | None] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_ruler_needs_art_rewards_not_just_art(tmp_path: Path) -> None:
    # An ``art`` package without ``art.rewards``: ART counts as present, RULER does not.
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "__init__.py").write_text("")
    found = _probe_packages(tmp_path)
    assert found["art"] is None
    assert re.search(
        facts("'ruler'", "'openpipe-art'", "pip install 'openpipe-art>=0.5.18,<0.6'"),
        found["ruler"] or "",
    )
    assert found["openenv"] is None
    assert found["nemo_gym"] is None


def test_ruler_accepted_when_art_rewards_exists(tmp_path: Path) -> None:
    (tmp_path / "art" / "rewards").mkdir(parents=True)
    (tmp_path / "art" / "__init__.py").write_text("")
    (tmp_path / "art" / "rewards" / "__init__.py").write_text("")
    found = _probe_packages(tmp_path)
    assert found == {"art": None, "ruler": None, "openenv": None, "nemo_gym": None}


# ---- rollout_func: the spec rules -------------------------------------------------


def test_rollout_func_none_passes() -> None:
    assert validate_rollout_func(None) is None


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(True, "bool"), (1, "int"), (b"a:b", "bytes"), (["a:b"], "list")],
)
def test_rollout_func_non_string_refused(value: object, type_name: str) -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", type_name)):
        validate_rollout_func(value)


def test_rollout_func_empty_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", "empty")):
        validate_rollout_func("")


def test_rollout_func_nul_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", "null")):
        validate_rollout_func("mod:fn\x00")


def test_rollout_func_over_260_chars_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", 260)):
        validate_rollout_func("a" * 261)


def test_rollout_func_of_260_chars_reaches_the_pattern_check() -> None:
    value = "a" * 130 + ":" + "b" * 129
    assert len(value) == 260
    with pytest.raises(ValueError, match=facts(repr(value), SPEC_FORM)):
        validate_rollout_func(value)


@pytest.mark.parametrize(
    "value",
    [
        "a:b\n",
        "\na:b",
        "a:b ",
        " a:b",
        "a",
        "a:",
        ":b",
        "a:b:c",
        "1mod:fn",
        "mod:1fn",
        "a-b:c",
        "a/b:c",
        "a:b.c",
        "a b:c",
        "mod:fn()",
        "\u00e9t\u00e9:fn",
        "mod:f\u00e9",
    ],
)
def test_rollout_func_pattern_refused(value: str) -> None:
    with pytest.raises(ValueError, match=facts(repr(value), SPEC_FORM)):
        validate_rollout_func(value)


@pytest.mark.parametrize(
    "value",
    ["a:b", "a.b:c", "_a:_b", "pkg.sub_mod2:run_3", "A.B.C:Fn", "a" * 128 + ":" + "f" * 128],
)
def test_rollout_func_pattern_accepted(value: str) -> None:
    result = validate_rollout_func(value)
    assert result == value
    assert type(result) is str


@pytest.mark.parametrize(
    "value",
    ["a" * 129 + ":fn", "m" + "." * 128 + ":fn", "mod:" + "f" * 129, "mod:_" + "9" * 128],
)
def test_rollout_func_parts_limited_to_128_chars(value: str) -> None:
    with pytest.raises(ValueError, match=facts(repr(value), SPEC_FORM)):
        validate_rollout_func(value)


def test_rollout_func_str_subclass_becomes_exact_str() -> None:
    result = validate_rollout_func(Name("pkg.mod:fn"))
    assert result == "pkg.mod:fn"
    assert type(result) is str


# ---- rollout_func: resolving ------------------------------------------------------


@pytest.fixture
def make_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """Write a module with a fresh name under ``tmp_path`` (on ``sys.path``); return its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []

    def write(source: str) -> str:
        name = f"rollout_mod_{uuid.uuid4().hex}"
        (tmp_path / f"{name}.py").write_text(source)
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def test_resolve_success(make_module: Callable[[str], str]) -> None:
    mod = make_module("def run(prompts):\n    return [{'prompt': p} for p in prompts]\n")
    fn = resolve_rollout_func(f"{mod}:run")
    assert fn is sys.modules[mod].run
    assert fn(["x"]) == [{"prompt": "x"}]


def test_resolve_dotted_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = f"rollout_pkg_{uuid.uuid4().hex}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "inner.py").write_text("def go(prompts):\n    return 'went'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert resolve_rollout_func(f"{pkg}.inner:go")([]) == "went"
    finally:
        sys.modules.pop(f"{pkg}.inner", None)
        sys.modules.pop(pkg, None)


def test_resolve_missing_module() -> None:
    mod = f"no_such_module_{uuid.uuid4().hex}"
    with pytest.raises(ValueError, match=facts(repr(mod))) as info:
        resolve_rollout_func(f"{mod}:run")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert info.value.__cause__.name == mod


def test_resolve_module_with_missing_dependency(make_module: Callable[[str], str]) -> None:
    dep = f"no_such_dep_{uuid.uuid4().hex}"
    mod = make_module(f"import {dep}\n\ndef run(prompts):\n    return []\n")
    with pytest.raises(ValueError, match=facts(repr(mod), repr(dep))) as info:
        resolve_rollout_func(f"{mod}:run")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_resolve_module_raising_other_errors_propagates(make_module: Callable[[str], str]) -> None:
    mod = make_module("raise RuntimeError('module body failed')\n")
    with pytest.raises(RuntimeError) as info:
        resolve_rollout_func(f"{mod}:run")
    assert info.value.args == ("module body failed",)  # the module's own error, untouched


def test_resolve_missing_attribute(make_module: Callable[[str], str]) -> None:
    mod = make_module("def run(prompts):\n    return []\n")
    with pytest.raises(ValueError, match=facts(f"'{mod}:nope'", repr(mod), "'nope'")):
        resolve_rollout_func(f"{mod}:nope")


def test_resolve_not_callable(make_module: Callable[[str], str]) -> None:
    mod = make_module("ROWS = 3\n")
    with pytest.raises(ValueError, match=facts(f"'{mod}:ROWS'", "callable", "int")):
        resolve_rollout_func(f"{mod}:ROWS")


def test_resolve_none_refused() -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", "None")):
        resolve_rollout_func(None)  # type: ignore[arg-type]


def test_resolve_checks_the_spec_before_importing(make_module: Callable[[str], str]) -> None:
    mod = make_module("IMPORTED = True\n\ndef run(prompts):\n    return []\n")
    with pytest.raises(ValueError, match=facts(repr(f"{mod}:run\n"), SPEC_FORM)):
        resolve_rollout_func(f"{mod}:run\n")
    assert mod not in sys.modules
