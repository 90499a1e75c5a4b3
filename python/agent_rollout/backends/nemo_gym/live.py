"""NeMo Gym live mode: start (or reuse) Gym's servers, collect rollouts, stop what was started.

Used by ``launch_rollout("nemo_gym", options={"gym_config": ...})``. Everything
goes through Gym's own command line (``gym env start`` and ``gym eval run
--no-serve``, nemo-gym 0.4), run as child processes of the interpreter that has
nemo-gym installed, so this module imports nothing from Gym and stays
importable on Python 3.10+; it only runs where ``nemo_gym`` is importable
(Python 3.12 and newer).

Lifecycle, in :func:`collect_rollouts`:

1. **Reuse only what matches.** When a Gym head server already answers on
   ``head_host:head_port`` (``gym_head_port``, config key
   ``rollout_gym_head_port``; Gym's default 11000), it is reused, and left
   running, only if it serves every server instance the Gym config files
   define and its ``policy_model`` sends to this policy (the same
   ``policy_base_url`` and model name). Otherwise the call is refused with a
   ``GymLiveError`` naming what runs there: collecting through another
   environment or another policy would give rows the config did not ask for.
   It does not move to another port on its own: the port is the config's
   choice, and a second Gym (with its own Ray cluster) beside the first is a
   cost the user should choose, by setting another head port. Reuse is
   reported (:func:`~agent_rollout.backends._report.report_note`: ``run``
   prints it under its summary) and logged.
2. Otherwise ``gym env start`` is started in a session of its own with the
   Gym config files (as absolute paths) plus Gym's ``vllm_model`` policy
   config pointed at the OpenAI-compatible policy endpoint; the call waits
   until the head server and every server it lists answer HTTP (or the
   process dies, or the timeout passes).
3. The seed tasks go to a temporary JSONL file; ``gym eval run --no-serve``
   collects ``num_repeats`` rollouts per task into another (the rollouts done
   so far are reported as progress). The rows are read back in task order.
4. Whatever this call started is stopped, also on an error, Ctrl-C
   (``KeyboardInterrupt``), SIGTERM or SIGHUP (turned into ``Terminated`` for
   the duration of the call, where they were left at their default): SIGINT
   first (Gym then stops its servers and its Ray cluster), then SIGKILL to
   every process left in its session (its process group included). The
   grace is ``shutdown_timeout`` seconds after a normal end and
   :data:`INTERRUPT_GRACE_S` after an interrupt; a further Ctrl-C (or
   SIGTERM, SIGHUP) during the cleanup cannot interrupt it: it is recorded,
   everything left is killed at once, and it is raised once the cleanup is
   done. So everything started is gone within a few seconds of the last
   signal.

By default every server runs in the interpreter's own virtualenv (Gym's
``skip_venv_if_present`` with a temporary ``uv_venv_dir`` whose ``.venv``
entries link to it), so no ``uv`` and no network are needed; that suits Gym's
example environments, whose servers need nothing beyond nemo-gym. With
``shared_venv=False`` Gym builds a venv per server with ``uv``, as it does by
default.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from agent_rollout._errors import GymLiveError, Terminated
from agent_rollout._files import signals_end_cleanly
from agent_rollout._limits import MAX_ROLLOUT_ROWS
from agent_rollout.backends import require_backend_package
from agent_rollout.backends._ranking import BackendRows
from agent_rollout.backends._report import report_note, report_progress
from agent_rollout.backends.nemo_gym.convert import convert_gym_rows, gym_rows

__all__ = [
    "INTERRUPT_GRACE_S",
    "GymLiveError",
    "GymLiveSettings",
    "collect_rollouts",
    "gym_root",
    "launch_live",
    "read_collected",
    "settings_from_options",
    "task_rows",
]

DEFAULT_HEAD_PORT = 11000
"""Gym's own default head server port."""
POLICY_CONFIG = "responses_api_models/vllm_model/configs/vllm_model.yaml"
"""Gym's config for an OpenAI-compatible policy server (shipped in the nemo-gym wheel)."""
INTERRUPT_GRACE_S = 3.0
"""After an interrupt, how long Gym gets to stop its servers before what is left is killed."""
_LOG_TAIL = 4000
_POLL_S = 0.05
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")
logger = logging.getLogger(__name__)


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
            "pip install 'agent-rollout[nemo-gym]' (Python 3.12+)"
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


def _head_url(settings: GymLiveSettings) -> str:
    return f"http://{settings.head_host}:{settings.head_port}"


def _head_instances(settings: GymLiveSettings) -> Optional[list[dict[str, Any]]]:
    """The head server's list of server instances, or ``None`` when it gives none."""
    try:
        instances = _get_json(f"{_head_url(settings)}/server_instances")
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
        for _, server_type, name, _ in _instances_in(_load_yaml(_resolve_config(path)))
    ]


def _config_instances(config_paths: Sequence[str]) -> list[str]:
    """The server instance names the configs define (``example_single_tool_call``, ...)."""
    names: list[str] = []
    for path in config_paths:
        for instance, _, _, _ in _instances_in(_load_yaml(_resolve_config(path))):
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


def _resolve_config(config_path: str) -> Path:
    """A Gym config path as Gym reads it, made absolute: as given, else inside the install."""
    path = Path(config_path)
    if path.is_absolute() or path.exists():
        return path.absolute()
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
        text = _get_json(f"{_head_url(settings)}/global_config_dict_yaml")
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except (OSError, ValueError, yaml.YAMLError):
        config = None
    if not isinstance(config, Mapping):
        raise GymLiveError(
            f"a server answers at {_head_url(settings)} but does not give its NeMo Gym config "
            "(/global_config_dict_yaml), so it cannot be checked before reuse; stop it, or set "
            "rollout_gym_head_port (option gym_head_port) to a free port"
        )
    return config


def _check_reusable(
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
            f"a NeMo Gym already runs at {_head_url(settings)} and does not serve this config: "
            f"it runs {', '.join(names) or 'no servers'}; this config needs "
            f"{', '.join(wanted)} and the policy {ours} ({'; '.join(problems)}). Stop that "
            "Gym, or set rollout_gym_head_port (option gym_head_port) to a free port to start "
            "one for this config"
        )
    return (
        f"reused the NeMo Gym already running at {_head_url(settings)} "
        f"({', '.join(names)}; policy {ours}); it was left running"
    )


# ---- stopping what was started, whatever the signals ------------------------------------

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _Shield:
    """While cleanup runs, SIGINT, SIGTERM and SIGHUP are recorded instead of raised.

    Each one sets ``hurry`` (kill what is left at once). ``release`` puts the
    handlers back and, when asked to, delivers the first signal recorded to the
    handler that was in place (Ctrl-C raises ``KeyboardInterrupt`` there; a
    SIGTERM/SIGHUP whose handler was the default raises ``Terminated``). Only
    the main thread runs signal handlers; elsewhere it shields nothing.
    """

    def __init__(self, hurry: threading.Event) -> None:
        self.hurry = hurry
        self.seen: list[int] = []
        self.previous: dict[int, Any] = {}
        self.active = False

    def _record(self, signum: int, frame: object) -> None:
        del frame
        self.seen.append(signum)
        self.hurry.set()

    def install(self) -> None:
        if self.active:
            return
        self.active = True
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in _SIGNALS:
            try:
                previous = signal.signal(signum, self._record)
            except (OSError, ValueError):  # pragma: no cover - not settable here
                continue
            # None: a handler not set from Python; put back the default then.
            self.previous[signum] = signal.SIG_DFL if previous is None else previous

    def release(self, deliver: bool) -> None:
        if not self.active:
            return
        self.active = False
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)
        if not deliver or not self.seen:
            return
        signum = self.seen[0]
        handler = self.previous.get(signum)
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(signum)


def _session_members(session: int) -> list[int]:
    """The live (not zombie) processes of a session, from ``/proc`` (empty elsewhere)."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(session).encode() and fields[0] != b"Z":
            members.append(int(entry))
    return members


def _kill_session(session: int) -> None:
    try:
        os.killpg(session, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _session_members(session):  # what left the group but not the session
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _stop(process: subprocess.Popen[bytes], grace: float, hurry: threading.Event) -> None:
    """Stop ``process`` (a session leader) and everything in its session.

    SIGINT first (Gym's own shutdown); then, once the session is empty, after
    ``grace`` seconds, or as soon as ``hurry`` is set, SIGKILL to whatever is
    left. Waits (up to a few seconds) for the killed processes to go.
    """
    session = process.pid
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while not hurry.is_set() and time.monotonic() < deadline:
        if process.poll() is not None and not _session_members(session):
            break
        hurry.wait(_POLL_S)
    _kill_session(session)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 3
    while _session_members(session) and time.monotonic() < deadline:
        _kill_session(session)
        time.sleep(_POLL_S)


class _Started:
    """What one live call started, and how it is stopped.

    ``running(process)`` stops the process and its session when its block
    ends. The first stop installs the :class:`_Shield` for the rest of the
    call (``collect_rollouts`` releases it at the very end), so no signal can
    cut a cleanup short: a signal during it kills what is left at once. After
    an interrupt, Gym gets :data:`INTERRUPT_GRACE_S` to stop, not the whole
    ``shutdown_timeout``.
    """

    def __init__(self, shutdown_timeout: float) -> None:
        self.shutdown_timeout = shutdown_timeout
        self.hurry = threading.Event()
        self.shield = _Shield(self.hurry)
        self.interrupted = False

    @contextmanager
    def running(self, process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
        try:
            yield process
        except BaseException as exc:
            self.shield.install()  # first: a second Ctrl-C must not cut the cleanup short
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self.interrupted = True
            self.stop(process)
            raise
        self.stop(process)

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        self.shield.install()
        short = self.interrupted or bool(self.shield.seen)
        grace = min(self.shutdown_timeout, INTERRUPT_GRACE_S) if short else self.shutdown_timeout
        _stop(process, grace, self.hurry)


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


def _check_policy(settings: GymLiveSettings) -> None:
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


def _head_answers(settings: GymLiveSettings) -> bool:
    return _answers(f"{_head_url(settings)}/")


@contextmanager
def _gym_servers(
    settings: GymLiveSettings, work: Path, started: _Started
) -> Iterator[list[dict[str, Any]]]:
    """Reuse a running Gym that serves this config, or start one for the ``with`` block."""
    config_paths = [str(_resolve_config(path)) for path in (*settings.gym_config, POLICY_CONFIG)]
    _check_policy(settings)
    running = _head_instances(settings)
    if running is not None:
        note = _check_reusable(settings, config_paths[:-1], running)
        logger.info("nemo_gym live: %s", note)
        report_note(note)
        yield running
        return
    if _head_answers(settings):
        raise GymLiveError(
            f"something that is not a NeMo Gym head server answers at {_head_url(settings)}; "
            "set rollout_gym_head_port (option gym_head_port) to a free port"
        )
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
    with started.running(_spawn(args, log, Path.cwd())) as process:
        _wait_ready(process, settings, log)
        instances = _head_instances(settings)
        if instances is None:
            raise GymLiveError(f"the Gym head server stopped answering; log {log}:\n{_tail(log)}")
        yield instances


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 16), b""))
    except OSError:
        return 0


def _wait_collected(
    process: subprocess.Popen[bytes], out_path: Path, total: int, timeout: float
) -> int:
    """Wait for ``gym eval run``; report the rollouts written so far. Its exit status."""
    deadline = time.monotonic() + timeout
    done = -1
    while True:
        status = process.poll()
        count = min(_count_lines(out_path), total)
        if count != done:
            done = count
            report_progress(done, total)
        if status is not None:
            return status
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout)
        time.sleep(0.25)


def collect_rollouts(
    tasks: Sequence[Mapping[str, Any]], settings: GymLiveSettings
) -> list[tuple[str, Any]]:
    """Collect ``num_repeats`` Gym rollouts per task; ``(where, row)`` pairs, in task order."""
    if not tasks:
        raise ValueError("nemo_gym live: no tasks to collect (give prompts or rollout_source)")
    keep = settings.log_dir is not None
    work = Path(settings.log_dir or tempfile.mkdtemp(prefix="agent-rollout-gym-"))
    work.mkdir(parents=True, exist_ok=True)
    started = _Started(settings.shutdown_timeout)
    with signals_end_cleanly():  # SIGTERM/SIGHUP: Terminated, so what we started stops
        try:
            return _collect(tasks, settings, work, started)
        finally:
            started.shield.install()
            try:
                if not keep:
                    shutil.rmtree(work, ignore_errors=True)
            finally:
                # A signal that came during the cleanup ends the call now, unless an
                # exception (the first Ctrl-C, say) is already ending it.
                started.shield.release(deliver=sys.exc_info()[0] is None)


def _collect(
    tasks: Sequence[Mapping[str, Any]], settings: GymLiveSettings, work: Path, started: _Started
) -> list[tuple[str, Any]]:
    tasks_path = work / "tasks.jsonl"
    out_path = work / "rollouts.jsonl"
    with open(tasks_path, "w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(json.dumps(task, ensure_ascii=False) + "\n")
    total = len(tasks) * settings.num_repeats
    with _gym_servers(settings, work, started) as instances:
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
        with started.running(_spawn(args, log, work)) as process:
            try:
                status = _wait_collected(process, out_path, total, settings.collect_timeout)
            except subprocess.TimeoutExpired:
                raise GymLiveError(
                    f"gym eval run did not finish within {settings.collect_timeout:g} s; "
                    f"log {log}:\n{_tail(log)}"
                ) from None
        if status != 0 or not out_path.exists():
            raise GymLiveError(f"gym eval run failed (status {status}); log {log}:\n{_tail(log)}")
    return read_collected(out_path)


def read_collected(path: str | os.PathLike[str]) -> list[tuple[str, Any]]:
    """The rollouts ``gym eval run`` wrote to ``path``, in task order: ``(where, row)`` pairs.

    Gym writes them as they complete; each carries the task's ``_ng_task_index``
    (the line of the tasks file) and its ``_ng_rollout_index`` (which repeat),
    so a stable sort on both gives the tasks in order and the repeats of each
    in order, however the run went. Rows without an int task index keep their
    place after the indexed ones.
    """
    rows = list(gym_rows(path, MAX_ROLLOUT_ROWS))

    def number(row: Any, key: str) -> Optional[int]:
        value = row.get(key) if isinstance(row, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def order(item: tuple[str, Any]) -> tuple[int, int, int]:
        task = number(item[1], "_ng_task_index")
        if task is None:
            return (1, 0, 0)
        rollout = number(item[1], "_ng_rollout_index")
        return (0, task, -1 if rollout is None else rollout)

    return sorted(rows, key=order)


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
