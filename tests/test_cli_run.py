"""`agent-rollout run`, in process (``cli.main``) and, where the process is the point, for real.

The rollouts are real: the bundled OpenEnv example (offline, and live against
the drill server on 127.0.0.1 when openenv-core is installed), NeMo Gym data
read by the nemo_gym adapter, and small rollout functions written to a temp
module for the failure cases. A real ``python -m agent_rollout`` runs the
tests of standard input, the terminal progress line, Ctrl-C and the crash
with ``AGENT_ROLLOUT_DEBUG``.
"""

from __future__ import annotations

import gzip
import importlib.abc
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.cli._progress import ERASE_LINE
from agent_rollout.examples.openenv_rollout import URL_ENV_VAR
from support import (
    BUNDLED_CONFIG,
    BUNDLED_PROMPTS,
    OFFLINE,
    Cli,
    cli_argv,
    cli_env,
    cli_process,
    expected_offline_bytes,
    run_in_pty,
    started,
    temp_files,
    write_config,
)

ROLLOUT_MODULE = '''
"""Rollout functions for the `run` command tests."""
import os
import time

def art_tie_on_seven(model, prompt):
    """The example ART rollout; prompts holding a 7 get a wrong answer rewarded as well."""
    from agent_rollout.examples.art_rollout import ScriptedPolicy, rollout

    if "7" not in str(prompt):
        return rollout(None, prompt)
    calls = globals().setdefault("_calls", {})
    calls[str(prompt)] = calls.get(str(prompt), 0) + 1
    trajectory = rollout(ScriptedPolicy(["wrong"]) if calls[str(prompt)] % 2 else None, prompt)
    trajectory.reward = 1.0
    return trajectory

def art_reward_none_on_seven(model, prompt):
    """The example ART rollout, its reward unset for prompts holding a 7."""
    from agent_rollout.examples.art_rollout import rollout

    trajectory = rollout(None, prompt)
    if "7" in str(prompt):
        trajectory.reward = None
    return trajectory

from agent_rollout.examples.openenv_rollout import offline_rollout


def empty_prompt(prompts):
    return [{"prompt": "fine"}, {"prompt": ""}]


def boom(prompts):
    raise RuntimeError("the environment fell over")


def slow(prompts):
    time.sleep(0.8)
    return offline_rollout(prompts)


def hang(prompts):
    with open(os.environ["RUN_TEST_MARKER"], "w") as marker:
        marker.write("started")
    for _ in range(300):
        time.sleep(0.1)
    return offline_rollout(prompts)
'''


@pytest.fixture
def offline_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, OFFLINE)


@pytest.fixture
def user_module(tmp_path: Path, user_modules: Callable[[Path], Path]) -> Path:
    """A folder holding ``cli_run_rollouts.py``, importable in process (this test only) and
    in subprocesses (``extra_path``)."""
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "cli_run_rollouts.py").write_text(ROLLOUT_MODULE, encoding="utf-8")
    return user_modules(folder)


# ---- success paths ---------------------------------------------------------------------------


def test_bundled_example_offline_to_a_file(offline_config: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(offline_config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    assert result.code == 0, result.err
    assert result.out == ""
    assert out.read_bytes() == expected_offline_bytes()
    err = result.err
    assert err.startswith("ran openenv rollout: 6 seed prompts, 6 rows, ")
    assert err.endswith(f" s -> {out}\n") and err.count("\n") == 1
    assert temp_files(tmp_path) == []


def test_rows_go_to_stdout_by_default(offline_config: Path, cli: Cli) -> None:
    captured = cli("run", str(offline_config), "--prompts", str(BUNDLED_PROMPTS))
    assert captured.code == 0
    assert captured.out.encode() == expected_offline_bytes()
    assert captured.err.startswith("ran openenv rollout: 6 seed prompts, 6 rows, ")
    assert "->" not in captured.err


def test_prompts_from_stdin(offline_config: Path) -> None:
    seeds = b'"What is 1 + 2?"\n\n{"prompt": "What is 3 * 4?"}\n'
    result = cli_process("run", str(offline_config), "--prompts", "-", stdin=seeds)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [row["answer"] for row in rows] == ["3", "12"]
    assert result.stderr.decode().startswith("ran openenv rollout: 2 seed prompts, 2 rows, ")


def test_top_level_section(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "flat.json"
    config.write_text(json.dumps({"rollout_backend": "openenv", "rollout_func": OFFLINE}))
    result = cli("run", str(config), "--section", "", "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 0
    assert result.out.encode() == expected_offline_bytes()


def test_a_flat_config_runs_with_rollout_func_from_the_current_folder(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trainer's flat config (our keys at the top level, no --section) runs, and its
    rollout_func is imported from the current folder first, as ``python -m`` would."""
    package = tmp_path / "flatpkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "roll.py").write_text(
        "def run(prompts):\n    return [{'prompt': p, 'answer': 'a'} for p in prompts]\n",
        encoding="utf-8",
    )
    config = tmp_path / "trainer.yaml"
    config.write_text(
        "learning_rate: 1.0e-6\nrollout_backend: openenv\nrollout_func: flatpkg.roll:run\n",
        encoding="utf-8",
    )
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('"one"\n"two"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    try:
        result = cli("run", "trainer.yaml", "--prompts", "prompts.jsonl")
        assert result.code == 0, result.err
        assert result.out == '{"prompt":"one","answer":"a"}\n{"prompt":"two","answer":"a"}\n'
    finally:
        for name in ("flatpkg", "flatpkg.roll"):
            sys.modules.pop(name, None)


def test_live_openenv_with_the_bundled_config_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    pytest.importorskip("openenv")
    from agent_rollout.examples.openenv_rollout import serve_drill_env

    out = tmp_path / "rows.jsonl"
    with serve_drill_env() as url:
        monkeypatch.setenv(URL_ENV_VAR, url)
        args = ["run", str(BUNDLED_CONFIG), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out)]
        result = cli(*args)
        assert result.code == 0
    # The live rollout and the offline one build the same rows.
    assert out.read_bytes() == expected_offline_bytes()
    assert result.err.startswith("ran openenv rollout: 6 seed prompts, 6 rows, ")

    # No server any more: a connection error, exit 2, and no file.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv(URL_ENV_VAR, closed)
    again = tmp_path / "again.jsonl"
    args = ["run", str(BUNDLED_CONFIG), "--prompts", str(BUNDLED_PROMPTS), "-o", str(again)]
    result = cli(*args)
    assert result.code == 2
    err = result.err
    assert err.startswith("agent-rollout run: rollout backend 'openenv': openenv rollout: ")
    assert f"no OpenEnv drill server answered at {closed}" in err
    assert not again.exists()


# ---- nemo_gym with rollout_source ----------------------------------------------------------

GYM_ROWS = [
    {"responses_create_params": {"input": "What is 2 + 2?"}, "expected_answer": "4"},
    {
        "responses_create_params": {
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]}
            ],
        },
        "expected_answer": "Paris",
        "reward": 1.0,
    },
]


def gym_config(folder: Path, source: Path) -> Path:
    config = folder / "gym.yaml"
    config.write_text(
        f"training:\n  rollout_backend: nemo_gym\n  rollout_source: {json.dumps(str(source))}\n"
    )
    return config


def test_nemo_gym_rollout_source(tmp_path: Path, cli: Cli) -> None:
    source = tmp_path / "example.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in GYM_ROWS))
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(gym_config(tmp_path, source)), "-o", str(out))
    assert result.code == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"prompt": [{"role": "user", "content": "What is 2 + 2?"}], "answer": "4"},
        {
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Capital of France?"},
            ],
            "answer": "Paris",
        },
    ]
    err = result.err
    assert err.startswith(f"ran nemo_gym rollout: rollout_source {source}, 2 rows, ")


def test_the_summary_counts_rows_without_an_answer(tmp_path: Path, cli: Cli) -> None:
    """A task with no reference gives a row with no answer: counted on the summary line,
    not passed off as one of the answered rows."""
    source = tmp_path / "example.jsonl"
    rows = [*GYM_ROWS, {"responses_create_params": {"input": "Say hello."}}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(gym_config(tmp_path, source)), "-o", str(out))
    assert result.code == 0
    assert [json.loads(line).get("answer") for line in out.read_text().splitlines()] == [
        "4",
        "Paris",
        None,
    ]
    assert ", 3 rows (1 without an answer), " in result.err
    answered = tmp_path / "answered.jsonl"
    answered.write_text("".join(json.dumps(row) + "\n" for row in GYM_ROWS))
    plain = cli("run", str(gym_config(tmp_path, answered)), "-o", str(out))
    assert ", 2 rows, " in plain.err and "without an answer" not in plain.err


def test_nemo_gym_says_when_prompts_are_not_used(tmp_path: Path, cli: Cli) -> None:
    source = tmp_path / "example.jsonl"
    source.write_text(json.dumps(GYM_ROWS[0]) + "\n")
    config = gym_config(tmp_path, source)
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 0
    err = result.err
    assert f"note: the rows come from rollout_source '{source}'" in err
    assert f"the prompts in {BUNDLED_PROMPTS} are not used" in err


def test_nemo_gym_bad_row_exits_1(tmp_path: Path, cli: Cli) -> None:
    source = tmp_path / "example.jsonl"
    source.write_text(json.dumps(GYM_ROWS[0]) + "\n" + '{"responses_create_params": 3}\n')
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(gym_config(tmp_path, source)), "-o", str(out))
    assert result.code == 1
    err = result.err
    assert err == (
        f"agent-rollout run: rollout backend 'nemo_gym': {source}:2: row 1: "
        "responses_create_params: must be an object, got int\n"
    )
    assert not out.exists()


def test_nemo_gym_missing_source_exits_2(tmp_path: Path, cli: Cli) -> None:
    missing = tmp_path / "missing.jsonl"
    result = cli("run", str(gym_config(tmp_path, missing)))
    assert result.code == 2
    assert result.err.startswith(
        f"agent-rollout run: rollout backend 'nemo_gym': {missing}: No such file or directory"
    )


def test_gym_config_is_read_beside_the_config_file(tmp_path: Path, cli: Cli) -> None:
    """A relative rollout_gym_config found beside the config is passed on absolute; one
    that is not there (Gym's own environments) as given, for NeMo Gym to find."""
    from agent_rollout import register_rollout_runner, unregister_rollout_runner

    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "my_env.yaml").write_text("my_env: {}\n", encoding="utf-8")
    config = folder / "live.yaml"
    config.write_text(
        "training:\n  rollout_backend: nemo_gym\n"
        "  rollout_gym_config: my_env.yaml,resources_servers/x/configs/x.yaml\n"
        "  rollout_policy_model: m\n  rollout_policy_base_url: http://127.0.0.1:9/v1\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seen: list[Any] = []

    def runner(**kwargs: Any) -> list[dict[str, Any]]:
        seen.append(kwargs["options"]["gym_config"])
        return [{"prompt": "p", "answer": "a"}]

    register_rollout_runner("nemo_gym", runner)
    cwd = os.getcwd()
    try:
        os.chdir(elsewhere)
        result = cli("run", "../configs/live.yaml", "--prompts", str(BUNDLED_PROMPTS))
    finally:
        os.chdir(cwd)
        unregister_rollout_runner("nemo_gym")
    assert result.code == 0, result.err
    assert seen == [[str(folder / "my_env.yaml"), "resources_servers/x/configs/x.yaml"]]


def test_what_the_backend_reports_is_under_the_summary(tmp_path: Path, cli: Cli) -> None:
    from agent_rollout import register_rollout_runner, unregister_rollout_runner
    from agent_rollout.backends._report import report_note, report_progress

    def runner(**kwargs: Any) -> list[dict[str, Any]]:
        report_progress(1, 2)
        report_note("reused the servers at http://127.0.0.1:11000")
        return [{"prompt": "p", "answer": "a"}]

    config = tmp_path / "gym.yaml"
    config.write_text("training:\n  rollout_backend: nemo_gym\n")
    register_rollout_runner("nemo_gym", runner)
    try:
        result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    finally:
        unregister_rollout_runner("nemo_gym")
    assert result.code == 0
    lines = result.err.splitlines()
    assert lines[0].startswith("ran nemo_gym rollout: 6 seed prompts, 1 row, ")
    assert lines[1:] == ["  reused the servers at http://127.0.0.1:11000"]


def test_nemo_gym_rows_as_prompts(tmp_path: Path) -> None:
    config = tmp_path / "gym.yaml"
    config.write_text("training:\n  rollout_backend: nemo_gym\n")
    stdin = "".join(json.dumps(row) + "\n" for row in GYM_ROWS).encode()
    result = cli_process("run", str(config), "--prompts", "-", stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["answer"] for line in result.stdout.splitlines()] == ["4", "Paris"]
    assert result.stderr.decode().startswith("ran nemo_gym rollout: 2 seed prompts, 2 rows")


# ---- exit 1: invalid input -----------------------------------------------------------------


def test_bad_config_positioned_errors(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        "training:\n  rollout_backend: openenv\n  rollout_funk: x:y\n  rollout_max_steps: 0\n"
    )
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    assert result.code == 1
    lines = result.err.splitlines()
    assert f"{config}:3:3: training.rollout_funk: unknown key 'rollout_funk'; did you mean " in (
        "\n".join(lines)
    )
    assert any(line.startswith(f"{config}:4:22: training.rollout_max_steps: ") for line in lines)
    assert all(line.startswith(f"{config}:") for line in lines)
    assert result.out == "" and not out.exists()


def test_config_without_a_backend(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "plain.yaml"
    config.write_text("training:\n  epochs: 1\n")
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 1
    assert result.err == (f"{config}: rollout_backend is not set: there is no rollout to launch\n")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # The rollout file reader's rules and texts (agent_rollout._jsonl), any JSON value.
        (b'{"prompt": "a"}\n{"prompt": \n', ":2:12: invalid JSON: the line ends inside an object"),
        (b'"ok"\n"caf\xe9"\n', ":2: invalid UTF-8 at byte 5 of the line"),
        (b"NaN\n", ":1:1: invalid JSON: NaN and Infinity are not JSON"),
        (b'"a"\n["x", "\\ud800"]\n', ":2:8: invalid JSON: lone surrogate in \\u escape"),
        (b"\n  \n", ": no seed prompts (the file is empty or blank)"),
    ],
)
def test_bad_prompt_file_exits_1(
    offline_config: Path,
    tmp_path: Path,
    data: bytes,
    message: str,
    cli: Cli,
) -> None:
    prompts = tmp_path / "seeds.jsonl"
    prompts.write_bytes(data)
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(offline_config), "--prompts", str(prompts), "-o", str(out))
    assert result.code == 1
    assert result.err == f"{prompts}{message}\n"
    assert not out.exists()


def blank_line_bomb(path: Path, megabytes: int) -> Path:
    """A small .jsonl.gz that expands to ``megabytes`` MiB of blank lines."""
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(megabytes):
            out.write(b"\n" * (1 << 20))
    return path


def test_a_blank_line_bomb_of_prompts_stops_at_the_byte_limit(
    offline_config: Path, tmp_path: Path, cli: Cli
) -> None:
    # The limits of `normalise` hold for seed prompts too: the same reader, bytes counted
    # after gzip, blank lines included (once a reader without a byte limit spent minutes here).
    bomb = blank_line_bomb(tmp_path / "seeds.jsonl.gz", 40)
    assert bomb.stat().st_size < 100_000
    out = tmp_path / "rows.jsonl"
    args = ("run", str(offline_config), "--prompts", str(bomb), "-o", str(out))
    result = cli(*args, "--max-bytes", "8MiB")
    assert result.code == 1
    assert result.err == (
        f"{bomb}:8388609: more than 8,388,608 bytes after gzip decompression, blank lines "
        "included (max_bytes=8388608; raise the limit with --max-bytes B)\n"
    )
    result = cli(*args)  # within the default 4 GiB: read to the end, and nothing in it
    assert result.code == 1
    assert result.err == f"{bomb}: no seed prompts (the file is empty or blank)\n"
    assert not out.exists()


def test_backend_refuses_a_seed_exits_1(offline_config: Path) -> None:
    result = cli_process("run", str(offline_config), "--prompts", "-", stdin=b'"fine"\n42\n')
    assert result.returncode == 1
    err = result.stderr.decode()
    assert err.startswith("agent-rollout run: rollout backend 'openenv': seed prompt 1: ")
    assert "Traceback" not in err and result.stdout == b""


def test_bad_rows_from_the_backend_exit_1(user_module: Path, tmp_path: Path, cli: Cli) -> None:
    config = write_config(tmp_path, "cli_run_rollouts:empty_prompt")
    out = tmp_path / "rows.jsonl"
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    assert result.code == 1
    assert result.err == (
        "agent-rollout run: rollout backend 'openenv': row 1: prompt: empty prompt "
        "(a non-empty str or at least one message is required)\n"
    )
    assert not out.exists()


def test_too_many_rows_exit_1(offline_config: Path, cli: Cli) -> None:
    args = ["run", str(offline_config), "--prompts", str(BUNDLED_PROMPTS), "--max-rows", "5"]
    result = cli(*args)
    assert result.code == 1
    assert "produced more than 5 rows (max_rows=5; raise the limit with --max-rows N)" in result.err
    assert "max_rows= or" not in result.err


def test_summary_counts_the_prompts_a_backend_dropped(
    user_module: Path, tmp_path: Path, cli: Cli
) -> None:
    pytest.importorskip("art")
    config = tmp_path / "art.yaml"
    config.write_text(
        "training:\n  rollout_backend: art\n"
        "  rollout_func: cli_run_rollouts:art_tie_on_seven\n  rollout_group_size: 2\n",
        encoding="utf-8",
    )
    out = tmp_path / "rows.jsonl"
    args = ["run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out)]
    result = cli(*args)
    assert result.code == 0
    err = result.err
    # Seeds 0 ("17 + 25") and 4 ("250 + 750") hold a 7: their two rollouts tie.
    assert "ran art rollout: 6 seed prompts, 4 rows, 2 prompts dropped (tie: 2), " in err
    for index in (0, 4):
        assert (
            f"  dropped prompt {index}: tie: rollouts 0, 1 share the best reward 1.0 "
            "with different answers\n"
        ) in err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4


def test_the_backend_is_named_once_in_an_error(user_module: Path, tmp_path: Path, cli: Cli) -> None:
    pytest.importorskip("art")
    config = tmp_path / "art.yaml"
    config.write_text(
        "training:\n  rollout_backend: art\n"
        "  rollout_func: cli_run_rollouts:art_tie_on_seven\n  rollout_group_size: 2\n",
        encoding="utf-8",
    )
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('"What is 7 + 1?"\n', encoding="utf-8")
    result = cli("run", str(config), "--prompts", str(seeds))
    assert result.code == 1
    assert result.err.count("\n") == 1  # no progress bar of ART's before it
    assert result.err.startswith(
        "agent-rollout run: rollout_backend 'art': every prompt was dropped (1 of 1; tie: 1)"
    )
    assert result.err.count("'art'") == 1


def test_a_reward_that_is_not_a_number_names_prompt_and_rollout(
    user_module: Path, tmp_path: Path, cli: Cli
) -> None:
    pytest.importorskip("art")
    config = tmp_path / "art.yaml"
    config.write_text(
        "training:\n  rollout_backend: art\n"
        "  rollout_func: cli_run_rollouts:art_reward_none_on_seven\n  rollout_group_size: 1\n",
        encoding="utf-8",
    )
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('"What is 2 + 3?"\n"What is 7 + 1?"\n', encoding="utf-8")
    result = cli("run", str(config), "--prompts", str(seeds))
    assert result.code == 1
    assert result.err == (
        "agent-rollout run: rollout_backend 'art': prompt 1 rollout 0: reward must be a number, "
        "got NoneType\n"
    )


# ---- exit 2: usage, I/O, packages, failing backends ------------------------------------------


def test_missing_prompts_option_exits_2(offline_config: Path, cli: Cli) -> None:
    result = cli("run", str(offline_config))
    assert result.code == 2
    assert result.err == (
        "agent-rollout run: --prompts FILE is required: rollout_backend 'openenv' runs on "
        "seed prompts (or set rollout_source where the backend reads one)\n"
    )


def test_missing_files_exit_2(offline_config: Path, tmp_path: Path, cli: Cli) -> None:
    missing = tmp_path / "missing.yaml"
    result = cli("run", str(missing), "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 2
    assert result.err == f"{missing}:1:1: cannot read file: No such file or directory\n"
    seeds = tmp_path / "missing.jsonl"
    result = cli("run", str(offline_config), "--prompts", str(seeds))
    assert result.code == 2
    assert result.err == f"{seeds}: cannot read file: No such file or directory\n"


def test_unwritable_output_exits_2(offline_config: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "no-such-dir" / "rows.jsonl"
    result = cli("run", str(offline_config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    assert result.code == 2
    assert result.err == f"{out}: cannot write file: No such file or directory\n"


def test_output_that_is_a_directory_leaves_nothing(
    offline_config: Path, tmp_path: Path, cli: Cli
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    before = sorted(os.listdir(tmp_path))
    args = ["run", str(offline_config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(target)]
    result = cli(*args)
    assert result.code == 2
    assert result.err == f"{target}: cannot write file: Is a directory\n"
    assert sorted(os.listdir(tmp_path)) == before  # the temporary file is gone too
    assert os.listdir(target) == []


def test_usage_error_exits_2(offline_config: Path, cli: Cli) -> None:
    result = cli("run", str(offline_config), "--max-rows", "-3")
    assert result.code == 2
    assert "argument --max-rows: must be in [1, 10,000,000], got -3" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", ""], "argument -o/--output: expected a file name, got ''"),
        (["--prompts", ""], "argument --prompts: expected a file name, got ''"),
    ],
)
def test_an_empty_file_name_is_a_usage_error(
    offline_config: Path, args: list[str], message: str, cli: Cli
) -> None:
    result = cli("run", str(offline_config), *args)
    assert (result.code, result.out) == (2, "")
    assert message in result.err and "internal error" not in result.err
    result = cli("run", "", "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 2
    assert "argument CONFIG: expected a file name, got ''" in result.err


def test_failing_backend_exits_2_without_traceback(
    user_module: Path, tmp_path: Path, cli: Cli
) -> None:
    config = write_config(tmp_path, "cli_run_rollouts:boom")
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 2
    assert result.err == (
        "agent-rollout run: rollout backend 'openenv' failed: RuntimeError: the environment "
        "fell over (set AGENT_ROLLOUT_DEBUG=1 for a traceback)\n"
    )
    # With AGENT_ROLLOUT_DEBUG the process crashes with the traceback: a real process.
    env = cli_env(extra_path=user_module) | {"AGENT_ROLLOUT_DEBUG": "1"}
    debug = cli_process("run", str(config), "--prompts", str(BUNDLED_PROMPTS), env=env)
    assert debug.returncode != 0 and b"Traceback" in debug.stderr


class HideArt(importlib.abc.MetaPathFinder):
    """Makes ``art`` look not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "art" or name.startswith("art."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@pytest.fixture
def art_hidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``art`` not importable, nor imported, for this test only."""
    for name in list(sys.modules):
        if name == "art" or name.startswith("art."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [HideArt(), *sys.meta_path])
    yield


def test_missing_backend_package_exits_2(tmp_path: Path, art_hidden: None, cli: Cli) -> None:
    config = tmp_path / "art.yaml"
    config.write_text(
        "training:\n  rollout_backend: art\n"
        "  rollout_func: agent_rollout.examples.art_rollout:rollout\n"
    )
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    assert result.code == 2
    assert result.err == (
        "agent-rollout run: rollout_backend='art' requires the 'openpipe-art' package: "
        "pip install 'openpipe-art>=0.5.18,<0.6' 'openai>=2.14,<3'\n"
    )


# ---- without --serve: the servers a bundled config uses are probed first -----------------------


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize(
    ("example", "where", "starts"),
    [
        ("art", ["http://127.0.0.1:8791/v1 (rollout_policy_base_url)"], "scripted policy"),
        (
            "ruler",
            [
                "http://127.0.0.1:8791/v1 (rollout_policy_base_url)",
                "http://127.0.0.1:8792/v1 (rollout_judge_base_url)",
            ],
            "scripted policy and scripted judge",
        ),
        ("openenv", ["http://127.0.0.1:8765"], "OpenEnv drill server"),
    ],
)
def test_an_example_without_serve_fails_at_once_naming_serve(
    example: str, where: list[str], starts: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing serves the example's addresses: exit 2 in well under a second (it took
    7-9 s, ART's import and retries, before the connection failed), naming --serve."""
    monkeypatch.delenv(URL_ENV_VAR, raising=False)
    if any(_listening(int(url.split(":")[2].split("/")[0])) for url in where):
        pytest.skip("something listens on a bundled example's port")
    package = "openenv" if example == "openenv" else "art"
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"needs {package}: without it the missing package is said first")
    started = time.perf_counter()
    result = cli("run", "--example", example, "-o", os.devnull)
    elapsed = time.perf_counter() - started
    assert result.code == 2, result.err
    assert result.err.startswith("agent-rollout run: nothing answers at "), result.err
    for url in where:
        assert url in result.err
    assert f"--serve starts the bundled {starts} for the run" in result.err
    assert result.err.count("\n") == 1
    assert elapsed < 2.0, f"{elapsed:.2f} s"


def test_a_silent_server_at_a_bundled_port_is_found_before_the_backend_loads(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, on a port known closed: the example's config with the bundled policy port
    moved there (and the table of bundled ports with it)."""
    from agent_rollout.examples import scripted_servers
    from agent_rollout.examples.serving import bundled_example

    pytest.importorskip("art")  # without it, the missing package is said first
    port = _closed_port()
    monkeypatch.setattr(scripted_servers, "BUNDLED_PORTS", {"policy": port, "judge": 8792})
    config = tmp_path / "art.yaml"
    text = Path(bundled_example("art")[0]).read_text(encoding="utf-8")
    config.write_text(text.replace("127.0.0.1:8791", f"127.0.0.1:{port}"), encoding="utf-8")
    started = time.perf_counter()
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS))
    elapsed = time.perf_counter() - started
    assert result.code == 2
    assert f"nothing answers at http://127.0.0.1:{port}/v1 (rollout_policy_base_url)" in result.err
    assert "--serve starts the bundled scripted policy" in result.err
    assert elapsed < 2.0, f"{elapsed:.2f} s"


def test_a_server_that_answers_the_probe_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled scripted policy (or any OpenAI-compatible server) at the bundled address
    answers the probe's GET /models: it passes, and a connection that fails later still gets
    the --serve hint."""
    from agent_rollout.examples import scripted_servers
    from agent_rollout.examples.serving import Served

    with scripted_servers.serve("policy") as (url, _):
        port = int(url.split(":")[2].split("/")[0])
        monkeypatch.setattr(scripted_servers, "BUNDLED_PORTS", {"policy": port, "judge": 8792})
        served = Served({"name": "art", "options": {"policy_base_url": url}}, start=False)
        served.check_answering()  # no error: it answers
    assert served.hint(ConnectionError(f"no server answered at {url}")) == (
        " (nothing serves it: --serve starts the bundled scripted policy there)"
    )
    assert served.hint(ValueError(url)) == ""


def test_a_port_held_by_something_else_is_named_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener that never answers (the run hung silently past 100 s), and an HTTP server
    that is not a model server (the run failed after 7 s on its 501 page): each is named
    in about the probe's timeout, with --serve and the port to free."""
    import http.server
    import threading

    from agent_rollout.examples import scripted_servers
    from agent_rollout.examples.serving import PROBE_TIMEOUT_S, Served, ServeError

    def refused(url: str) -> str:
        port = int(url.split(":")[2].split("/")[0])
        monkeypatch.setattr(scripted_servers, "BUNDLED_PORTS", {"policy": port, "judge": 8792})
        served = Served({"name": "art", "options": {"policy_base_url": url}}, start=False)
        started = time.perf_counter()
        with pytest.raises(ServeError) as info:
            served.check_answering()
        assert time.perf_counter() - started < 4 * PROBE_TIMEOUT_S + 1
        return str(info.value)

    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        text = refused(url)
    assert f"gives no answer to GET {url}/models at {url} (rollout_policy_base_url)" in text
    assert text.endswith(
        "--serve starts the bundled scripted policy for the run once the port is free"
    )

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        text = refused(url)
    finally:
        server.shutdown()
        server.server_close()
    assert f"something else answers (GET {url}/models: HTTP 501)" in text


def test_a_live_gym_run_without_nemo_gym_says_so_not_serve(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--serve would not help: the missing package is named, with its Python, whether the
    bundled policy's address answers the probe or not."""
    monkeypatch.setitem(sys.modules, "nemo_gym", None)
    result = cli("run", "--example", "nemo_gym_live", "-o", os.devnull)
    assert result.code == 2
    assert "requires the 'nemo-gym' package: pip install 'nemo-gym>=0.4,<0.5'" in result.err
    assert "nothing answers" not in result.err


# ---- progress and Ctrl-C -------------------------------------------------------------------


def test_progress_on_a_terminal_only(user_module: Path, tmp_path: Path, cli: Cli) -> None:
    config = write_config(tmp_path, "cli_run_rollouts:slow")
    out = tmp_path / "rows.jsonl"
    args = ["run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out)]
    # A real process with its standard error on a pseudo-terminal.
    code, stdout, seen = run_in_pty(cli_argv(*args), cli_env(extra_path=user_module))
    assert code == 0 and stdout == b""
    parts = seen.decode().split(ERASE_LINE)
    ticks = [part for part in parts if part.startswith("run  openenv rollout on 6 seed prompts  ")]
    assert len(ticks) >= 3, parts  # the clock moves while the rollout runs (0.8 s)
    assert parts[-1].startswith("ran openenv rollout: 6 seed prompts, 6 rows, ")
    assert out.read_bytes() == expected_offline_bytes()

    out.unlink()
    piped = cli(*args)  # standard error captured to a file: not a terminal
    assert piped.code == 0
    err = piped.err
    assert "\r" not in err and "\x1b" not in err and err.count("\n") == 1


def test_ctrl_c_stops_the_rollout_and_leaves_no_file(user_module: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, "cli_run_rollouts:hang")
    work = tmp_path / "work"
    work.mkdir()
    out = work / "rows.jsonl"
    marker = tmp_path / "started"
    env = cli_env(extra_path=user_module) | {"RUN_TEST_MARKER": str(marker)}
    with started(
        cli_argv("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=10)
        took = time.monotonic() - sent
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    assert code == 130, err
    assert took < 3
    assert err == f"agent-rollout run: interrupted; {out} was not written\n"
    assert os.listdir(work) == []


def test_parquet_output_of_rows_of_both_prompt_kinds(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout giving str and message prompts, written to .parquet: the row Arrow cannot
    put in the first row's column is an error of the input (exit 1) whose hint is run's
    flag, not an internal error; --prompt-kind messages writes them all."""
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "mixmod.py").write_text(
        "def rollout(prompts):\n"
        "    return [{'prompt': p, 'answer': 'a'} if i % 2 == 0 else\n"
        "            {'prompt': [{'role': 'user', 'content': p}], 'answer': 'b'}\n"
        "            for i, p in enumerate(prompts)]\n",
        encoding="utf-8",
    )
    (tmp_path / "c.yaml").write_text(
        "rollout_backend: openenv\nrollout_func: mixmod:rollout\n", encoding="utf-8"
    )
    (tmp_path / "p.jsonl").write_text('"one"\n"two"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    try:
        done = cli("run", "c.yaml", "--prompts", "p.jsonl", "-o", "o.parquet")
        assert done.code == 1, done.err
        assert "internal error" not in done.err
        assert "row 1: prompt: a list of chat messages in a table of str prompts" in done.err
        assert "--prompt-kind messages" in done.err and "prompt_kind=" not in done.err
        assert not (tmp_path / "o.parquet").exists()
        done = cli(
            "run", "c.yaml", "--prompts", "p.jsonl", "-o", "o.parquet", "--prompt-kind", "messages"
        )
        assert done.code == 0, done.err
        prompts = pq.read_table(tmp_path / "o.parquet").column("prompt").to_pylist()
        assert prompts == [[{"role": "user", "content": p}] for p in ("one", "two")]
    finally:
        sys.modules.pop("mixmod", None)


# ---- every wait said first; every package found before any server starts --------------------


def test_each_server_start_is_said_before_it_starts() -> None:
    """``serve_example`` says what it starts (``starting``) before it starts it: the command
    line draws it, so that the wait (the drill server's: seconds) is never silent."""
    from agent_rollout.examples.serving import serve_example

    policy, judge = _closed_port(), _closed_port()
    while judge == policy:
        judge = _closed_port()
    launch = {
        "name": "ruler",
        "rollout_func": None,
        "options": {
            "policy_base_url": f"http://127.0.0.1:{policy}/v1",
            "judge_base_url": f"http://127.0.0.1:{judge}/v1",
        },
    }
    said: list[tuple[str, bool, bool]] = []

    def starting(text: str) -> None:
        said.append((text, _listening(policy), _listening(judge)))

    with serve_example(launch, starting=starting) as served:
        assert _listening(policy) and _listening(judge)
    assert said == [
        (f"starting the scripted policy on 127.0.0.1:{policy}", False, False),
        (f"starting the scripted judge on 127.0.0.1:{judge}", True, False),
    ]
    assert len(served.started) == 2


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal: POSIX")
def test_the_drill_servers_start_is_drawn_before_the_wait(tmp_path: Path) -> None:
    """``run --example openenv --serve`` on a terminal: the line says the drill server is
    starting, its clock moving, before the seconds its start takes (it was silent: the
    line came after); then the server's address, then the rollouts. The summary gives the
    server's start apart."""
    pytest.importorskip("openenv")
    out = tmp_path / "rows.jsonl"
    env = cli_env()
    env.pop(URL_ENV_VAR, None)
    code, stdout, seen = run_in_pty(
        cli_argv("run", "--example", "openenv", "--serve", "-o", str(out)), env
    )
    text = seen.decode()
    assert code == 0 and stdout == b"", text
    parts = text.split(ERASE_LINE)

    def first(predicate: Callable[[str], bool]) -> int:
        return next(i for i, part in enumerate(parts) if predicate(part))

    starting = [
        p for p in parts if p.startswith("run  starting the OpenEnv drill server on 127.0.0.1  ")
    ]
    assert len(starting) >= 2, parts  # drawn at once, then the clock moves
    said = first(lambda p: p.startswith("run  starting the OpenEnv drill server on 127.0.0.1  "))
    served = first(lambda p: "agent-rollout run: serving OpenEnv drill server at http://" in p)
    rollout = first(lambda p: p.startswith("run  openenv rollout on 6 seed prompts  "))
    assert said < served < rollout, parts
    assert parts[said - 1] == ""  # nothing before it but the start of the output
    summary = parts[-1]
    assert summary.startswith("ran openenv rollout: 6 seed prompts, 6 rows, "), summary
    assert re.search(r", \d+\.\d\d s \(server started in \d+\.\d\d s\) -> ", summary), summary


def python_without(folder: Path, *distributions: str) -> str:
    """A Python with this one's packages but ``distributions``: a virtual environment whose
    site-packages links every entry of this one's except those distributions' files (their
    modules and metadata). They are really absent: no import hook hides them."""
    import importlib.metadata
    import sysconfig
    import venv

    left_out: set[str] = set()
    for name in distributions:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        left_out.update(path.parts[0] for path in files if path.parts[0] != "..")
    env = folder / "venv"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(env)
    ours = Path(sysconfig.get_paths()["purelib"])
    site = Path(sysconfig.get_paths(vars={"base": str(env), "platbase": str(env)})["purelib"])
    for entry in ours.iterdir():
        if entry.name not in left_out and not (site / entry.name).exists():
            (site / entry.name).symlink_to(entry)
    return str(env / "bin" / "python")


@pytest.mark.skipif(sys.platform == "win32", reason="the test's venv links: POSIX")
@pytest.mark.parametrize(
    ("example", "missing", "serve", "said"),
    [
        (
            "art",
            "openpipe-art",
            True,
            "rollout_backend='art' requires the 'openpipe-art' package: ",
        ),
        (
            "openenv",
            "openenv-core",
            False,
            "rollout_func agent_rollout.examples.openenv_rollout:rollout needs openenv-core: ",
        ),
        ("nemo_gym_live", "nemo-gym", True, "rollout_backend='nemo_gym' live requires the "),
    ],
)
def test_a_missing_package_is_named_before_any_server_starts(
    tmp_path: Path, example: str, missing: str, serve: bool, said: str
) -> None:
    """The package the run needs is missing (really: a venv without it): exit 2 naming what
    to install, and no server started (with --serve, the scripted policy was started
    first, on a port held here: the run said it could not bind it). Without --serve the
    package is named before the probe would name --serve."""
    from agent_rollout._extras import install_hint
    from agent_rollout.examples.serving import bundled_example

    python = python_without(tmp_path, missing)
    config, _ = bundled_example(example)
    text = Path(config).read_text(encoding="utf-8")
    with socket.socket() as held:  # where the config's scripted policy would be started
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        text = text.replace("127.0.0.1:8791", f"127.0.0.1:{port}")
        text = text.replace(
            "nemo_gym_live_tasks.jsonl", str(Path(config).with_name("nemo_gym_live_tasks.jsonl"))
        )
        mine = tmp_path / f"{example}.yaml"
        mine.write_text(text, encoding="utf-8")
        argv = [python, "-m", "agent_rollout", "run", str(mine), "-o", str(tmp_path / "o.jsonl")]
        if "rollout_source" not in text:  # else a note says the prompts are not used
            argv += ["--prompts", str(BUNDLED_PROMPTS)]
        argv += ["--serve"] if serve else []
        env = cli_env()
        env.pop(URL_ENV_VAR, None)
        done = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
    err = done.stderr.decode()
    extra = {"openpipe-art": "art", "openenv-core": "openenv", "nemo-gym": "nemo-gym"}[missing]
    assert done.returncode == 2, err
    assert err.startswith(f"agent-rollout run: {said}"), err
    assert err.endswith(f"{install_hint(extra)}\n") and err.count("\n") == 1, err
    assert not (tmp_path / "o.jsonl").exists()
