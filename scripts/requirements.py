"""The packages each make target installs.

    python scripts/requirements.py EXTRA...       (e.g. `openenv`, `dev`)
    uv pip freeze | python scripts/requirements.py --changed BEFORE -

The first form prints the requirements of this project and of those extras, for
`uv pip install -r`. Extras that name the project itself (``agent-rollout[test,art]``)
are expanded, so the dependencies can be installed without building the project (the
Makefile then builds it once, with ``maturin develop``).

The second compares two ``pip freeze`` listings (``-`` is standard input) and names each
package the install between them changed or removed: the Makefile says so after it puts
the development set into a ``.venv`` that had the demo's packages, rather than change
them unseen. Standard library only (``tomli`` on Python 3.10, where it is a dependency of
the build anyway).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


def requirements(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    own = re.compile(rf"{re.escape(project['name'])}\[([^\]]+)\]")
    table = project.get("optional-dependencies", {})
    out = list(project.get("dependencies", []))
    seen: set[str] = set()
    todo = list(extras)
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        if extra not in table:
            raise SystemExit(f"requirements.py: no extra {extra!r} in {pyproject}")
        seen.add(extra)
        for requirement in table[extra]:
            match = own.fullmatch(requirement.strip())
            if match:
                todo.extend(part.strip() for part in match.group(1).split(","))
            else:
                out.append(requirement)
    return list(dict.fromkeys(out))


def pinned(freeze: str) -> dict[str, str]:
    """``name==version`` lines of a ``pip freeze`` listing, by normalised name (editable and
    URL installs have no version to compare, and are left out)."""
    found = {}
    for line in freeze.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and not name.startswith(("#", "-")):
            found[re.sub(r"[-_.]+", "-", name).lower()] = version
    return found


def changed(before: str, after: str) -> list[str]:
    """``name old -> new`` (or ``name old -> removed``) for each package of ``before``
    that ``after`` has at another version or not at all, by name."""
    old, new = pinned(before), pinned(after)
    return [
        f"{name} {version} -> {new.get(name, 'removed')}"
        for name, version in sorted(old.items())
        if new.get(name) != version
    ]


def _read(path: str) -> str:
    return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    if sys.argv[1:2] == ["--changed"]:
        if len(sys.argv) != 4:
            raise SystemExit("usage: requirements.py --changed BEFORE AFTER  (- for stdin)")
        lines = changed(_read(sys.argv[2]), _read(sys.argv[3]))
        if lines:
            print(
                f"== the development set changed {len(lines)} package(s) already in .venv"
                " (its own requirements rule their versions out):"
            )
            print("\n".join(f"   {line}" for line in lines))
    else:
        print("\n".join(requirements(root / "pyproject.toml", sys.argv[1:])))
