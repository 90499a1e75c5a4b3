"""No loop in the package sits where an interrupt at its back edge skips cleanup.

CPython 3.11 and later look an exception's handler up by the instruction that
raised it. The jump that closes a loop checks for signals, and the compiler
does not always cover that jump by the handler of the ``try``, ``with`` or
``finally`` around the loop (a body ending in an ``if`` with no ``else``, a
``while`` loop, a comprehension). On 3.13 a Ctrl-C (or our SIGTERM's
``Terminated``) raised at such a jump leaves the function without its
``except BaseException``, its ``finally`` or its ``__exit__``: the CI run of
62b61de left a temporary file so (``write_rows``; cpython#130279). The rule in
docs/architecture.md ("Cleanup around loops"): such a loop goes in a function
of its own.

Read from the source and compiled by the interpreter running the tests, so
every version CI runs checks its own compiler's layout. 3.11 covers these
jumps, so the check finds nothing there. 3.12 lays them out as 3.13 does but
looks the handler up after the jump, where it is found: the check is strict
there, and exact on 3.13.
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
"""(qualified name of the code object holding it, first line, last line, the region)."""

INTERRUPTS = ("BaseException", "KeyboardInterrupt", "SystemExit")


def _catches_interrupts(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        (isinstance(name, ast.Name) and name.id in INTERRUPTS)
        or (isinstance(name, ast.Attribute) and name.attr in INTERRUPTS)
        for name in names
    )


class _Finder(ast.NodeVisitor):
    """Loops (comprehensions included: 3.12 and later inline them) inside a cleanup
    region of the same code object, with that code object's qualified name."""

    def __init__(self) -> None:
        self.code = "<module>"  # the qualified name of the code object being read
        self.prefix = ""  # what a definition here prefixes to its name
        self.regions: list[str] = []
        self.loops: list[Loop] = []

    def _new_code(self, node: ast.AST, name: str, nested: str) -> None:
        saved = self.code, self.prefix, self.regions
        self.code = self.prefix + name
        self.prefix, self.regions = self.code + nested, []
        self.generic_visit(node)
        self.code, self.prefix, self.regions = saved

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._new_code(node, node.name, ".<locals>.")

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._new_code(node, "<lambda>", ".<locals>.")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._new_code(node, node.name, ".")

    def _region(self, node: ast.AST, what: str, inside: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if any(child is part for part in inside):
                self.regions.append(what)
                self.visit(child)
                self.regions.pop()
            else:
                self.visit(child)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        self._region(node, f"with (line {node.lineno})", list(node.body))

    visit_AsyncWith = visit_With  # type: ignore[assignment]

    def visit_Try(self, node: ast.Try) -> None:
        protected: list[ast.AST] = list(node.body)
        if node.finalbody:  # a finally covers the handlers and the else as well
            protected += [*node.handlers, *node.orelse]
        if node.finalbody or any(_catches_interrupts(h) for h in node.handlers):
            self._region(node, f"try (line {node.lineno})", protected)
        else:
            self.generic_visit(node)

    visit_TryStar = visit_Try

    def _loop(self, node: ast.AST) -> None:
        if self.regions:
            first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", None) or 0
            self.loops.append((self.code, first, last, self.regions[-1]))
        self.generic_visit(node)

    visit_For = visit_AsyncFor = visit_While = _loop
    visit_ListComp = visit_SetComp = visit_DictComp = _loop

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        # A generator expression runs in a frame of its own, outside the region.
        self._new_code(node, "<genexpr>", ".<locals>.")


def loops_in_cleanup(tree: ast.AST) -> list[Loop]:
    finder = _Finder()
    finder.visit(tree)
    return finder.loops


def _code_objects(code: types.CodeType) -> dict[str, list[types.CodeType]]:
    """Every code object by qualified name (two functions may share one)."""
    found: dict[str, list[types.CodeType]] = {}
    todo = [code]
    while todo:
        each = todo.pop()
        found.setdefault(each.co_qualname, []).append(each)  # type: ignore[attr-defined]
        todo += [const for const in each.co_consts if isinstance(const, types.CodeType)]
    return found


def uncovered_back_edges(code: types.CodeType) -> list[int]:
    """Lines of the loop-closing jumps (which check for signals) no handler covers; a
    jump with no line of its own counts on the line of the loop head it jumps to."""
    bytecode = dis.Bytecode(code)
    listing = list(bytecode)
    entries = bytecode.exception_entries  # type: ignore[attr-defined]  # 3.11+
    line_at: dict[int, int] = {}
    line = code.co_firstlineno
    for ins in listing:
        line = ins.positions.lineno or line  # type: ignore[attr-defined]  # 3.11+
        line_at[ins.offset] = line
    return [
        ins.positions.lineno or line_at[ins.argval]  # type: ignore[attr-defined]
        for ins in listing
        if ins.opname == "JUMP_BACKWARD"
        and not any(entry.start <= ins.offset < entry.end for entry in entries)
    ]


def escaping_loops(source: str, filename: str) -> list[str]:
    """Each loop inside a cleanup region whose back edge no handler covers, as text."""
    tree = ast.parse(source, filename)
    codes = _code_objects(compile(tree, filename, "exec"))
    found = []
    for qualname, first, last, region in loops_in_cleanup(tree):
        # KeyError: the finder named a code object the compiler did not make.
        edges = [line for code in codes[qualname] for line in uncovered_back_edges(code)]
        lines = [line for line in edges if first <= line <= last]
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


# Each a loop whose body ends in an ``if`` with no ``else``, whose closing jump 3.12
# and 3.13 leave outside the handler, in a place the check must look.
SHAPES = {
    "a loop in a class body": """
class Holder:
    try:
        for item in ITEMS:
            if item:
                note(item)
    finally:
        pass
""",
    "a loop in a property setter (its getter has the same name)": """
class Holder:
    @property
    def value(self):
        return 1

    @value.setter
    def value(self, flag):
        with LOCK:
            for item in ITEMS:
                if item:
                    note(item)
""",
    "a loop in a handler of a try with finally": """
def work():
    try:
        pass
    except ValueError:
        for item in ITEMS:
            if item:
                note(item)
    finally:
        pass
""",
    "a loop in the else of a try with finally": """
def work():
    try:
        pass
    except ValueError:
        pass
    else:
        for item in ITEMS:
            if item:
                note(item)
    finally:
        pass
""",
    "a loop in an except builtins.BaseException": """
def work():
    try:
        for item in ITEMS:
            if item:
                note(item)
    except builtins.BaseException:
        raise
""",
    "a loop in an async with": """
async def work():
    async with LOCK:
        for item in ITEMS:
            if item:
                note(item)
""",
    "a list comprehension in a try with finally": """
def work():
    try:
        return [item for item in ITEMS if item]
    finally:
        pass
""",
}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.11 lays these loops out covered")
@pytest.mark.parametrize("shape", SHAPES)
def test_the_check_finds_each_shape(shape: str) -> None:
    found = escaping_loops(SHAPES[shape], "shape.py")
    assert len(found) == 1, found
