"""Every bundled backend config runs with one command: ``agent-rollout run --serve CONFIG``.

Each test runs the command line (``agent_rollout.cli.main``, in this process)
on the config shipped in ``agent_rollout/examples`` (``art`` and ``ruler`` on a
copy whose fixed ports 8791/8792 are swapped for free ones, so a busy port on
the test machine cannot fail them). ``--serve`` starts the scripted policy and
judge servers (and the OpenEnv drill server) on 127.0.0.1 and stops them when
the run ends. The rows' answers are checked against one table written by hand,
``support.BUNDLED_ANSWERS`` (the live NeMo Gym example, which needs nemo-gym, is
checked against the same table in ``test_nemo_gym_live.py``), and standard
error against what ``run`` alone prints: no line from LiteLLM, transformers or
tqdm.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.config import load_config
from agent_rollout.examples.scripted_servers import BUNDLED_PORTS
from support import BUNDLED_ANSWERS, EXAMPLES, Cli, bundled_seeds
from support import BUNDLED_PROMPTS as PROMPTS

Serve = Callable[..., tuple[list[dict[str, Any]], str]]
FIXED_PORTS = {str(port) for port in BUNDLED_PORTS.values()}
BUNDLED = ("art", "nemo_gym", "nemo_gym_live", "openenv", "ruler")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _on_free_ports(name: str, folder: Path) -> Path:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    for port in FIXED_PORTS:
        text = text.replace(f"127.0.0.1:{port}/", f"127.0.0.1:{_free_port()}/")
    copy = folder / name
    copy.write_text(text, encoding="utf-8")
    return copy


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real API key. (No network either: ``run`` itself keeps LiteLLM's price
    table local, so ``LITELLM_LOCAL_MODEL_COST_MAP`` is left unset here on purpose.)"""
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def serve(cli: Cli, offline_env: None) -> Serve:
    """``serve(config, out, *extra)``: ``run --serve CONFIG ... -o OUT``; (rows, stderr)."""

    def run(config: Path, out: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
        result = cli("run", "--serve", str(config), *extra, "-o", str(out))
        err = result.err
        assert result.code == 0, err
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        return rows, err

    return run


def _needs_art() -> None:
    """Skip without openpipe-art; else import it as the backend does (no network call).

    Imported here, before the in-process ``run``: ART's import itself sets
    environment variables and puts the working directory on ``sys.path``,
    which ``run_cli`` would report as the command's doing.
    """
    if importlib.util.find_spec("art") is None:
        pytest.skip("openpipe-art is not installed")
    from agent_rollout.backends.art import import_art

    import_art()


def _only_our_lines(err: str) -> None:
    """Standard error holds the lines ``run`` writes, and nothing from the packages below."""
    for line in err.splitlines():
        assert line.startswith(("agent-rollout run: ", "ran ", "  ")), line
    for noise in ("LiteLLM", "transformers", "PyTorch", "it/s", "%|", "Give Feedback"):
        assert noise not in err, err


def test_the_answers_table_is_right() -> None:
    """``BUNDLED_ANSWERS`` checked once more, by the plainest arithmetic and ``str.split``."""
    seeds = [seed["prompt"] for seed in bundled_seeds()]
    texts = [seed if isinstance(seed, str) else seed[-1]["content"] for seed in seeds]
    assert "17 + 25" in texts[0] and BUNDLED_ANSWERS[0] == str(17 + 25)
    assert "12 * 9" in texts[1] and BUNDLED_ANSWERS[1] == str(12 * 9)
    assert "4 - 11" in texts[2] and BUNDLED_ANSWERS[2] == str(4 - 11)
    assert BUNDLED_ANSWERS[3] == str(len(texts[3].split()))
    assert "250 + 750" in texts[4] and BUNDLED_ANSWERS[4] == str(250 + 750)
    assert BUNDLED_ANSWERS[5] == str(len(texts[5].split()))


def test_every_bundled_config_is_valid() -> None:
    from agent_rollout.examples.serving import EXAMPLES as KNOWN

    assert KNOWN == BUNDLED
    for name in BUNDLED:
        settings = load_config(str(EXAMPLES / f"{name}.yaml"))
        assert settings.rollout_backend == name.removesuffix("_live")


def test_bundled_configs_use_the_bundled_ports() -> None:
    """Without ``--serve``, ``run`` probes these addresses, and names ``--serve`` for
    them only (``test_cli_run.py``)."""
    for name, kind in (("art", "policy"), ("ruler", "policy"), ("ruler", "judge")):
        options = load_config(str(EXAMPLES / f"{name}.yaml")).to_launch_kwargs()["options"]
        assert options[f"{kind}_base_url"] == f"http://127.0.0.1:{BUNDLED_PORTS[kind]}/v1"


@pytest.mark.parametrize("name", ["art.yaml", "ruler.yaml"])
def test_art_and_ruler_configs_answer_right(name: str, tmp_path: Path, serve: Serve) -> None:
    _needs_art()
    rows, err = serve(
        _on_free_ports(name, tmp_path), tmp_path / "rows.jsonl", "--prompts", str(PROMPTS)
    )
    # One row per seed prompt (the scripted policy answers right and wrong in
    # turn, 4 rollouts each), and the answer is the right one, never the other.
    assert tuple(row["answer"] for row in rows) == BUNDLED_ANSWERS
    assert [row["prompt"][-1]["content"] for row in rows] == [
        seed["prompt"] if isinstance(seed["prompt"], str) else seed["prompt"][-1]["content"]
        for seed in bundled_seeds()
    ]
    assert "serving scripted policy at http://127.0.0.1:" in err
    assert ("serving scripted judge" in err) == (name == "ruler.yaml")
    assert f"ran {name.removesuffix('.yaml')} rollout: 6 seed prompts, 6 rows, " in err
    _only_our_lines(err)


def test_openenv_config_serves_the_drill_environment(tmp_path: Path, serve: Serve) -> None:
    pytest.importorskip("openenv")
    rows, err = serve(EXAMPLES / "openenv.yaml", tmp_path / "rows.jsonl", "--prompts", str(PROMPTS))
    assert tuple(row["answer"] for row in rows) == BUNDLED_ANSWERS
    assert "serving OpenEnv drill server at http://127.0.0.1:" in err
    _only_our_lines(err)


def test_nemo_gym_config_collapses_repeats_and_counts_tools(tmp_path: Path, serve: Serve) -> None:
    rows, err = serve(EXAMPLES / "nemo_gym.yaml", tmp_path / "rows.jsonl")
    # nemo_gym_rollouts.jsonl: 17 + 25, 12 * 9, and the prime between 20 and 25.
    assert [row.get("answer") for row in rows] == ["42", "108", "23"]
    assert "this config needs no bundled server" in err
    assert "rollout_source " in err and ", 3 rows, " in err  # none without an answer
    assert "not carried into rows: responses_create_params.tools of 3 rows" in err
    _only_our_lines(err)


def test_live_nemo_gym_tasks_are_the_bundled_prompts_with_their_answers() -> None:
    """The tasks of ``--example nemo_gym_live``: the rows it writes (in
    ``test_nemo_gym_live.py``) take their answers from these."""
    from agent_rollout.backends.nemo_gym import gym_row_to_row

    lines = (EXAMPLES / "nemo_gym_live_tasks.jsonl").read_text(encoding="utf-8").splitlines()
    tasks = [json.loads(line) for line in lines]
    assert tuple(task["expected_answer"] for task in tasks) == BUNDLED_ANSWERS
    seeds = [seed["prompt"] for seed in bundled_seeds()]
    expected = [[{"role": "user", "content": s}] if isinstance(s, str) else s for s in seeds]
    assert [gym_row_to_row(task)["prompt"] for task in tasks] == expected


def test_serve_refuses_a_non_loopback_url(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "remote.yaml"
    config.write_text(
        (EXAMPLES / "art.yaml")
        .read_text(encoding="utf-8")
        .replace("127.0.0.1:8791", "example.com:8791"),
        encoding="utf-8",
    )
    result = cli("run", "--serve", str(config), "--prompts", str(PROMPTS))
    assert result.code == 2
    assert result.err == (
        "agent-rollout run: --serve starts servers on loopback only: "
        "rollout_policy_base_url='http://example.com:8791/v1' must look like "
        "'http://127.0.0.1:PORT/v1'\n"
    )


def test_serve_says_when_the_port_is_taken(tmp_path: Path, cli: Cli) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "busy.yaml"
        config.write_text(
            (EXAMPLES / "art.yaml")
            .read_text(encoding="utf-8")
            .replace("127.0.0.1:8791", f"127.0.0.1:{port}"),
            encoding="utf-8",
        )
        result = cli("run", "--serve", str(config), "--prompts", str(PROMPTS))
    assert result.code == 2
    err = result.err
    assert err.startswith(
        f"agent-rollout run: --serve: cannot start the scripted policy on 127.0.0.1:{port} "
        "(rollout_policy_base_url): "
    )
    assert "Traceback" not in err


def test_without_serve_nothing_is_started(tmp_path: Path, cli: Cli) -> None:
    _needs_art()
    config = _on_free_ports("art.yaml", tmp_path)
    env_result = cli("run", str(config), "--prompts", str(PROMPTS))
    # Nobody listens on the policy port: the rollout fails to connect, exit 2, no
    # traceback; the message names the backend, prompt, rollout and address. (No
    # --serve hint: this address is not one a bundled config uses.)
    assert env_result.code == 2
    err = env_result.err
    assert re.fullmatch(
        r"agent-rollout run: rollout_backend 'art': prompt \d rollout \d: no server answered "
        r"at http://127\.0\.0\.1:\d+/v1 \(rollout_policy_base_url\): APIConnectionError: "
        r"Connection error\.\n",
        err,
    ), err


def test_an_unreachable_judge_is_named_once_for_the_run(tmp_path: Path, cli: Cli) -> None:
    """The policy answers but the judge never does: not six judge_failed drops but one error."""
    _needs_art()
    from agent_rollout.examples.scripted_servers import serve

    text = _on_free_ports("ruler.yaml", tmp_path).read_text(encoding="utf-8")
    judge = re.search(r"rollout_judge_base_url: (\S+)", text)
    assert judge is not None
    with serve("policy") as (url, _):
        config = tmp_path / "judge-down.yaml"
        config.write_text(
            re.sub(r"rollout_policy_base_url: \S+", f"rollout_policy_base_url: {url}", text),
            encoding="utf-8",
        )
        result = cli("run", str(config), "--prompts", str(PROMPTS))
    assert result.code == 2
    assert result.err.startswith(
        "agent-rollout run: rollout_backend 'ruler': the judge could not be reached for any "
        f"of the 6 prompts: no server answered at {judge[1]} (rollout_judge_base_url): "
    ), result.err
    _only_our_lines(result.err)


def test_policy_keys_reach_the_backend_options_and_only_art_and_ruler_take_them() -> None:
    from pydantic import ValidationError

    from agent_rollout import RolloutSettings

    settings = load_config(str(EXAMPLES / "ruler.yaml"))
    options = settings.to_launch_kwargs()["options"]
    assert options["policy_model"] == "scripted-policy"
    assert options["policy_base_url"] == "http://127.0.0.1:8791/v1"
    for backend in ("openenv", "nemo_gym"):
        with pytest.raises(ValidationError, match="rollout_policy_model"):
            RolloutSettings.model_validate(
                {
                    "rollout_backend": backend,
                    "rollout_func": "m:f" if backend == "openenv" else None,
                    "rollout_policy_model": "p",
                }
            )
    with pytest.raises(ValidationError, match="must be an http:// or https:// URL"):
        RolloutSettings.model_validate(
            {"rollout_backend": "art", "rollout_func": "m:f", "rollout_policy_base_url": "x"}
        )


# ------------------------------------------------- --example: a bundled config by name


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Cli:
    """The CLI run from ``tmp_path``, a folder that holds none of the examples."""
    monkeypatch.chdir(tmp_path)
    return cli


def test_example_runs_a_bundled_config_by_name_from_any_folder(
    tmp_path: Path, elsewhere: Cli
) -> None:
    # nemo_gym: its rollout_source is found next to the bundled config, not in the cwd.
    result = elsewhere("run", "--example", "nemo_gym", "-o", "rows.jsonl")
    assert result.code == 0, result.err
    rows = (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 3


def test_example_without_prompts_runs_on_the_bundled_prompts(
    tmp_path: Path, elsewhere: Cli
) -> None:
    pytest.importorskip("openenv")
    result = elsewhere("run", "--serve", "--example", "openenv", "-o", "rows.jsonl")
    err = result.err
    assert result.code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    seeds = PROMPTS.read_text(encoding="utf-8").splitlines()
    assert len(rows) == len([line for line in seeds if line.strip()]) == 6
    assert "ran openenv rollout: 6 seed prompts, 6 rows" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a CONFIG file, or --example NAME"),
        (("some.yaml", "--example", "art"), "not both"),
        (("--example", "nope"), "invalid choice: 'nope'"),
    ],
)
def test_example_usage_errors(elsewhere: Cli, args: tuple[str, ...], message: str) -> None:
    result = elsewhere("run", *args)
    assert result.code == 2
    assert message in result.err


def test_a_real_run_prints_only_our_lines_and_counts_rollouts(tmp_path: Path) -> None:
    """A fresh process, as a user starts it, standard error on a terminal: the progress
    line counts rollouts done of all, and nothing else reaches the terminal."""
    _needs_art()
    from agent_rollout.cli._progress import ERASE_LINE
    from support import cli_argv, cli_env, run_in_pty

    env = cli_env()
    for name in ("LITELLM_LOCAL_MODEL_COST_MAP", "TRANSFORMERS_NO_ADVISORY_WARNINGS"):
        env.pop(name, None)
    out = tmp_path / "rows.jsonl"
    config = _on_free_ports("ruler.yaml", tmp_path)
    argv = cli_argv("run", "--serve", str(config), "--prompts", str(PROMPTS), "-o", str(out))
    code, stdout, seen = run_in_pty(argv, env)
    err = seen.decode().replace("\r\n", "\n")
    assert code == 0 and stdout == b"", err
    parts = err.split(ERASE_LINE)
    ticks = [part for part in parts if part.startswith("run  ruler rollout on 6 seed prompts  ")]
    counts = [int(m[1]) for m in (re.search(r"  (\d+)/24 rollouts  ", t) for t in ticks) if m]
    assert counts and counts == sorted(counts), ticks  # drawn once rollouts start, growing
    # What is left once the line is erased: our lines only (each server's, said above the
    # line as it starts, then the summary).
    summary = parts[-1]
    assert summary.startswith("ran ruler rollout: 6 seed prompts, 6 rows, "), summary
    ours = [part for part in parts[1:-1] if part.startswith("agent-rollout run: serving ")]
    assert len(ours) == 2, parts
    _only_our_lines(parts[0] + "".join(ours) + summary)
    for part in parts[1:-1]:
        assert "\n" not in part or part in ours, part  # no one else's line between redraws
    assert tuple(json.loads(line)["answer"] for line in out.read_text().splitlines()) == (
        BUNDLED_ANSWERS
    )
