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

The jobs, one module each: :mod:`~agent_rollout.backends.nemo_gym.settings`
(the options checked), :mod:`~agent_rollout.backends.nemo_gym.servers` (Gym's
servers found, checked and started), :mod:`~agent_rollout.backends.nemo_gym.stopping`
(what was started stopped, whatever the signals); this one runs the lifecycle
and collects the rows.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from agent_rollout._errors import GymLiveError
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._files import signals_end_cleanly
from agent_rollout._limits import MAX_ROLLOUT_ROWS
from agent_rollout.backends import require_backend_package
from agent_rollout.backends._ranking import BackendRows
from agent_rollout.backends._report import report_note, report_progress
from agent_rollout.backends.nemo_gym.convert import convert_gym_rows, gym_rows
from agent_rollout.backends.nemo_gym.servers import (
    POLICY_CONFIG,
    check_policy,
    check_reusable,
    gym_executable,
    gym_root,
    head_answers,
    head_instances,
    head_overrides,
    head_url,
    link_shared_venvs,
    resolve_config,
    spawn,
    tail,
    wait_ready,
)
from agent_rollout.backends.nemo_gym.settings import GymLiveSettings, settings_from_options
from agent_rollout.backends.nemo_gym.stopping import INTERRUPT_GRACE_S, Started

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

logger = logging.getLogger(__name__)


def task_rows(prompts: Sequence[Any]) -> list[dict[str, Any]]:
    """Seed prompts as Gym task rows.

    A mapping is taken as a Gym row (it must hold ``responses_create_params``);
    a string becomes one user message; a list is taken as chat messages.
    """
    rows: list[dict[str, Any]] = []
    for index, prompt in enumerate(prompts):
        if isinstance(prompt, Mapping):
            if not isinstance(prompt.get("responses_create_params"), Mapping):
                raise RolloutValueError(
                    f"row {index}: a Gym task row needs a responses_create_params object"
                )
            rows.append(dict(prompt))
        elif isinstance(prompt, str):
            if not prompt:
                raise RolloutValueError(f"row {index}: prompt must not be empty")
            rows.append(
                {"responses_create_params": {"input": [{"role": "user", "content": prompt}]}}
            )
        elif isinstance(prompt, list):
            if not prompt:
                raise RolloutValueError(f"row {index}: prompt must not be an empty message list")
            rows.append({"responses_create_params": {"input": list(prompt)}})
        else:
            raise RolloutValueError(
                f"row {index}: prompt must be a string, a list of chat messages or a Gym row, "
                f"got {type(prompt).__name__}"
            )
    return rows


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
def _gym_servers(
    settings: GymLiveSettings, work: Path, started: Started
) -> Iterator[list[dict[str, Any]]]:
    """Reuse a running Gym that serves this config, or start one for the ``with`` block."""
    config_paths = [str(resolve_config(path)) for path in (*settings.gym_config, POLICY_CONFIG)]
    check_policy(settings)
    running = head_instances(settings)
    if running is not None:
        note = check_reusable(settings, config_paths[:-1], running)
        logger.info("nemo_gym live: %s", note)
        report_note(note)
        yield running
        return
    if head_answers(settings):
        raise GymLiveError(
            f"something that is not a NeMo Gym head server answers at {head_url(settings)}; "
            "set rollout_gym_head_port (option gym_head_port) to a free port"
        )
    args = [
        gym_executable(),
        "env",
        "start",
        f"+config_paths=[{','.join(config_paths)}]",
        f"+policy_base_url={settings.policy_base_url}",
        f"+policy_api_key={settings.policy_api_key}",
        f"+policy_model_name={settings.policy_model}",
        *head_overrides(settings),
        f"hydra.run.dir={work / 'hydra-env-start'}",  # not ./outputs in the caller's directory
    ]
    if settings.shared_venv:
        venv_dir = work / "venvs"
        link_shared_venvs(venv_dir, config_paths)
        args += ["+skip_venv_if_present=true", f"+uv_venv_dir={venv_dir}"]
    log = work / "gym_env_start.log"
    with started.running(spawn(args, log, Path.cwd())) as process:
        wait_ready(process, settings, log)
        instances = head_instances(settings)
        if instances is None:
            raise GymLiveError(f"the Gym head server stopped answering; log {log}:\n{tail(log)}")
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
        raise RolloutValueError(
            "nemo_gym live: no tasks to collect (give prompts or rollout_source)"
        )
    keep = settings.log_dir is not None
    work = Path(settings.log_dir or tempfile.mkdtemp(prefix="agent-rollout-gym-"))
    work.mkdir(parents=True, exist_ok=True)
    started = Started(settings.shutdown_timeout)
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
    tasks: Sequence[Mapping[str, Any]], settings: GymLiveSettings, work: Path, started: Started
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
            gym_executable(),
            "eval",
            "run",
            "--no-serve",
            f"+agent_name={agent}",
            f"+input_jsonl_fpath={tasks_path}",
            f"+output_jsonl_fpath={out_path}",
            f"+num_repeats={settings.num_repeats}",
            *head_overrides(settings),
            f"hydra.run.dir={work / 'hydra-eval-run'}",
        ]
        with started.running(spawn(args, log, work)) as process:
            try:
                status = _wait_collected(process, out_path, total, settings.collect_timeout)
            except subprocess.TimeoutExpired:
                raise GymLiveError(
                    f"gym eval run did not finish within {settings.collect_timeout:g} s; "
                    f"log {log}:\n{tail(log)}"
                ) from None
        if status != 0 or not out_path.exists():
            raise GymLiveError(f"gym eval run failed (status {status}); log {log}:\n{tail(log)}")
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
            raise RolloutValueError(
                f"rollout_source must be a path string, got {type(source).__name__}"
            )
        tasks = task_rows([row for _, row in gym_rows(source, MAX_ROLLOUT_ROWS)])
    else:
        tasks = task_rows(list(prompts or []))
    return convert_gym_rows(
        collect_rollouts(tasks, settings), answer_from_response=answer_from_response
    )
