"""Whole-process time of `agent-rollout check` against check-jsonschema.

Both tools check the same YAML training configs, one file and 100 files per
call; runs alternate between the tools so that machine noise hits both alike.
Run it on purpose (it is not a test):

    pip install check-jsonschema
    python benches/bench_check.py [--runs 15]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "schema" / "training-config.schema.json"

# The parser cli.py builds, for a checkout where the entry point is not there yet.
HARNESS = """
import argparse, sys
from importlib import import_module
parser = argparse.ArgumentParser(prog="agent-rollout")
commands = parser.add_subparsers(dest="command", required=True)
module = import_module("agent_rollout._cmd_check")
sub = commands.add_parser("check")
module.add_arguments(sub)
args = parser.parse_args()
sys.exit(module.run(args))
"""

CONFIG = """\
# GRPO run {index}
model:
  name: Qwen/Qwen2.5-0.5B-Instruct
  dtype: bfloat16
data:
  train: data/train-{index}.jsonl
  max_length: 2048
training:
  learning_rate: 1.0e-6
  epochs: 1
  per_device_batch_size: 4
  gradient_accumulation_steps: 8
  warmup_ratio: 0.05
  lr_scheduler: cosine
  seed: {index}
  logging_steps: 10
  save_steps: 500
  beta: 0.04
  num_generations: 8
  rollout_backend: {backend}
  rollout_func: my_project.rollouts:play_episode
  rollout_max_steps: 32
  rollout_group_size: 8{extra}
output_dir: runs/{index}
"""


def our_command() -> list[str]:
    script = shutil.which("agent-rollout", path=str(Path(sys.executable).parent))
    script = script or shutil.which("agent-rollout")
    if script:
        return [script, "check"]
    if importlib.util.find_spec("agent_rollout.cli") and importlib.util.find_spec(
        "agent_rollout.__main__"
    ):
        return [sys.executable, "-m", "agent_rollout", "check"]
    return [sys.executable, "-c", HARNESS, "check"]


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace")[:2000]
        raise SystemExit(f"{command[0]} failed ({done.returncode}):\n{output}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per tool and case")
    options = parser.parse_args()
    # The one installed beside this interpreter first (a venv run without activating it).
    theirs = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    theirs = theirs or shutil.which("check-jsonschema")
    if theirs is None:
        raise SystemExit("check-jsonschema is not installed: pip install check-jsonschema")
    theirs_env = dict(os.environ)
    ours = our_command()
    with tempfile.TemporaryDirectory() as tmp:
        # Both tools' processes read compiled bytecode, as a user's do: with
        # PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) every
        # call would compile every module it imports, and the warm-up below
        # would warm nothing. The bytecode goes to a cache of the run's own
        # unless one is set (an empty value counts as none, as for Python),
        # never beside the sources.
        if theirs_env.pop("PYTHONDONTWRITEBYTECODE", ""):
            print("PYTHONDONTWRITEBYTECODE is cleared for both tools' processes")
        if not theirs_env.get("PYTHONPYCACHEPREFIX"):
            theirs_env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        print(f"bytecode cache: {theirs_env['PYTHONPYCACHEPREFIX']}")
        # Ours runs this checkout's package, whichever command starts it.
        env = dict(theirs_env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(REPO / "python"), env.get("PYTHONPATH")])
        )
        files = []
        for index in range(100):
            path = Path(tmp) / f"config-{index:03d}.yaml"
            backend = ("art", "ruler")[index % 2]
            extra = "\n  rollout_judge_model: openai/o4-mini" if backend == "ruler" else ""
            text = CONFIG.format(index=index, backend=backend, extra=extra)
            path.write_text(text, encoding="utf-8")
            files.append(str(path))
        shown = [ours[0], "-c", "<harness>", "check"] if "-c" in ours else ours
        print(f"ours:   {' '.join(shown)} (agent_rollout from {REPO / 'python'})")
        print(f"theirs: {theirs} --schemafile {SCHEMA.relative_to(REPO)}")
        print(f"{options.runs} runs each, alternating; median (min) wall time per call\n")
        print(f"{'files':>5}  {'agent-rollout':>16}  {'check-jsonschema':>18}  {'ratio':>6}")
        for count in (1, 100):
            batch = files[:count]
            mine: list[float] = []
            other: list[float] = []
            timed([*ours, *batch], env)  # warm the file cache and .pyc files once
            timed([theirs, "--schemafile", str(SCHEMA), *batch], theirs_env)
            for _ in range(options.runs):
                mine.append(timed([*ours, *batch], env))
                other.append(timed([theirs, "--schemafile", str(SCHEMA), *batch], theirs_env))
            a, b = statistics.median(mine), statistics.median(other)
            print(
                f"{count:>5}  {a * 1000:>8.0f} ms ({min(mine) * 1000:.0f})"
                f"  {b * 1000:>10.0f} ms ({min(other) * 1000:.0f})  {b / a:>5.2f}x"
            )
        print("\nratio = check-jsonschema time / agent-rollout time (above 1: we are faster)")


if __name__ == "__main__":
    main()
