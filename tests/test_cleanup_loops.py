"""No loop in the package sits where an interrupt at its back edge skips cleanup.

CPython 3.11 and later look an exception's handler up by the instruction that
raised it. The jump that closes a loop checks for signals, and the compiler
does not always cover that jump by the handler of the ``try``, ``with`` or
``finally`` around the loop (a body ending in an ``if`` with no ``else``, a
``while`` loop; 3.12 lays such loops out alike, but looks the handler up after
the jump, where it is found). On 3.13 a Ctrl-C (or our SIGTERM's
``Terminated``) raised at such a jump leaves the function without its ``except BaseException``, its
``finally`` or its ``__exit__``: the CI run of 62b61de left a temporary file so
(``write_rows``; cpython#130279). The rule in docs/architecture.md ("Cleanup
around loops"): a loop inside a cleanup region goes in a function of its own.

Read from the source and compiled by the interpreter running the tests, so
every version CI runs checks its own compiler's layout.
"""

from __future__ import annotations

import ast
import dis
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "python" / "agent_rollout"

pytestmark = [
    pytest.mark.skipif(not PACKAGE.is_dir(), reason="needs the source tree"),
    pytest.mark.skipif(
        sys.version_info < (3, 11),
        reason="3.10 has no exception table: its block stack covers every jump",
    ),
]

Loop = tuple[str, int, int, str]
"""(qualified name of the function holding it, first line, last line, the region)."""


def _catches_interrupts(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        isinstance(name, ast.Name)
        and name.id in ("BaseException", "KeyboardInterrupt", "SystemExit")
        for name in names
    )


class _Finder(ast.NodeVisitor):
    """Loops directly inside a cleanup region of the same function."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.regions: list[str] = []
        self.loops: list[Loop] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scope.append(node.name)
        self.scope.append("<locals>")
        saved, self.regions = self.regions, []
        self.generic_visit(node)
        self.regions = saved
        del self.scope[-2:]

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        saved, self.regions = self.regions, []
        self.generic_visit(node)
        self.regions = saved
        self.scope.pop()

    def _region(self, node: ast.AST, what: str, inside: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if any(child is part for part in inside):
                self.regions.append(what)
                self.visit(child)
                self.regions.pop()
            else:
                self.visit(child)

    def visit_With(self, node: ast.With) -> None:
        self._region(node, f"with (line {node.lineno})", list(node.body))

    def visit_Try(self, node: ast.Try) -> None:
        if node.finalbody or any(_catches_interrupts(h) for h in node.handlers):
            self._region(node, f"try (line {node.lineno})", list(node.body))
        else:
            self.generic_visit(node)

    def _loop(self, node: ast.For | ast.While) -> None:
        if self.regions:
            qualname = ".".join(self.scope[:-1]) if self.scope else "<module>"
            assert node.end_lineno is not None
            self.loops.append((qualname, node.lineno, node.end_lineno, self.regions[-1]))
        self.generic_visit(node)

    visit_For = _loop  # type: ignore[assignment]
    visit_While = _loop  # type: ignore[assignment]


def loops_in_cleanup(tree: ast.AST) -> list[Loop]:
    finder = _Finder()
    finder.visit(tree)
    return finder.loops


def _code_objects(code: types.CodeType) -> dict[str, types.CodeType]:
    found = {code.co_qualname: code}  # type: ignore[attr-defined]  # 3.11+
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.update(_code_objects(const))
    return found


def uncovered_back_edges(code: types.CodeType) -> list[int]:
    """Lines of the loop-closing jumps (which check for signals) no handler covers."""
    listing = dis.Bytecode(code)
    entries = listing.exception_entries  # type: ignore[attr-defined]  # 3.11+
    return [
        ins.positions.lineno  # type: ignore[attr-defined]  # 3.11+
        for ins in listing
        if ins.opname == "JUMP_BACKWARD"
        and ins.positions is not None  # type: ignore[attr-defined]
        and ins.positions.lineno is not None  # type: ignore[attr-defined]
        and not any(entry.start <= ins.offset < entry.end for entry in entries)
    ]


def escaping_loops(source: str, filename: str) -> list[str]:
    """Each loop inside a cleanup region whose back edge no handler covers, as text."""
    tree = ast.parse(source, filename)
    codes = _code_objects(compile(tree, filename, "exec"))
    found = []
    for qualname, first, last, region in loops_in_cleanup(tree):
        code = codes[qualname]
        lines = [line for line in uncovered_back_edges(code) if first <= line <= last]
        if lines:
            found.append(
                f"{filename}:{first}: the loop in {qualname} inside a {region}: "
                f"an interrupt at its back edge (line {lines[0]}) skips the cleanup"
            )
    return found


def test_no_loop_in_the_package_escapes_its_cleanup() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += escaping_loops(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert found == []


WRITE_ROWS_BEFORE = """
def write_rows(rows, output, on_row):
    try:
        output.open()
        for count, row in enumerate(rows, start=1):
            output.write(row)
            if on_row is not None and count % 1024 == 0:
                on_row(count)
        output.commit()
    except BaseException:
        output.abandon()
        raise
"""


def test_the_check_finds_the_loop_ci_tripped_on() -> None:
    # write_rows as it was in 62b61de (reduced): on 3.12 and 3.13 the jump back
    # after the `if` is outside the handler.
    found = escaping_loops(WRITE_ROWS_BEFORE, "before.py")
    if sys.version_info >= (3, 12):
        assert len(found) == 1 and found[0].startswith("before.py:5: the loop in write_rows")
    # The shape the package uses now: the loop in a function of its own.
    after = WRITE_ROWS_BEFORE.replace(
        "        for count, row in enumerate(rows, start=1):\n"
        "            output.write(row)\n"
        "            if on_row is not None and count % 1024 == 0:\n"
        "                on_row(count)\n",
        "        write_each(rows, output, on_row)\n",
    )
    assert "write_each" in after
    assert escaping_loops(after, "after.py") == []


def test_a_loop_in_a_with_or_finally_is_found_and_one_outside_is_not() -> None:
    source = """
def inside(items, lock):
    with lock:
        while items:
            if items.pop():
                break
            items.pop()

def outside(items):
    while items:
        if items.pop():
            continue
"""
    loops = loops_in_cleanup(ast.parse(source))
    assert [(name, first) for name, first, _, _ in loops] == [("inside", 4)]
