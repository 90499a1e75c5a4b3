"""``nemo_gym`` live: Gym's own servers collect rollouts against the scripted policy.

The live tests need nemo-gym (Python 3.12+) and skip cleanly without it; CI
runs them in the venv made by ``scripts/setup_nemo_gym_venv.sh``, less the
one ``AGENT_ROLLOUT_LIVE_ALL=1`` adds (``LIVE_ALL``). They start
Gym's ``example_single_tool_call`` environment (resources server + simple
agent), or its ``equivalence_rule`` one for the bundled ``--example
nemo_gym_live``, and Gym's ``vllm_model`` policy server pointed at the scripted
policy of ``agent_rollout.examples.scripted_servers``, all on 127.0.0.1 and on
free ports. The reuse rules run against a stand-in head server (``FakeHead``):
nothing is started there. The two-Ctrl-C test runs ``agent-rollout run`` as a
real process and signals it as a terminal would.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_rollout
from agent_rollout import launch_rollout
from agent_rollout.backends.nemo_gym import gym_row_to_row
from agent_rollout.backends.nemo_gym import live as gym_live
from agent_rollout.config import RolloutSettings
from agent_rollout.examples.scripted_servers import serve
from support import BUNDLED_ANSWERS, EXAMPLES, Cli, bundled_seeds, cli_argv, cli_env

HAVE_GYM = importlib.util.find_spec("nemo_gym") is not None
needs_gym = pytest.mark.skipif(not HAVE_GYM, reason="nemo-gym is not installed (Python 3.12+)")
LIVE_ALL = os.environ.get("AGENT_ROLLOUT_LIVE_ALL") == "1"
"""Also run the live tests CI leaves out for time (each Gym started costs about a minute
of CPU on CI's two cores): ``AGENT_ROLLOUT_LIVE_ALL=1``."""
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
            "rollout_gym_head_port": 11791,
        }
    )
    options = settings.to_launch_kwargs()["options"]
    assert options == {
        "gym_config": GYM_CONFIG,
        "policy_base_url": "http://127.0.0.1:8795/v1",
        "policy_model": "scripted",
        "group_size": 2,
        "gym_head_port": 11791,
    }
    assert gym_live.settings_from_options(options).head_port == 11791


# ------------------------------------------------------------ live (Gym)


@needs_gym
@pytest.mark.skipif(
    not LIVE_ALL,
    reason="AGENT_ROLLOUT_LIVE_ALL=1 runs it: CI's live run is the bundled example and Ctrl-C",
)
def test_live_collects_converts_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gym's tool-call environment through ``launch_rollout``: its own rows, converted with
    the tools counted, and everything stopped (the conversion of such rows runs offline on
    every CI run, on the bundled ``nemo_gym_rollouts.jsonl`` that a real Gym collected)."""
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


def _live_config(folder: Path) -> tuple[Path, int]:
    """The bundled ``nemo_gym_live.yaml``, copied with free policy and head ports and its
    tasks file given by absolute path; (config, head port)."""
    head_port = _free_port()
    text = (EXAMPLES / "nemo_gym_live.yaml").read_text(encoding="utf-8")
    for old, new in (
        ("127.0.0.1:8791/", f"127.0.0.1:{_free_port()}/"),
        ("rollout_gym_head_port: 11791", f"rollout_gym_head_port: {head_port}"),
        ("nemo_gym_live_tasks.jsonl", str(EXAMPLES / "nemo_gym_live_tasks.jsonl")),
    ):
        assert old in text
        text = text.replace(old, new)
    config = folder / "nemo_gym_live.yaml"
    config.write_text(text, encoding="utf-8")
    return config, head_port


@needs_gym
def test_the_bundled_live_example_answers_right(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --serve --example nemo_gym_live``, on free ports: Gym's equivalence_rule
    environment grades the scripted policy; the rows answer as the shared table says."""
    config, head_port = _live_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "rows.jsonl"
    result = cli("run", "--serve", str(config), "-o", str(out))
    assert result.code == 0, result.err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert tuple(row["answer"] for row in rows) == BUNDLED_ANSWERS
    assert [row["prompt"][-1]["content"] for row in rows] == [
        seed["prompt"] if isinstance(seed["prompt"], str) else seed["prompt"][-1]["content"]
        for seed in bundled_seeds()
    ]
    lines = result.err.splitlines()
    assert lines[0].startswith("agent-rollout run: serving scripted policy at http://127.0.0.1:")
    assert lines[1].startswith("ran nemo_gym rollout: rollout_source ")
    assert ", 6 rows, " in lines[1] and len(lines) == 2  # nothing reused: no note
    assert not _answers(head_port)
    assert _children() == []


def _session(sid: int) -> list[Any]:
    """The live (not zombie) processes of session ``sid``."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


@needs_gym
@pytest.mark.parametrize("presses", [2, 1])
def test_ctrl_c_twice_a_second_apart_or_once_leaves_nothing_behind(
    tmp_path: Path, presses: int
) -> None:
    """A second Ctrl-C, during the cleanup the first started, cannot cut it short (it
    kills what is left at once); one alone gives Gym a few seconds to stop. Either way,
    within 5 s of the last one every process of Gym's session is gone and the head port
    is closed. The first lands 2 s after the head server answers, while Gym's other
    servers start (an in-process test of a Ctrl-C at that moment, through
    ``launch_rollout``, is left out: it started a third Gym for what this one shows)."""
    import psutil

    config, head_port = _live_config(tmp_path)
    proc = subprocess.Popen(
        cli_argv("run", "--serve", str(config), "-o", str(tmp_path / "rows.jsonl")),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=tmp_path,
        # As a terminal starts it: a shell's background job would inherit SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 600
        while not _answers(head_port):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "Gym's head server never answered"
            time.sleep(0.2)
        time.sleep(2.0)  # Gym's servers are starting (or collecting): mid-run
        gym = [
            child
            for child in psutil.Process(proc.pid).children()
            if child.cmdline()[2:4] == ["env", "start"]
        ]
        assert len(gym) == 1, [child.cmdline() for child in psutil.Process(proc.pid).children()]
        sid = gym[0].pid
        started = _session(sid)
        assert len(started) > 3  # gym env start, Ray, the servers
        proc.send_signal(signal.SIGINT)
        for _ in range(presses - 1):
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
        last = time.monotonic()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert err.decode().endswith(
            f"agent-rollout run: interrupted; {tmp_path / 'rows.jsonl'} was not written\n"
        ), err
        while (_session(sid) or _answers(head_port)) and time.monotonic() < last + 5:
            time.sleep(0.1)
        gone_after = time.monotonic() - last
        assert _session(sid) == [], [p.cmdline() for p in _session(sid)]
        assert not _answers(head_port)
        assert gone_after < 5
        assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in started)
        print(f"{presses} Ctrl-C: everything gone {gone_after:.1f} s after the last")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class FakeHead:
    """A stand-in for a running Gym's head server: its instances and its whole config.

    ``instances`` (``None``: the route answers 404) and ``config`` (the YAML text of
    ``/global_config_dict_yaml``; ``None``: 404) can be changed between calls.
    """

    def __init__(self, instances: Any, config: Any) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        head = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                routes = {
                    "/server_instances": head.instances,
                    "/global_config_dict_yaml": head.config,
                    "/": "ok",
                }
                value = routes.get(self.path)
                body = json.dumps(value).encode()
                self.send_response(404 if value is None else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.instances = instances
        self.config = config
        self.policy_url = ""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _instances(*names: str) -> list[dict[str, Any]]:
    kinds = {"agent": "responses_api_agents", "policy_model": "responses_api_models"}
    return [
        {
            "config_path": name,
            "server_type": next((v for k, v in kinds.items() if k in name), "resources_servers"),
            "url": "http://127.0.0.1:9",
        }
        for name in names
    ]


def _gym_config(base_url: str, model: str, *names: str) -> str:
    """The YAML a Gym head server gives: its instances and the vllm_model policy."""
    lines = [f"{name}:\n  resources_servers:\n    x:\n      entrypoint: app.py" for name in names]
    lines.append(
        "policy_model:\n  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n"
        "      base_url: ${policy_base_url}\n      api_key: ${policy_api_key}\n"
        "      model: ${policy_model_name}"
    )
    lines.append(f"policy_base_url: {base_url}\npolicy_api_key: SECRET\npolicy_model_name: {model}")
    return "\n".join(lines) + "\n"


OURS = ("example_single_tool_call", "example_single_tool_call_simple_agent")


@pytest.fixture
def fake_head() -> Iterator[FakeHead]:
    """A stand-in head server for this config, and the scripted policy it names
    (``fake_head.policy_url``: the policy must answer, or the call stops before)."""
    with serve("policy") as (url, _):
        head = FakeHead(_instances(*OURS, "policy_model"), _gym_config(url, "scripted", *OURS))
        head.policy_url = url
        try:
            yield head
        finally:
            head.close()


def _launch_on(head: FakeHead, log_dir: Path, **extra: Any) -> Any:
    return launch_rollout(
        "nemo_gym",
        prompts=["What is 2 + 3?"],
        options={
            "gym_config": GYM_CONFIG,
            "policy_base_url": head.policy_url,
            "policy_model": "scripted",
            "gym_head_port": head.port,
            "gym_log_dir": str(log_dir),
            **extra,
        },
    )


class Notes:
    def __init__(self) -> None:
        self.notes: list[str] = []

    def rollouts(self, done: int, total: int) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append(text)


@needs_gym
def test_a_running_gym_that_serves_the_config_is_reused_and_left_alone(
    tmp_path: Path, fake_head: FakeHead
) -> None:
    """Reused, said so, nothing started; then its agents are checked (a bad name refused)."""
    from agent_rollout.backends._report import reporting

    seen = Notes()
    with reporting(seen), pytest.raises(gym_live.GymLiveError) as info:
        _launch_on(fake_head, tmp_path, gym_agent_name="other")
    assert "'other' is not among the running agents: example_single_tool_call_simple_agent" in str(
        info.value
    )
    assert seen.notes == [
        f"reused the NeMo Gym already running at http://127.0.0.1:{fake_head.port} "
        "(example_single_tool_call, example_single_tool_call_simple_agent, policy_model; "
        f"policy model 'scripted' at {fake_head.policy_url}); it was left running"
    ]
    assert not (tmp_path / "gym_env_start.log").exists()  # nothing was started
    assert _answers(fake_head.port)  # and the running head was left alone


@needs_gym
def test_a_running_gym_with_other_environments_is_refused_naming_them(
    tmp_path: Path, fake_head: FakeHead
) -> None:
    fake_head.instances = _instances("gpqa_diamond", "gpqa_diamond_simple_agent", "policy_model")
    fake_head.config = _gym_config(fake_head.policy_url, "scripted", "gpqa_diamond")
    with pytest.raises(gym_live.GymLiveError) as info:
        _launch_on(fake_head, tmp_path)
    assert str(info.value) == (
        f"a NeMo Gym already runs at http://127.0.0.1:{fake_head.port} and does not serve this "
        "config: it runs gpqa_diamond, gpqa_diamond_simple_agent, policy_model; this config "
        "needs example_single_tool_call, example_single_tool_call_simple_agent and the policy "
        f"model 'scripted' at {fake_head.policy_url} (example_single_tool_call, "
        "example_single_tool_call_simple_agent not among them). Stop that Gym, or set "
        "rollout_gym_head_port (option gym_head_port) to a free port to start one for this "
        "config"
    )
    assert not (tmp_path / "gym_env_start.log").exists()
    assert "SECRET" not in str(info.value)


@needs_gym
def test_a_running_gym_with_another_policy_is_refused_naming_it(
    tmp_path: Path, fake_head: FakeHead
) -> None:
    fake_head.config = _gym_config("http://10.0.0.5:8000/v1/", "Qwen/Qwen3-8B", *OURS)
    with pytest.raises(gym_live.GymLiveError) as info:
        _launch_on(fake_head, tmp_path)
    assert (
        f"needs example_single_tool_call, example_single_tool_call_simple_agent and the policy "
        f"model 'scripted' at {fake_head.policy_url} (its policy_model sends to model "
        "'Qwen/Qwen3-8B' at http://10.0.0.5:8000/v1). Stop that Gym"
    ) in str(info.value)
    assert "SECRET" not in str(info.value)


@needs_gym
def test_a_policy_nothing_answers_at_is_refused_before_gym_starts(tmp_path: Path) -> None:
    """Not a minute of Gym start-up and then failed rollouts: the address, at once."""
    url = f"http://127.0.0.1:{_free_port()}/v1"
    head_port = _free_port()
    with pytest.raises(ConnectionError) as info:
        launch_rollout(
            "nemo_gym",
            prompts=["What is 2 + 3?"],
            options={
                "gym_config": GYM_CONFIG,
                "policy_base_url": url,
                "policy_model": "scripted",
                "gym_head_port": head_port,
                "gym_log_dir": str(tmp_path),
            },
        )
    assert str(info.value) == (
        f"rollout_backend 'nemo_gym': no server answered at {url} (rollout_policy_base_url), "
        "where Gym's policy server would send every request: Connection refused"
    )
    assert not (tmp_path / "gym_env_start.log").exists()


@needs_gym
@pytest.mark.parametrize(
    ("instances", "config", "message"),
    [
        ([], None, "does not give its NeMo Gym config"),
        (None, None, "something that is not a NeMo Gym head server answers at"),
        ("not a list", "x: 1", "something that is not a NeMo Gym head server answers at"),
    ],
)
def test_something_else_on_the_head_port_is_refused(
    tmp_path: Path, fake_head: FakeHead, instances: Any, config: Any, message: str
) -> None:
    fake_head.instances, fake_head.config = instances, config
    with pytest.raises(gym_live.GymLiveError, match=message):
        _launch_on(fake_head, tmp_path)
    assert not (tmp_path / "gym_env_start.log").exists()


def test_collected_rows_are_read_in_task_then_repeat_order(tmp_path: Path) -> None:
    """Gym writes rollouts as they complete; they are read back in a fixed order."""
    order = [(1, 1), (0, 1), (2, 0), (1, 0), (0, 0), (2, 1)]
    path = tmp_path / "rollouts.jsonl"
    path.write_text(
        "".join(
            json.dumps({"_ng_task_index": task, "_ng_rollout_index": repeat, "n": n}) + "\n"
            for n, (task, repeat) in enumerate(order)
        )
        + json.dumps({"no index": True})
        + "\n",
        encoding="utf-8",
    )
    rows = [row for _, row in gym_live.read_collected(path)]
    assert [(r.get("_ng_task_index"), r.get("_ng_rollout_index")) for r in rows] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
        (None, None),
    ]


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
