"""Every bundled backend config runs with one command: ``agent-rollout run --serve CONFIG``.

Each test runs the command line (``agent_rollout.cli.main``, in this process)
on the config shipped in ``agent_rollout/examples`` (``art`` and ``ruler`` on a
copy whose fixed ports 8791/8792 are swapped for free ones, so a busy port on
the test machine cannot fail them). ``--serve`` starts the scripted policy and
judge servers (and the OpenEnv drill server) on 127.0.0.1 and stops them when
the run ends. The rows are then checked against the rule of ``docs/answer.md``
for that backend.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.config import load_config
from support import BUNDLED_PROMPTS as PROMPTS
from support import EXAMPLES, Cli

Serve = Callable[..., tuple[list[dict[str, Any]], str]]
FIXED_PORTS = {"8791", "8792"}


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
    """No network for LiteLLM's price table (read when it is imported), no real API key."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
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


def _sum_of(prompt: list[dict[str, Any]]) -> str:
    question = next(m["content"] for m in reversed(prompt) if m["role"] == "user")
    return str(sum(int(n) for n in re.findall(r"-?\d+", question)))


def test_every_bundled_config_is_valid() -> None:
    for name in ("openenv.yaml", "art.yaml", "ruler.yaml", "nemo_gym.yaml"):
        settings = load_config(str(EXAMPLES / name))
        assert settings.rollout_backend == name.removesuffix(".yaml")


@pytest.mark.parametrize("name", ["art.yaml", "ruler.yaml"])
def test_art_and_ruler_configs_answer_with_the_best_ranked_rollout(
    name: str, tmp_path: Path, serve: Serve
) -> None:
    pytest.importorskip("art")
    rows, err = serve(
        _on_free_ports(name, tmp_path), tmp_path / "rows.jsonl", "--prompts", str(PROMPTS)
    )
    # One row per seed prompt (the scripted policy answers right and wrong in
    # turn, 4 rollouts each), and the answer is the right one, never the other.
    assert len(rows) == 6
    assert [row["answer"] for row in rows] == [_sum_of(row["prompt"]) for row in rows]
    assert "serving scripted policy at http://127.0.0.1:" in err
    assert ("serving scripted judge" in err) == (name == "ruler.yaml")
    assert f"ran {name.removesuffix('.yaml')} rollout: 6 seed prompts, 6 rows, " in err


def test_openenv_config_serves_the_drill_environment(tmp_path: Path, serve: Serve) -> None:
    pytest.importorskip("openenv")
    rows, err = serve(EXAMPLES / "openenv.yaml", tmp_path / "rows.jsonl", "--prompts", str(PROMPTS))
    assert len(rows) == 6
    assert rows[0]["answer"] == "42" and rows[2]["answer"] == "-7"
    assert "serving OpenEnv drill server at http://127.0.0.1:" in err


def test_nemo_gym_config_collapses_repeats_and_counts_tools(tmp_path: Path, serve: Serve) -> None:
    rows, err = serve(EXAMPLES / "nemo_gym.yaml", tmp_path / "rows.jsonl")
    assert [row.get("answer") for row in rows] == ["42", "108", None]
    assert "this config needs no bundled server" in err
    assert "rollout_source " in err and ", 3 rows, " in err
    assert "not carried into rows: responses_create_params.tools of 3 rows" in err


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
    pytest.importorskip("art")
    config = _on_free_ports("art.yaml", tmp_path)
    env_result = cli("run", str(config), "--prompts", str(PROMPTS))
    # Nobody listens on the policy port: the rollout fails to connect, exit 2, no traceback.
    assert env_result.code == 2
    err = env_result.err
    assert re.search(
        r"agent-rollout run: rollout backend 'art' failed: RuntimeError: prompt \d rollout \d: "
        r"rollout_func raised APIConnectionError: Connection error\.",
        err,
    ), err
    assert "Traceback" not in err


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
