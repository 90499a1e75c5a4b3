"""PEP 517 build backend of agent-rollout: maturin, plus two things maturin does not do.

1. Before a wheel is built from source it checks that a Rust toolchain can be
   had: ``cargo`` on ``PATH``, or (as maturin would) a toolchain that can be
   downloaded from static.rust-lang.org. When neither holds, the build stops
   with one line that names the pure-Python wheel, instead of the traceback a
   failed toolchain download ends in.
2. It builds the pure-Python wheel (``py3-none-any``: the package without its
   Rust engine) with the standard library alone, no Rust needed::

       pip wheel . --no-deps --wheel-dir dist --config-settings pure=true

   (``AGENT_ROLLOUT_PURE_WHEEL=1`` in the environment does the same, also for
   ``pip install`` of the sdist.) The wheel carries a marker file,
   ``agent_rollout/_pure_python_wheel``, so the package knows it was installed
   without an engine on purpose and does not warn.

Everything else (sdists, platform wheels, editable installs) is maturin's own
backend, unchanged. Run as a script, ``python build_backend/agent_rollout_build.py
pure-metadata`` prints the pure wheel's METADATA (CI compares it with maturin's).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import maturin

# maturin warns on every build that pyproject.toml's build-backend is not "maturin", "so
# pip will not use maturin": not so here, this backend hands every Rust build to maturin.
# Builds through this backend (pip, uv, python -m build) set the documented switch here;
# the direct `maturin develop`/`maturin build` calls (Makefile, scripts/build_wheels.sh,
# the release workflow) set it in their environment.
os.environ.setdefault("MATURIN_NO_MISSING_BUILD_BACKEND_WARNING", "1")

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PURE_ENV = "AGENT_ROLLOUT_PURE_WHEEL"
PURE_MARKER = "_pure_python_wheel"
PACKAGE = "agent_rollout"
RUST_DIST_SERVER = "https://static.rust-lang.org/rustup/release-stable.toml"

_MARKER_TEXT = (
    "This file marks the pure-Python wheel of agent-rollout (py3-none-any). It ships\n"
    "no Rust engine, so agent_rollout uses its pure-Python engine and does not warn.\n"
)
_TRUE = {"1", "true", "yes", "on"}


# ---- which wheel --------------------------------------------------------------------


def _wants_pure(config_settings: Mapping[str, Any] | None) -> bool:
    setting = (config_settings or {}).get("pure")
    if isinstance(setting, list):  # pip passes repeated settings as a list
        setting = setting[-1] if setting else None
    if setting is not None:
        return str(setting).strip().lower() in _TRUE
    return os.environ.get(PURE_ENV, "").strip().lower() in _TRUE


def _rust_can_be_had() -> str | None:
    """None when a Rust build can go ahead, else why it cannot (for the one-line message)."""
    if shutil.which("cargo"):
        return None
    if os.environ.get("MATURIN_NO_INSTALL_RUST"):
        return "`cargo` is not on PATH and MATURIN_NO_INSTALL_RUST forbids downloading Rust"
    # maturin would download a toolchain from here; see whether it can (proxies honoured).
    import urllib.request

    try:
        request = urllib.request.Request(RUST_DIST_SERVER, method="HEAD")
        with urllib.request.urlopen(request, timeout=10):
            return None
    except OSError:
        return "`cargo` is not on PATH and https://static.rust-lang.org cannot be reached"


def _need_rust() -> None:
    why = _rust_can_be_had()
    if why is not None:
        version = _project()["version"]
        # SystemExit with a str: the build frontend shows this one line, no traceback.
        raise SystemExit(
            f"agent-rollout: cannot build the Rust engine from source ({why}); install the "
            f"pure-Python wheel instead (agent_rollout-{version}-py3-none-any.whl: "
            f"pip install --only-binary=agent-rollout agent-rollout), or set {PURE_ENV}=1 "
            "to build it from this source, or install Rust from https://rustup.rs"
        )


# ---- PEP 517 hooks --------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    if _wants_pure(config_settings):
        return []
    _need_rust()
    return list(maturin.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    _need_rust()
    return list(maturin.get_requires_for_build_editable(config_settings))


def get_requires_for_build_sdist(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    return list(maturin.get_requires_for_build_sdist(config_settings))


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    if _wants_pure(config_settings):
        return _write_dist_info(Path(metadata_directory), _project())
    _need_rust()
    return str(maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    _need_rust()
    return str(maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings))


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    if _wants_pure(config_settings):
        return _build_pure_wheel(Path(wheel_directory))
    _need_rust()
    return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _need_rust()
    return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: Mapping[str, Any] | None = None) -> str:
    return str(maturin.build_sdist(sdist_directory, config_settings))


# ---- the pure-Python wheel -----------------------------------------------------------


def _project() -> dict[str, Any]:
    """pyproject's [project] table, with the version filled in from Cargo.toml."""
    with open("pyproject.toml", "rb") as f:
        pyproject = tomllib.load(f)
    project = dict(pyproject["project"])
    if "version" not in project:
        with open("Cargo.toml", "rb") as f:
            project["version"] = tomllib.load(f)["package"]["version"]
    project["_python_source"] = pyproject.get("tool", {}).get("maturin", {}).get("python-source")
    return project


def _extra_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _with_extra(requirement: str, extra: str) -> str:
    spec, _, marker = requirement.partition(";")
    spec, marker = spec.strip(), marker.strip()
    if marker:
        return f'{spec} ; ({marker}) and extra == "{extra}"'
    return f'{spec} ; extra == "{extra}"'


def metadata_text(project: Mapping[str, Any]) -> str:
    """Core metadata 2.4 for the pure wheel, from the same [project] table maturin reads."""
    lines = [
        "Metadata-Version: 2.4",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {r}" for r in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines += [f"Requires-Dist: {_with_extra(r, _extra_name(extra))}" for r in requirements]
    lines += [f"Provides-Extra: {_extra_name(e)}" for e in project.get("optional-dependencies", {})]
    lines.append(f"Summary: {project['description']}")
    if project.get("keywords"):
        lines.append(f"Keywords: {','.join(project['keywords'])}")
    names = [a["name"] for a in project.get("authors", []) if "name" in a and "email" not in a]
    if names:
        lines.append(f"Author: {', '.join(names)}")
    emails = [
        f"{a['name']} <{a['email']}>" if "name" in a else a["email"]
        for a in project.get("authors", [])
        if "email" in a
    ]
    if emails:
        lines.append(f"Author-email: {', '.join(emails)}")
    lines.append(f"License-Expression: {project['license']}")
    lines += [f"License-File: {name}" for name in project.get("license-files", [])]
    lines.append(f"Requires-Python: {project['requires-python']}")
    readme = project["readme"]
    lines.append("Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM")
    lines += [f"Project-URL: {label}, {url}" for label, url in project.get("urls", {}).items()]
    body = Path(readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _dist_info_name(project: Mapping[str, Any]) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"


def _dist_info_files(project: Mapping[str, Any]) -> Iterator[tuple[str, bytes]]:
    """(name inside the .dist-info directory, content), RECORD excepted."""
    yield "METADATA", metadata_text(project).encode("utf-8")
    yield (
        "WHEEL",
        (
            b"Wheel-Version: 1.0\n"
            b"Generator: agent_rollout_build (pure-Python wheel)\n"
            b"Root-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    )
    scripts = project.get("scripts", {})
    if scripts:
        entries = "".join(f"{name} = {target}\n" for name, target in scripts.items())
        yield "entry_points.txt", f"[console_scripts]\n{entries}".encode()
    for name in project.get("license-files", []):
        yield f"licenses/{name}", Path(name).read_bytes()


def _write_dist_info(directory: Path, project: Mapping[str, Any]) -> str:
    name = _dist_info_name(project)
    for relative, content in _dist_info_files(project):
        target = directory / name / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return name


def _package_files(project: Mapping[str, Any]) -> Iterator[tuple[str, Path]]:
    """(archive name, source path) of every file of the package, minus the native engine."""
    root = Path(project["_python_source"] or ".")
    for path in sorted((root / PACKAGE).rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        if relative.parent == Path(PACKAGE) and path.name.startswith("_native"):
            continue  # the Rust engine (and its stub) is what this wheel leaves out
        if relative == Path(PACKAGE, PURE_MARKER):
            continue  # written below; never taken from the tree
        yield relative.as_posix(), path


def _build_pure_wheel(wheel_directory: Path) -> str:
    project = _project()
    dist_name = project["name"].replace("-", "_")
    filename = f"{dist_name}-{project['version']}-py3-none-any.whl"
    dist_info = _dist_info_name(project)
    entries: list[tuple[str, bytes]] = [
        (name, path.read_bytes()) for name, path in _package_files(project)
    ]
    entries.append((f"{PACKAGE}/{PURE_MARKER}", _MARKER_TEXT.encode()))
    entries += [(f"{dist_info}/{name}", data) for name, data in _dist_info_files(project)]
    record = []
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))

    wheel_directory.mkdir(parents=True, exist_ok=True)
    partial = wheel_directory / f".{filename}.partial"
    # A fixed timestamp (the zip format's earliest) keeps the wheel reproducible.
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(partial, wheel_directory / filename)
    return filename


if __name__ == "__main__":
    if sys.argv[1:] == ["pure-metadata"]:
        sys.stdout.write(metadata_text(_project()))
    else:
        sys.exit(f"usage: {sys.argv[0]} pure-metadata")
