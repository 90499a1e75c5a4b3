"""examples/train_grpo.py: TRL's ``GRPOTrainer`` takes two steps on agent_rollout's rows.

The script runs as a user would run it, in a subprocess of this interpreter: rows from
``launch_rollout``, Parquet from ``normalise_rollout_file``, a tiny random model and a
tokenizer built on the spot, two GRPO steps on the CPU. It needs torch and TRL with its
dependencies, which the project's ``.venv`` does not have (TRL's data utilities are installed
there without them), so there the tests skip, naming what is missing. They run in the venv of
``scripts/setup_train_venv.sh`` (docs/training.md):

    venv=$(scripts/setup_train_venv.sh)
    "$venv/bin/python" -m pytest tests/test_train_grpo.py -q -p no:cacheprovider
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "examples" / "train_grpo.py"
SEEDS = REPO / "python" / "agent_rollout" / "examples" / "prompts.jsonl"
NEEDED = ("torch", "trl", "transformers", "accelerate", "datasets", "tokenizers", "pyarrow")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]
TIMEOUT_S = 600  # a cold import of torch and TRL on a busy 2-core machine takes a while

pytestmark = [
    pytest.mark.skipif(
        not SCRIPT.exists(), reason="needs the source tree (examples/ does not ship)"
    ),
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs {', '.join(MISSING)} (torch and TRL with its dependencies; "
        "scripts/setup_train_venv.sh makes a venv with them)",
    ),
]


def run_example(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("AGENT_ROLLOUT_OPENENV_URL", None)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--output-dir", str(tmp_path / "run"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    print(done.stdout)
    print(done.stderr, file=sys.stderr)
    return done


def expected_answers() -> list[str | None]:
    import agent_rollout

    seeds = agent_rollout.read_rollout_jsonl(SEEDS)
    result = agent_rollout.launch_rollout(
        "openenv",
        prompts=list(seeds),
        rollout_func="agent_rollout.examples.openenv_rollout:offline_rollout",
    )
    return [row.get("answer") for row in result.rows]


def check_run(done: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    answers = expected_answers()
    assert f"-> {len(answers)} rows" in out
    assert f"parquet: {len(answers)} rows" in out
    assert f"answers {answers!r}" in out  # load_dataset read back what launch_rollout made

    table = pq.read_table(tmp_path / "run" / "rows.parquet")
    assert table.column_names == ["prompt", "answer"]
    assert table.column("answer").to_pylist() == answers
    first = table.column("prompt").to_pylist()[0]
    assert [message["role"] for message in first] == ["system", "user"]

    steps = re.findall(r"^step (\d+): loss (\S+), grad norm (\S+), reward mean (\S+)", out, re.M)
    assert [int(step) for step, *_ in steps] == [1, 2]
    for _, loss, grad_norm, reward in steps:
        assert all(float(value) == float(value) for value in (loss, grad_norm, reward))  # no NaN
        assert 0.0 <= float(reward) <= 1.0
    groups = re.findall(r"^  answer '([^']*)': rewards \[([^\]]*)\]", out, re.M)
    assert len(groups) == 4  # two steps, two prompts a step
    assert {answer for answer, _ in groups} <= {a for a in answers if a is not None}
    rewards = [float(r) for _, listed in groups for r in listed.split(", ")]
    assert len(rewards) == 16 and set(rewards) <= {0.0, 1.0}
    summary = re.search(r"^trained 2 steps in .*: 16 completions, (\d+) rewarded 1\.0", out, re.M)
    assert summary is not None and int(summary[1]) == sum(rewards)


def test_two_grpo_steps_on_offline_rows(tmp_path: Path) -> None:
    done = run_example(tmp_path)
    check_run(done, tmp_path)
    assert "offline_rollout" in done.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("openenv") is None, reason="openenv-core is not installed"
)
def test_two_grpo_steps_on_rows_from_the_drill_server(tmp_path: Path) -> None:
    done = run_example(tmp_path, "--online")
    check_run(done, tmp_path)
    assert "the OpenEnv drill server at http://127.0.0.1:" in done.stdout
