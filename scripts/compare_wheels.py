"""Check that the pure-Python wheel is the platform wheel minus the Rust engine.

    python scripts/compare_wheels.py PLATFORM_WHEEL PURE_WHEEL

The pure wheel is written by build_backend/agent_rollout_build.py, the platform
wheel by maturin, from the same pyproject.toml. This compares what a user
gets: the same metadata fields (requirements compared as parsed requirements,
since the two tools spell markers differently), the same entry points and
license files, and the same package files with identical contents, except
``agent_rollout/_native*`` (platform wheel only), the pure wheel's marker
``agent_rollout/_pure_python_wheel`` and maturin's SBOM. Exits 1 with the
differences listed. Needs ``packaging``.
"""

from __future__ import annotations

import configparser
import sys
import zipfile
from collections import Counter
from email.parser import HeaderParser
from pathlib import PurePosixPath

from packaging.requirements import Requirement

PURE_ONLY = {"agent_rollout/_pure_python_wheel"}


def dist_info(names: list[str]) -> str:
    (found,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    return found


def metadata(archive: zipfile.ZipFile) -> tuple[Counter, str]:
    text = archive.read(f"{dist_info(archive.namelist())}/METADATA").decode("utf-8")
    message = HeaderParser().parsestr(text)
    fields: Counter = Counter()
    for key, value in message.items():
        if key == "Requires-Dist":
            value = str(Requirement(value))
        fields[(key, value.strip())] += 1
    body = message.get_payload()
    return fields, body.strip() if isinstance(body, str) else ""


def entry_points(archive: zipfile.ZipFile) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser()
    parser.read_string(archive.read(f"{dist_info(archive.namelist())}/entry_points.txt").decode())
    return {s: {k: v.replace(" ", "") for k, v in parser[s].items()} for s in parser.sections()}


def payload(archive: zipfile.ZipFile) -> dict[str, bytes]:
    """Package files and license files, keyed by name with the dist-info prefix dropped."""
    info = dist_info(archive.namelist())
    out = {}
    for name in archive.namelist():
        path = PurePosixPath(name)
        if name.endswith("/"):
            continue
        if path.parts[0] == info:
            if path.parts[1] != "licenses":
                continue  # METADATA, WHEEL, RECORD, entry points, SBOM: compared apart or not
            name = "/".join(("<dist-info>", *path.parts[1:]))
        elif path.parts[0] == "agent_rollout" and path.name.startswith("_native"):
            continue
        out[name] = archive.read(path.as_posix())
    return out


def main() -> int:
    platform_path, pure_path = sys.argv[1:3]
    problems = []
    with zipfile.ZipFile(platform_path) as platform, zipfile.ZipFile(pure_path) as pure:
        if not any(n.startswith("agent_rollout/_native") for n in platform.namelist()):
            problems.append(f"{platform_path} holds no agent_rollout/_native*")
        if any(n.startswith("agent_rollout/_native") for n in pure.namelist()):
            problems.append(f"{pure_path} holds agent_rollout/_native*")
        (fields_a, body_a), (fields_b, body_b) = metadata(platform), metadata(pure)
        for key, value in sorted((fields_a - fields_b).elements()):
            problems.append(f"METADATA only in the platform wheel: {key}: {value}")
        for key, value in sorted((fields_b - fields_a).elements()):
            problems.append(f"METADATA only in the pure wheel: {key}: {value}")
        if body_a != body_b:
            problems.append("METADATA descriptions (the README) differ")
        if entry_points(platform) != entry_points(pure):
            problems.append(f"entry points differ: {entry_points(platform)} {entry_points(pure)}")
        files_a, files_b = payload(platform), payload(pure)
        for name in sorted(set(files_a) - set(files_b)):
            problems.append(f"only in the platform wheel: {name}")
        for name in sorted(set(files_b) - set(files_a) - PURE_ONLY):
            problems.append(f"only in the pure wheel: {name}")
        for name in sorted(set(files_a) & set(files_b)):
            if files_a[name] != files_b[name]:
                problems.append(f"contents differ: {name}")
        for name in sorted(PURE_ONLY - set(files_b)):
            problems.append(f"the pure wheel lacks its marker {name}")
    for line in problems:
        print(f"compare_wheels: {line}", file=sys.stderr)
    if not problems:
        shared = len(set(files_a) & set(files_b))
        print(f"compare_wheels: same metadata, entry points and {shared} files; pure wheel OK")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
