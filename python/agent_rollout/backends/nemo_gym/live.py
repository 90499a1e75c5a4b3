"""NeMo Gym live mode: start (or reuse) Gym's servers, collect rollouts, stop what was started.

Used by ``launch_rollout("nemo_gym", options={"gym_config": ...})``. Everything
goes through Gym's own command line (``gym env start`` and ``gym eval run
--no-serve``, nemo-gym 0.4), run as child processes of the interpreter that has
nemo-gym installed, so this module imports nothing from Gym and stays
importable on Python 3.10+; it only runs where ``nemo_gym`` is importable
(Python 3.12 and newer).

Lifecycle, in :func:`collect_rollouts`:

1. If a Gym head server already answers on ``head_host:head_port``, its
   servers are reused and left running.
2. Otherwise ``gym env start`` is started in a session of its own with the
   Gym config files plus Gym's ``vllm_model`` policy config pointed at the
   OpenAI-compatible policy endpoint; the call waits until the head server
   and every server it lists answer HTTP (or the process dies, or the timeout
   passes).
3. The seed tasks go to a temporary JSONL file; ``gym eval run --no-serve``
   collects ``num_repeats`` rollouts per task into another.
4. Whatever this call started is stopped in a ``finally`` block, so also on an
   error or ``KeyboardInterrupt`` (Ctrl-C): SIGINT first (Gym then stops its
   servers and its Ray cluster), SIGKILL to the whole process group if it has
   not exited within ``shutdown_timeout`` seconds.

By default every server runs in the interpreter's own virtualenv (Gym's
``skip_venv_if_present`` with a temporary ``uv_venv_dir`` whose ``.venv``
entries link to it), so no ``uv`` and no network are needed; that suits Gym's
example environments, whose servers need nothing beyond nemo-gym. With
``shared_venv=False`` Gym builds a venv per server with ``uv``, as it does by
default.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from agent_rollout._errors import GymLiveError
from agent_rollout._limits import MAX_ROLLOUT_ROWS
from agent_rollout.backends import require_backend_package
from agent_rollout.backends._ranking import BackendRows
from agent_rollout.backends.nemo_gym.convert import convert_gym_rows, gym_rows

__all__ = [
    "GymLiveError",
    "GymLiveSettings",
    "collect_rollouts",
    "gym_root",
    "launch_live",
    "settings_from_options",
    "task_rows",
]

DEFAULT_HEAD_PORT = 11000
"""Gym's own default head server port."""
POLICY_CONFIG = "responses_api_models/vllm_model/configs/vllm_model.yaml"
"""Gym's config for an OpenAI-compatible policy server (shipped in the nemo-gym wheel)."""
_LOG_TAIL = 4000


@dataclass(frozen=True)
class GymLiveSettings:
    """What a live collection needs; built from ``launch_rollout`` options."""

    gym_config: tuple[str, ...]
    policy_base_url: str
    policy_model: str
    policy_api_key: str = "EMPTY"
    agent_name: Optional[str] = None
    num_repeats: int = 1
    head_host: str = "127.0.0.1"
    head_port: int = DEFAULT_HEAD_PORT
    startup_timeout: float = 600.0
    collect_timeout: float = 3600.0
    shutdown_timeout: float = 30.0
    shared_venv: bool = True
    log_dir: Optional[str] = None


def task_rows(prompts: Sequence[Any]) -> list[dict[str, Any]]:
    """Seed prompts as Gym task rows.

    A mapping is taken as a Gym row (it must hold ``responses_create_params``);
    a string becomes one user message; a list is taken as chat messages.
    """
    rows: list[dict[str, Any]] = []
    for index, prompt in enumerate(prompts):
        if isinstance(prompt, Mapping):
            if not isinstance(prompt.get("responses_create_params"), Mapping):
                raise ValueError(
                    f"row {index}: a Gym task row needs a responses_create_params object"
                )
            rows.append(dict(prompt))
        elif isinstance(prompt, str):
            if not prompt:
                raise ValueError(f"row {index}: prompt must not be empty")
            rows.append(
                {"responses_create_params": {"input": [{"role": "user", "content": prompt}]}}
            )
        elif isinstance(prompt, list):
            if not prompt:
                raise ValueError(f"row {index}: prompt must not be an empty message list")
            rows.append({"responses_create_params": {"input": list(prompt)}})
        else:
            raise ValueError(
                f"row {index}: prompt must be a string, a list of chat messages or a Gym row, "
                f"got {type(prompt).__name__}"
            )
    return rows


def _gym_executable() -> str:
    beside = Path(sys.executable).parent / "gym"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("gym")
    if found is None:
        raise GymLiveError(
            "NeMo Gym's 'gym' command was not found beside this Python or on PATH; "
            "pip install 'nemo-gym>=0.4,<0.5' (Python 3.12+)"
        )
    return found


def _get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read().decode("utf-8"))


def _answers(url: str) -> bool:
    """True when an HTTP server answers at ``url`` (any status counts, as Gym polls)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def _head_instances(settings: GymLiveSettings) -> Optional[list[dict[str, Any]]]:
    """The head server's list of server instances, or ``None`` when nothing answers."""
    url = f"http://{settings.head_host}:{settings.head_port}/server_instances"
    try:
        instances = _get_json(url)
    except (OSError, ValueError):
        return None
    if not isinstance(instances, list):
        return None
    return [item for item in instances if isinstance(item, dict)]


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:]


def _server_dirs(config_paths: Sequence[str]) -> list[tuple[str, str]]:
    """``(server type, server name)`` of every server with an entrypoint in the configs."""
    import yaml

    dirs: list[tuple[str, str]] = []
    for config_path in config_paths:
        path = _resolve_config(config_path)
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
        if not isinstance(data, Mapping):
            continue
        for instance in data.values():
            if not isinstance(instance, Mapping):
                continue
            for server_type, servers in instance.items():
                if not isinstance(servers, Mapping):
                    continue
                for name, body in servers.items():
                    if isinstance(body, Mapping) and "entrypoint" in body:
                        dirs.append((str(server_type), str(name)))
    return dirs


def gym_root() -> Path:
    """Where the nemo-gym wheel puts its server trees (``resources_servers``, ...)."""
    import importlib.util

    spec = importlib.util.find_spec("nemo_gym")
    if spec is None or spec.origin is None:
        raise GymLiveError("nemo_gym is not importable in this interpreter")
    return Path(spec.origin).parent.parent


def _resolve_config(config_path: str) -> Path:
    """A Gym config path as Gym reads it: as given, else inside the nemo-gym install."""
    path = Path(config_path)
    if path.is_absolute() or path.exists():
        return path
    installed = gym_root() / path
    if installed.exists():
        return installed
    raise GymLiveError(f"gym_config: {config_path!r} not found (nor under {gym_root()})")


def _link_shared_venvs(venv_dir: Path, config_paths: Sequence[str]) -> None:
    prefix = Path(sys.prefix)
    if not (prefix / "bin" / "activate").exists():
        raise GymLiveError(
            f"shared_venv needs this Python to run in a virtualenv ({prefix} has no bin/activate); "
            "use a venv or pass gym_shared_venv=False to let Gym build one per server with uv"
        )
    for server_type, name in _server_dirs(config_paths):
        target = venv_dir / server_type / name
        target.mkdir(parents=True, exist_ok=True)
        link = target / ".venv"
        if not link.exists():
            link.symlink_to(prefix, target_is_directory=True)


def _head_overrides(settings: GymLiveSettings) -> list[str]:
    return [f"+head_server.host={settings.head_host}", f"+head_server.port={settings.head_port}"]


def _stop(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGINT (Gym's own shutdown), then SIGKILL to the process group after ``timeout``."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of its session
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _spawn(args: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,  # Ctrl-C reaches us; we stop Gym ourselves
        )


def _wait_ready(process: subprocess.Popen[bytes], settings: GymLiveSettings, log: Path) -> None:
    deadline = time.monotonic() + settings.startup_timeout
    while True:
        if process.poll() is not None:
            raise GymLiveError(
                f"gym env start exited with status {process.returncode} before its servers "
                f"were ready; log {log}:\n{_tail(log)}"
            )
        instances = _head_instances(settings)
        if instances:
            urls = [item.get("url") for item in instances]
            if all(isinstance(url, str) and _answers(url) for url in urls):
                return
        if time.monotonic() > deadline:
            raise GymLiveError(
                f"Gym servers not ready after {settings.startup_timeout:g} s; log {log}:\n"
                f"{_tail(log)}"
            )
        time.sleep(1.0)


def _agent_name(settings: GymLiveSettings, instances: Sequence[Mapping[str, Any]]) -> str:
    agents = [
        str(item.get("config_path"))
        for item in instances
        if item.get("server_type") == "responses_api_agents"
    ]
    if settings.agent_name is not None:
        if agents and settings.agent_name not in agents:
            raise GymLiveError(
                f"gym_agent_name={settings.agent_name!r} is not among the running agents: "
                f"{', '.join(agents)}"
            )
        return settings.agent_name
    if len(agents) != 1:
        raise GymLiveError(
            f"the Gym servers run {len(agents)} agents ({', '.join(agents) or 'none'}); "
            "name one with gym_agent_name"
        )
    return agents[0]


@contextmanager
def _gym_servers(settings: GymLiveSettings, work: Path) -> Iterator[list[dict[str, Any]]]:
    """Reuse running Gym servers, or start them for the ``with`` block and stop them after."""
    running = _head_instances(settings)
    if running is not None:
        yield running
        return
    config_paths = [*settings.gym_config, POLICY_CONFIG]
    args = [
        _gym_executable(),
        "env",
        "start",
        f"+config_paths=[{','.join(config_paths)}]",
        f"+policy_base_url={settings.policy_base_url}",
        f"+policy_api_key={settings.policy_api_key}",
        f"+policy_model_name={settings.policy_model}",
        *_head_overrides(settings),
        f"hydra.run.dir={work / 'hydra-env-start'}",  # not ./outputs in the caller's directory
    ]
    if settings.shared_venv:
        venv_dir = work / "venvs"
        _link_shared_venvs(venv_dir, config_paths)
        args += ["+skip_venv_if_present=true", f"+uv_venv_dir={venv_dir}"]
    log = work / "gym_env_start.log"
    process = _spawn(args, log, Path.cwd())
    try:
        _wait_ready(process, settings, log)
        instances = _head_instances(settings)
        if instances is None:
            raise GymLiveError(f"the Gym head server stopped answering; log {log}:\n{_tail(log)}")
        yield instances
    finally:
        _stop(process, settings.shutdown_timeout)


def collect_rollouts(
    tasks: Sequence[Mapping[str, Any]], settings: GymLiveSettings
) -> list[tuple[str, Any]]:
    """Collect ``num_repeats`` Gym rollouts per task; ``(where, row)`` pairs, in task order."""
    if not tasks:
        raise ValueError("nemo_gym live: no tasks to collect (give prompts or rollout_source)")
    keep = settings.log_dir is not None
    work = Path(settings.log_dir or tempfile.mkdtemp(prefix="agent-rollout-gym-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        tasks_path = work / "tasks.jsonl"
        out_path = work / "rollouts.jsonl"
        with open(tasks_path, "w", encoding="utf-8") as handle:
            for task in tasks:
                handle.write(json.dumps(task, ensure_ascii=False) + "\n")
        with _gym_servers(settings, work) as instances:
            agent = _agent_name(settings, instances)
            log = work / "gym_eval_run.log"
            args = [
                _gym_executable(),
                "eval",
                "run",
                "--no-serve",
                f"+agent_name={agent}",
                f"+input_jsonl_fpath={tasks_path}",
                f"+output_jsonl_fpath={out_path}",
                f"+num_repeats={settings.num_repeats}",
                *_head_overrides(settings),
                f"hydra.run.dir={work / 'hydra-eval-run'}",
            ]
            process = _spawn(args, log, work)
            try:
                status = process.wait(timeout=settings.collect_timeout)
            except subprocess.TimeoutExpired:
                raise GymLiveError(
                    f"gym eval run did not finish within {settings.collect_timeout:g} s; "
                    f"log {log}:\n{_tail(log)}"
                ) from None
            finally:
                _stop(process, 5.0)
            if status != 0 or not out_path.exists():
                raise GymLiveError(
                    f"gym eval run failed (status {status}); log {log}:\n{_tail(log)}"
                )
        return _read_output(out_path)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _read_output(path: Path) -> list[tuple[str, Any]]:
    """The collected rollouts, in task order.

    Gym writes them as they complete; each carries the task's ``_ng_task_index``
    (the line of the tasks file), so a stable sort on it gives the order of
    the tasks, the repeats of one task in the order Gym wrote them. Rows
    without an int index keep their place after the indexed ones.
    """
    rows = list(gym_rows(path, MAX_ROLLOUT_ROWS))

    def task_index(item: tuple[str, Any]) -> tuple[int, int]:
        index = item[1].get("_ng_task_index") if isinstance(item[1], dict) else None
        if isinstance(index, int) and not isinstance(index, bool):
            return (0, index)
        return (1, 0)

    return sorted(rows, key=task_index)


def settings_from_options(options: Mapping[str, Any]) -> GymLiveSettings:
    """Check the live options of ``launch_rollout("nemo_gym", options=...)``."""
    raw = options.get("gym_config")
    config: tuple[str, ...]
    if isinstance(raw, str):
        config = tuple(part.strip() for part in raw.split(",") if part.strip())
    elif isinstance(raw, (list, tuple)) and all(isinstance(part, str) for part in raw):
        config = tuple(raw)
    else:
        raise ValueError(
            f"gym_config must be a path string or a list of them, got {type(raw).__name__}"
        )
    if not config:
        raise ValueError("gym_config must name at least one Gym config file")
    base_url = options.get("policy_base_url")
    model = options.get("policy_model")
    if not isinstance(base_url, str) or not base_url:
        raise ValueError(
            "nemo_gym live (gym_config set) needs rollout_policy_base_url: the "
            "OpenAI-compatible endpoint of the policy"
        )
    if not isinstance(model, str) or not model:
        raise ValueError("nemo_gym live (gym_config set) needs rollout_policy_model")
    kwargs: dict[str, Any] = {}
    for option, name, kind in (
        ("gym_agent_name", "agent_name", str),
        ("group_size", "num_repeats", int),
        ("gym_head_port", "head_port", int),
        ("gym_head_host", "head_host", str),
        ("gym_startup_timeout", "startup_timeout", (int, float)),
        ("gym_shared_venv", "shared_venv", bool),
        ("gym_log_dir", "log_dir", str),
        ("policy_api_key", "policy_api_key", str),
    ):
        value: Union[Any, None] = options.get(option)
        if value is None:
            continue
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            raise ValueError(f"{option} has the wrong type: {type(value).__name__}")
        kwargs[name] = value
    if kwargs.get("num_repeats", 1) < 1:
        raise ValueError("group_size (Gym num_repeats) must be at least 1")
    return GymLiveSettings(
        gym_config=config, policy_base_url=base_url, policy_model=model, **kwargs
    )


def launch_live(
    prompts: Sequence[Any] | None, options: Mapping[str, Any], *, answer_from_response: bool
) -> BackendRows:
    """``launch_rollout("nemo_gym")`` with ``gym_config`` set: collect, then convert.

    The tasks are the rows of ``options["source"]`` when it is set, else the
    seed ``prompts`` (:func:`task_rows`). The collected rollouts go through
    :func:`agent_rollout.backends.nemo_gym.convert.convert_gym_rows`, so the repeats of
    one task collapse into one row as for a file of collected rollouts.
    """
    require_backend_package("nemo_gym", live=True)
    settings = settings_from_options(options)
    source = options.get("source")
    if source is not None:
        if not isinstance(source, (str, os.PathLike)):
            raise ValueError(f"rollout_source must be a path string, got {type(source).__name__}")
        tasks = task_rows([row for _, row in gym_rows(source, MAX_ROLLOUT_ROWS)])
    else:
        tasks = task_rows(list(prompts or []))
    return convert_gym_rows(
        collect_rollouts(tasks, settings), answer_from_response=answer_from_response
    )
