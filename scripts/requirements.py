"""Print the requirements of this project and some of its extras, for `uv pip install -r`.

    python scripts/requirements.py EXTRA...       (e.g. `openenv`, `dev`)

Extras that name the project itself (``agent-rollout[test,art]``) are expanded, so
the dependencies can be installed without building the project (the Makefile
then builds it once, with ``maturin develop``). Standard library only (``tomli``
on Python 3.10, where it is a dependency of the build anyway).
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


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(requirements(root / "pyproject.toml", sys.argv[1:])))
