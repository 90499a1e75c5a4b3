#!/usr/bin/env python3
"""Write tests/data/trainer_keys.json: the config keys of real trainers.

The keys come from the released packages' own source, read with ``ast`` (no
import, so no torch): each package is fetched with ``pip download --no-deps``
at the pinned version below and its wheel is read as a zip file.

- TRL: the fields of ``GRPOConfig`` (its own, not the inherited
  ``transformers.TrainingArguments`` ones);
- OpenRLHF: every long option of its training command lines
  (``openrlhf/cli/train_*.py``), under its argparse name; 0.8 spells them
  ``--rollout_batch_size``, 0.11 ``--rollout.batch_size``, so both are read;
- verl: the fields of the dataclasses in ``verl/workers/config/rollout.py``
  (``actor_rollout_ref.rollout.*``); as a harder case, ``derived_keys`` holds
  the same names prefixed ``rollout_`` (how a flat config would spell them;
  not keys verl itself reads);
- axolotl: the fields of every pydantic model in ``axolotl/utils/schemas/``
  (its config is one model composed of these);
- soup-cli: the fields of ``TrainingConfig`` (the ``training:`` section).

Run ``python scripts/gen_trainer_keys.py`` (network: PyPI) and commit the
output; ``tests/test_trainer_keys.py`` checks that none of these keys is
flagged as a look-alike of ours.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "trainer_keys.json"

# name -> (pip requirement, {what: (path filter, extractor, argument)})
PACKAGES = {
    "trl": "trl==1.16.0",
    "openrlhf": "openrlhf==0.11.2",
    "openrlhf-0.8": "openrlhf==0.8.11",
    "verl": "verl==0.9.1",
    "axolotl": "axolotl==0.19.0",
    "soup-cli": "soup-cli==0.77.0",
}


def class_fields(tree: ast.Module, wanted: set[str] | None) -> Iterator[tuple[str, str]]:
    """(class name, field name) for annotated class-body names, skipping ClassVar and private."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if wanted is not None and node.name not in wanted:
            continue
        for item in node.body:
            if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
                continue
            name = item.target.id
            if name.startswith("_") or "ClassVar" in ast.unparse(item.annotation):
                continue
            if name in ("model_config",):
                continue
            yield node.name, name


def argparse_options(tree: ast.Module) -> Iterator[str]:
    """The argparse name of every ``add_argument("--long-option", ...)`` call."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.startswith("--"):
                    yield arg.value[2:].replace("-", "_")
                    break


def sources(wheel: Path, suffix_filter: str) -> Iterator[tuple[str, ast.Module]]:
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            short = name.split("purelib/", 1)[-1]
            if short.endswith(".py") and short.startswith(suffix_filter):
                yield short, ast.parse(archive.read(name).decode("utf-8"), filename=short)


def download(requirement: str, into: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-q",
            "-d",
            str(into),
            requirement,
        ],
        check=True,
    )
    [wheel] = into.glob("*.whl")
    return wheel


def collect(name: str, wheel: Path) -> tuple[list[str], list[str], list[str]]:
    keys: set[str] = set()
    derived: set[str] = set()
    read: list[str] = []
    if name == "trl":
        for path, tree in sources(wheel, "trl/trainer/grpo_config.py"):
            read.append(path)
            keys.update(field for _, field in class_fields(tree, {"GRPOConfig"}))
    elif name.startswith("openrlhf"):
        for path, tree in sources(wheel, "openrlhf/cli/train_"):
            read.append(path)
            keys.update(argparse_options(tree))
    elif name == "verl":
        for path, tree in sources(wheel, "verl/workers/config/rollout.py"):
            read.append(path)
            fields = {field for _, field in class_fields(tree, None)}
            keys.update(fields)
            derived.update(f"rollout_{field}" for field in fields)
    elif name == "axolotl":
        for path, tree in sources(wheel, "axolotl/utils/schemas/"):
            read.append(path)
            keys.update(field for _, field in class_fields(tree, None))
    elif name == "soup-cli":
        for path, tree in sources(wheel, "soup_cli/config/schema.py"):
            read.append(path)
            keys.update(field for _, field in class_fields(tree, {"TrainingConfig"}))
    return sorted(keys), sorted(derived), read


def main() -> int:
    corpus: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, requirement in PACKAGES.items():
            folder = Path(tmp) / name
            folder.mkdir()
            wheel = download(requirement, folder)
            keys, derived, read = collect(name, wheel)
            if not keys:
                raise SystemExit(f"{name}: no keys found in {wheel.name}; the layout changed?")
            entry = {"package": requirement, "wheel": wheel.name, "read": read, "keys": keys}
            if derived:
                entry["derived_keys"] = derived
            corpus[name] = entry
            extra = f" (+{len(derived)} derived)" if derived else ""
            print(f"{name:14} {requirement:20} {len(keys):5} keys{extra} from {len(read)} files")
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(corpus, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
