"""``nemo_gym`` live: Gym's own servers collect rollouts against the scripted policy.

The live tests need nemo-gym (Python 3.12+) and skip cleanly without it; CI
runs them in the venv made by ``scripts/setup_nemo_gym_venv.sh``. They start
Gym's ``example_single_tool_call`` environment (resources server + simple
agent) and Gym's ``vllm_model`` policy server pointed at the scripted policy
of ``agent_rollout.examples.scripted_servers``, all on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import agent_rollout
from agent_rollout import launch_rollout
from agent_rollout.backends.nemo_gym import gym_row_to_row
from agent_rollout.backends.nemo_gym import live as gym_live
from agent_rollout.config import RolloutSettings
from agent_rollout.examples.scripted_servers import serve

HAVE_GYM = importlib.util.find_spec("nemo_gym") is not None
needs_gym = pytest.mark.skipif(not HAVE_GYM, reason="nemo-gym is not installed (Python 3.12+)")
GYM_CONFIG = "resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _gym_tasks(limit: int) -> list[dict[str, Any]]:
    root = gym_live.gym_root()
    path = root / "resources_servers/example_single_tool_call/data/example.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:limit]]


def _children() -> list[Any]:
    import psutil

    return [p for p in psutil.Process().children(recursive=True) if p.is_running()]


# ------------------------------------------------------------ everywhere


def test_required_package_per_mode() -> None:
    spec = agent_rollout.get_rollout_backend_spec("nemo_gym")
    assert spec.live_wired is True
    assert agent_rollout.required_rollout_package("nemo_gym") is None  # files: nothing
    assert agent_rollout.required_rollout_package("nemo_gym", live=True) == "nemo-gym"
    assert agent_rollout.required_rollout_package("art", live=True) == "openpipe-art"


@pytest.mark.skipif(HAVE_GYM, reason="checks the message shown where nemo-gym is absent")
def test_live_without_gym_names_the_package() -> None:
    with pytest.raises(ImportError, match=r"'nemo_gym' live requires the 'nemo-gym' package"):
        launch_rollout(
            "nemo_gym",
            prompts=["hi"],
            options={
                "gym_config": GYM_CONFIG,
                "policy_base_url": "http://127.0.0.1:9/v1",
                "policy_model": "m",
            },
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"gym_config": GYM_CONFIG, "policy_model": "m"}, "needs rollout_policy_base_url"),
        (
            {"gym_config": GYM_CONFIG, "policy_base_url": "http://h/v1"},
            "needs rollout_policy_model",
        ),
        ({"gym_config": 3, "policy_base_url": "http://h/v1", "policy_model": "m"}, "gym_config"),
        ({"gym_config": " , ", "policy_base_url": "http://h/v1", "policy_model": "m"}, "at least"),
        (
            {
                "gym_config": GYM_CONFIG,
                "policy_base_url": "http://h/v1",
                "policy_model": "m",
                "group_size": 0,
            },
            "at least 1",
        ),
    ],
)
def test_live_settings_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gym_live.settings_from_options(options)


def test_task_rows_from_seed_prompts() -> None:
    rows = gym_live.task_rows(["What is 2 + 3?", [{"role": "user", "content": "x"}]])
    assert rows[0] == {
        "responses_create_params": {"input": [{"role": "user", "content": "What is 2 + 3?"}]}
    }
    assert rows[1]["responses_create_params"]["input"] == [{"role": "user", "content": "x"}]
    with pytest.raises(ValueError, match="row 0: a Gym task row needs"):
        gym_live.task_rows([{"input": "x"}])
    with pytest.raises(ValueError, match="row 1: prompt must be a string"):
        gym_live.task_rows(["a", 5])


def test_config_keys_reach_launch_options() -> None:
    settings = RolloutSettings.model_validate(
        {
            "rollout_backend": "nemo_gym",
            "rollout_gym_config": GYM_CONFIG,
            "rollout_policy_base_url": "http://127.0.0.1:8795/v1",
            "rollout_policy_model": "scripted",
            "rollout_group_size": 2,
        }
    )
    options = settings.to_launch_kwargs()["options"]
    assert options == {
        "gym_config": GYM_CONFIG,
        "policy_base_url": "http://127.0.0.1:8795/v1",
        "policy_model": "scripted",
        "group_size": 2,
    }


# ------------------------------------------------------------ live (Gym)


@needs_gym
def test_live_collects_converts_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _gym_tasks(2)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    logs = tmp_path / "logs"
    head_port = _free_port()
    with serve("policy") as (policy_url, seen):
        started = time.monotonic()
        result = launch_rollout(
            "nemo_gym",
            prompts=tasks,
            options={
                "gym_config": GYM_CONFIG,
                "policy_base_url": policy_url,
                "policy_model": "scripted",
                "group_size": 2,
                "gym_head_port": head_port,
                "gym_log_dir": str(logs),
            },
        )
        elapsed = time.monotonic() - started
    # Gym really ran: the policy was asked, and Gym wrote 2 tasks x 2 repeats.
    assert seen, "the scripted policy never received a request"
    collected = [
        json.loads(line)
        for line in (logs / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(collected) == 4
    assert all("response" in row and "reward" in row for row in collected)
    assert sorted(row["_ng_task_index"] for row in collected) == [0, 0, 1, 1]
    # Converted like a file of collected rollouts: one row per task, tools counted.
    expected = [gym_row_to_row(task) for task in tasks]
    assert list(result.rows) == expected
    assert result.unused_fields == {"responses_create_params.tools": 4}
    assert result.drops == ()
    # Everything it started is gone: head server closed, no child process left.
    assert not _answers(head_port)
    assert _children() == []
    assert list(cwd.iterdir()) == []  # Gym's Hydra wrote nothing into the caller's directory
    print(f"live nemo_gym: 4 rollouts collected and converted in {elapsed:.1f} s")


@needs_gym
def test_ctrl_c_during_startup_stops_gym(tmp_path: Path) -> None:
    import _thread

    head_port = _free_port()
    stop = threading.Event()

    def interrupt_once_head_answers() -> None:
        while not stop.is_set():
            if _answers(head_port):
                _thread.interrupt_main()  # what Ctrl-C raises in the main thread
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=interrupt_once_head_answers, daemon=True)
    with serve("policy") as (policy_url, _):
        watcher.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                launch_rollout(
                    "nemo_gym",
                    prompts=_gym_tasks(1),
                    options={
                        "gym_config": GYM_CONFIG,
                        "policy_base_url": policy_url,
                        "policy_model": "scripted",
                        "gym_head_port": head_port,
                        "gym_log_dir": str(tmp_path),
                    },
                )
        finally:
            stop.set()
            watcher.join(timeout=5)
    assert (tmp_path / "gym_env_start.log").exists()  # Gym was started ...
    assert not _answers(head_port)  # ... and stopped
    assert _children() == []


@needs_gym
def test_running_servers_are_reused_and_left_alone(tmp_path: Path) -> None:
    """A head server that already answers is used, not started; a bad agent name is refused."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    instances = [
        {"config_path": "my_agent", "server_type": "responses_api_agents", "url": "http://x"}
    ]

    class Head(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(instances).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Head)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(gym_live.GymLiveError, match="'other' is not among the running agents"):
            launch_rollout(
                "nemo_gym",
                prompts=["What is 2 + 3?"],
                options={
                    "gym_config": GYM_CONFIG,
                    "policy_base_url": "http://127.0.0.1:9/v1",
                    "policy_model": "scripted",
                    "gym_agent_name": "other",
                    "gym_head_port": server.server_address[1],
                    "gym_log_dir": str(tmp_path),
                },
            )
        assert not (tmp_path / "gym_env_start.log").exists()  # nothing was started
        assert _answers(server.server_address[1])  # and the running head was left alone
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("extra", "ok"),
    [
        ({"rollout_policy_model": "m"}, False),  # a policy key without a Gym config
        ({"rollout_group_size": 2}, False),
        ({"rollout_gym_config": GYM_CONFIG}, False),  # a Gym config without the policy
        ({"rollout_gym_config": GYM_CONFIG, "rollout_policy_model": "m"}, False),
        (
            {
                "rollout_gym_config": GYM_CONFIG,
                "rollout_policy_model": "m",
                "rollout_policy_base_url": "http://127.0.0.1:1/v1",
                "rollout_group_size": 3,
            },
            True,
        ),
        ({"rollout_source": "tasks.jsonl"}, True),
    ],
)
def test_live_keys_rules_model_and_schema_agree(extra: dict[str, Any], ok: bool) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pydantic import ValidationError

    from agent_rollout.config import training_config_schema

    data = {"rollout_backend": "nemo_gym", **extra}
    schema_ok = jsonschema.Draft7Validator(training_config_schema(None)).is_valid(data)
    try:
        RolloutSettings.model_validate(data)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert (model_ok, schema_ok) == (ok, ok)
