"""docs/architecture.md is true: every module's imports are the ones its row allows.

The table in docs/architecture.md lists every module of the package (examples
aside) with what it may import. Imports are read from the source (at any
depth, lazy ones included), so a module that starts to reach sideways or
upwards fails here, naming the import and the line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "python" / "agent_rollout"
DOC = REPO / "docs" / "architecture.md"

pytestmark = pytest.mark.skipif(
    not PACKAGE.is_dir() or not DOC.exists(),
    reason="needs the source tree (not an installed wheel)",
)

ROW = re.compile(r"^\| `([A-Za-z_.]+)` \| [^|]* \|([^|]*)\|$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in PACKAGE.rglob("*.py")
        if "examples" not in path.relative_to(PACKAGE).parts
    }


def short(name: str) -> str:
    return name if name == "agent_rollout" else name.removeprefix("agent_rollout.")


def documented() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line.strip())
        if match and match.group(1) != "module":
            table[match.group(1)] = set(re.findall(r"`([A-Za-z_.]+)`", match.group(2)))
    return table


def imports_of(name: str, path: Path, known: set[str]) -> dict[str, int]:
    """The package modules ``name`` imports (the module owning each imported name), with a line."""

    def owner(target: str) -> str:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target

    found: dict[str, int] = {}
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                for alias in node.names
            ]
        for target in targets:
            if target.startswith("agent_rollout"):
                found.setdefault(owner(target), node.lineno)
    found.pop(name, None)
    found.pop("agent_rollout._native", None)  # the engine itself, reached through _engine
    return found


def test_every_module_is_in_the_table_and_nothing_else() -> None:
    modules = {short(name) for name in package_modules()}
    table = set(documented())
    assert modules - table == set(), "modules missing from docs/architecture.md"
    assert table - modules == set(), "docs/architecture.md lists modules that do not exist"


def test_every_import_is_allowed_by_its_row() -> None:
    modules = package_modules()
    known = {module_name(path) for path in PACKAGE.rglob("*.py")} | {"agent_rollout._native"}
    allowed = documented()
    wrong = []
    for name, path in sorted(modules.items()):
        for target, line in imports_of(name, path, known).items():
            if short(target) not in allowed[short(name)]:
                wrong.append(
                    f"{path.relative_to(REPO)}:{line}: {short(name)} imports {short(target)}"
                )
    assert wrong == [], "imports docs/architecture.md does not allow:\n" + "\n".join(wrong)


def test_the_allowed_imports_point_down_the_table() -> None:
    order = list(documented())
    late = []
    for position, (name, may) in enumerate(documented().items()):
        for target in may:
            if target in order and order.index(target) >= position:
                late.append(f"{name} may import {target}, listed at or below it")
    assert late == []


ENGINE_NAMES = {"rust", "python"}


def engine_uses(path: Path) -> list[str]:
    """Where a module reaches the Rust bindings or branches on the engine in use: an
    import of ``_native``, ``_engine.native``, ``implementation()`` compared, or anything
    compared with an engine's name (``engine == "rust"``, however ``engine`` was had)."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and "_native" in node.module:
            uses.append(f"{node.lineno}: imports {node.module}")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "_native" for a in node.names):
            uses.append(f"{node.lineno}: imports _native")
        elif isinstance(node, ast.Attribute) and node.attr == "native":
            uses.append(f"{node.lineno}: .native")
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                called = side.func if isinstance(side, ast.Call) else None
                if getattr(called, "attr", getattr(called, "id", None)) == "implementation":
                    uses.append(f"{node.lineno}: compares implementation()")
                if isinstance(side, ast.Constant) and side.value in ENGINE_NAMES:
                    uses.append(f"{node.lineno}: compares with {side.value!r}")
    return uses


def test_only_the_engine_package_reaches_the_bindings_or_branches_on_the_engine() -> None:
    wrong = []
    for name, path in sorted(package_modules().items()):
        if name == "agent_rollout._engine" or name.startswith("agent_rollout._engine."):
            continue
        wrong += [f"{path.relative_to(REPO)}:{use}" for use in engine_uses(path)]
    assert wrong == [], "only agent_rollout._engine may do this:\n" + "\n".join(wrong)


def test_the_engine_seam_check_sees_a_branch() -> None:
    found = engine_uses(PACKAGE / "_engine" / "jsonl.py")
    assert any("compares implementation()" in use for use in found)
    assert any(".native" in use for use in found)


MAX_MODULE_LINES = 700
"""A Python module's bound, in lines: past it, it holds more than one concern."""
MAX_RUST_CODE_LINES = 1200
"""A Rust file's bound, in lines of code (no blank or comment lines, tests apart)."""


def rust_code_lines(path: Path) -> int:
    count = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#[cfg(test)]"):
            break
        if line.strip() and not line.strip().startswith("//"):
            count += 1
    return count


def test_modules_of_one_concern_stay_within_their_bounds() -> None:
    big = {
        str(path.relative_to(REPO)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    rust = REPO / "rust"
    big |= {
        str(path.relative_to(REPO)): lines
        for path in (rust.rglob("*.rs") if rust.is_dir() else [])
        if (lines := rust_code_lines(path)) > MAX_RUST_CODE_LINES
    }
    assert big == {}, f"over {MAX_MODULE_LINES} lines (Python) or {MAX_RUST_CODE_LINES} (Rust)"
