"""NeMo Gym live mode: Gym's servers found, checked and started.

Where Gym and its config files are (``gym_root``, ``resolve_config``), what
the configs define, what a Gym head server answers, whether a running Gym
serves this config and policy (``check_reusable``), and starting
``gym env start`` (``spawn``, ``wait_ready``). Stopping it is
:mod:`~agent_rollout.backends.nemo_gym.stopping`'s; the lifecycle that
calls all this is :mod:`~agent_rollout.backends.nemo_gym.live`'s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from agent_rollout._errors import GymLiveError
from agent_rollout._extras import install_hint
from agent_rollout.backends.nemo_gym.settings import GymLiveSettings

__all__ = [
    "POLICY_CONFIG",
    "check_policy",
    "check_reusable",
    "gym_executable",
    "gym_root",
    "head_answers",
    "head_instances",
    "head_overrides",
    "head_url",
    "link_shared_venvs",
    "resolve_config",
    "spawn",
    "tail",
    "wait_ready",
]

POLICY_CONFIG = "responses_api_models/vllm_model/configs/vllm_model.yaml"
"""Gym's config for an OpenAI-compatible policy server (shipped in the nemo-gym wheel)."""
_LOG_TAIL = 4000
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def gym_executable() -> str:
    beside = Path(sys.executable).parent / "gym"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("gym")
    if found is None:
        raise GymLiveError(
            "NeMo Gym's 'gym' command was not found beside this Python or on PATH: "
            f"{install_hint('nemo-gym')}"
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


def head_url(settings: GymLiveSettings) -> str:
    return f"http://{settings.head_host}:{settings.head_port}"


def head_instances(settings: GymLiveSettings) -> Optional[list[dict[str, Any]]]:
    """The head server's list of server instances, or ``None`` when it gives none."""
    try:
        instances = _get_json(f"{head_url(settings)}/server_instances")
    except (OSError, ValueError):
        return None
    if not isinstance(instances, list):
        return None
    return [item for item in instances if isinstance(item, dict)]


def tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-_LOG_TAIL:]


def _load_yaml(path: Path) -> Any:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise GymLiveError(f"gym_config: cannot read {path}: {exc}") from None


def _instances_in(data: Any) -> Iterator[tuple[str, str, str, Mapping[str, Any]]]:
    """``(instance, server type, server name, body)`` of every server a Gym config defines."""
    if not isinstance(data, Mapping):
        return
    for instance, value in data.items():
        if not isinstance(value, Mapping):
            continue
        for server_type, servers in value.items():
            if not isinstance(servers, Mapping):
                continue
            for name, body in servers.items():
                if isinstance(body, Mapping) and "entrypoint" in body:
                    yield str(instance), str(server_type), str(name), body


def _server_dirs(config_paths: Sequence[str]) -> list[tuple[str, str]]:
    """``(server type, server name)`` of every server with an entrypoint in the configs."""
    return [
        (server_type, name)
        for path in config_paths
        for _, server_type, name, _ in _instances_in(_load_yaml(resolve_config(path)))
    ]


def _config_instances(config_paths: Sequence[str]) -> list[str]:
    """The server instance names the configs define (``example_single_tool_call``, ...)."""
    names: list[str] = []
    for path in config_paths:
        for instance, _, _, _ in _instances_in(_load_yaml(resolve_config(path))):
            if instance not in names:
                names.append(instance)
    return names


def gym_root() -> Path:
    """Where the nemo-gym wheel puts its server trees (``resources_servers``, ...)."""
    import importlib.util

    spec = importlib.util.find_spec("nemo_gym")
    if spec is None or spec.origin is None:
        raise GymLiveError("nemo_gym is not importable in this interpreter")
    return Path(spec.origin).parent.parent


def resolve_config(config_path: str) -> Path:
    """A Gym config path as Gym reads it, made absolute: as given, else inside the install."""
    path = Path(config_path)
    if path.is_absolute() or path.exists():
        return path.absolute()
    installed = gym_root() / path
    if installed.exists():
        return installed
    raise GymLiveError(f"gym_config: {config_path!r} not found (nor under {gym_root()})")


def link_shared_venvs(venv_dir: Path, config_paths: Sequence[str]) -> None:
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


def head_overrides(settings: GymLiveSettings) -> list[str]:
    return [f"+head_server.host={settings.head_host}", f"+head_server.port={settings.head_port}"]


# ---- reusing a running Gym ---------------------------------------------------------------


@dataclass(frozen=True)
class _Policy:
    """The policy a Gym ``policy_model`` sends to (no API key: it is never shown)."""

    base_url: Optional[str]
    model: Optional[str]

    def __str__(self) -> str:
        return f"model {self.model!r} at {self.base_url}"


def _resolved(value: Any, top: Mapping[str, Any]) -> Any:
    """A ``${key}`` reference of a Gym config resolved against its top-level keys."""
    if isinstance(value, str):
        match = _REFERENCE.fullmatch(value.strip())
        if match is not None:
            return top.get(match[1])
    return value


def _running_policy(config: Mapping[str, Any], instance: str) -> Optional[_Policy]:
    """Where the running Gym's ``instance`` (a model server) sends requests, if it has one."""
    for _, _, _, body in _instances_in({instance: config.get(instance)}):
        base_url = _resolved(body.get("base_url"), config)
        model = _resolved(body.get("model"), config)
        return _Policy(
            base_url.rstrip("/") if isinstance(base_url, str) else None,
            model if isinstance(model, str) else None,
        )
    return None


def _running_config(settings: GymLiveSettings) -> Mapping[str, Any]:
    """The running Gym's whole config (``/global_config_dict_yaml``), parsed."""
    import yaml

    try:
        text = _get_json(f"{head_url(settings)}/global_config_dict_yaml")
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except (OSError, ValueError, yaml.YAMLError):
        config = None
    if not isinstance(config, Mapping):
        raise GymLiveError(
            f"a server answers at {head_url(settings)} but does not give its NeMo Gym config "
            "(/global_config_dict_yaml), so it cannot be checked before reuse; stop it, or set "
            "rollout_gym_head_port (option gym_head_port) to a free port"
        )
    return config


def check_reusable(
    settings: GymLiveSettings, config_paths: Sequence[str], running: Sequence[Mapping[str, Any]]
) -> str:
    """Refuse a running Gym that does not serve this config; else say what is reused.

    It must run every server instance the config files define, and its
    ``policy_model`` (the instance ``POLICY_CONFIG`` defines, which the agents
    send to) must send to this config's policy URL and model name.
    """
    wanted = _config_instances(config_paths)
    policy_instances = _config_instances([POLICY_CONFIG])
    names = [str(item.get("config_path")) for item in running if item.get("config_path")]
    config = _running_config(settings)
    ours = _Policy(settings.policy_base_url.rstrip("/"), settings.policy_model)
    problems = []
    missing = [name for name in wanted if name not in names]
    if missing:
        problems.append(f"{', '.join(missing)} not among them")
    for name in policy_instances:
        policy = _running_policy(config, name)
        if policy is None:
            problems.append(f"no {name}")
        elif policy != ours:
            problems.append(f"its {name} sends to {policy}")
    if problems:
        raise GymLiveError(
            f"a NeMo Gym already runs at {head_url(settings)} and does not serve this config: "
            f"it runs {', '.join(names) or 'no servers'}; this config needs "
            f"{', '.join(wanted)} and the policy {ours} ({'; '.join(problems)}). Stop that "
            "Gym, or set rollout_gym_head_port (option gym_head_port) to a free port to start "
            "one for this config"
        )
    return (
        f"reused the NeMo Gym already running at {head_url(settings)} "
        f"({', '.join(names)}; policy {ours}); it was left running"
    )


# ---- starting one ------------------------------------------------------------------------


def check_policy(settings: GymLiveSettings) -> None:
    """Refuse a policy address nothing listens on before Gym spends a minute starting.

    Only a TCP connection is tried (no request is sent); the ``ConnectionError``
    names the address, so ``run`` can hint at ``--serve``.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(settings.policy_base_url)
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return  # Gym reports what it makes of it
    if not host:
        return
    try:
        with socket.create_connection((host, port), timeout=5):
            pass
    except OSError as exc:
        raise ConnectionError(
            f"rollout_backend 'nemo_gym': no server answered at {settings.policy_base_url} "
            f"(rollout_policy_base_url), where Gym's policy server would send every request: "
            f"{exc.strerror or exc}"
        ) from None


def head_answers(settings: GymLiveSettings) -> bool:
    return _answers(f"{head_url(settings)}/")


def spawn(args: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,  # Ctrl-C reaches us; we stop Gym ourselves
        )


def wait_ready(process: subprocess.Popen[bytes], settings: GymLiveSettings, log: Path) -> None:
    deadline = time.monotonic() + settings.startup_timeout
    while True:
        if process.poll() is not None:
            raise GymLiveError(
                f"gym env start exited with status {process.returncode} before its servers "
                f"were ready; log {log}:\n{tail(log)}"
            )
        instances = head_instances(settings)
        if instances:
            urls = [item.get("url") for item in instances]
            if all(isinstance(url, str) and _answers(url) for url in urls):
                return
        if time.monotonic() > deadline:
            raise GymLiveError(
                f"Gym servers not ready after {settings.startup_timeout:g} s; log {log}:\n"
                f"{tail(log)}"
            )
        time.sleep(1.0)
