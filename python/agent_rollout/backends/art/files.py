"""The ``art`` backend: trajectory groups read from the files ART writes (Parquet, JSONL)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_rollout._exceptions import RolloutValueError
from agent_rollout._jsonl import FileLimits, read_values
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROLLOUT_ROWS
from agent_rollout.backends.art.quiet import import_art
from agent_rollout.backends.art.rows import type_name

if TYPE_CHECKING:
    from art import Trajectory, TrajectoryGroup

__all__ = ["read_trajectory_groups"]


def read_trajectory_groups(path: str | os.PathLike[str]) -> list[TrajectoryGroup]:
    """Read trajectory groups from a file ART wrote.

    - ``.parquet``: what ``model.log()`` writes to
      ``<project>/models/<model>/trajectories/<split>/<step>.parquet`` (one
      table row per trajectory, ``group_index`` tying them into groups). Read
      with polars, a base dependency of ``openpipe-art``.
    - ``.jsonl``: ART's older log format (one ``{"trajectories": [...]}`` group
      per line, ``messages_and_choices`` holding dicts and dumped Choices), or
      its SFT format (one ``{"messages": [...], "tools"?: [...]}`` trajectory
      per line, read as a group of one). It is read by the package's one JSONL
      reader (``agent_rollout._jsonl``): strict JSON, gzip allowed, and the
      line, byte and row limits of ``read_rollout_jsonl``.

    Errors name the file and the line (JSONL) or table row (Parquet).
    """
    import_art()
    name = os.fspath(path)
    if name.endswith(".parquet"):
        return _read_parquet(name)
    if name.endswith(".jsonl"):
        return _read_jsonl(name)
    raise RolloutValueError(f"{name}: unsupported ART trajectory file; expected .parquet or .jsonl")


def _trajectory_from(data: Any, where: str) -> Trajectory:
    from art import Trajectory

    if not isinstance(data, Mapping):
        raise RolloutValueError(
            f"{where}: a trajectory must be a JSON object, got {type_name(data)}"
        )
    key = "messages_and_choices" if "messages_and_choices" in data else "messages"
    items = data.get(key)
    if not isinstance(items, list):
        raise RolloutValueError(f"{where}: '{key}' must be a list of messages")
    reward = data.get("reward", 0.0)
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise RolloutValueError(f"{where}: 'reward' must be a number, got {type_name(reward)}")
    return Trajectory(messages_and_choices=items, reward=float(reward))


def _read_jsonl(name: str) -> list[TrajectoryGroup]:
    from art import TrajectoryGroup

    groups: list[TrajectoryGroup] = []
    total = 0
    # The package's one JSONL reader: its line, byte and row limits and messages.
    for line_no, data in read_values(name, FileLimits(MAX_ROLLOUT_ROWS, MAX_ROLLOUT_BYTES)):
        where = f"{name}:{line_no}"
        if isinstance(data, Mapping) and "trajectories" in data:
            items = data["trajectories"]
            if not isinstance(items, list):
                raise RolloutValueError(f"{where}: 'trajectories' must be a list")
            trajectories = [
                _trajectory_from(t, f"{where}: trajectories[{i}]") for i, t in enumerate(items)
            ]
        else:
            trajectories = [_trajectory_from(data, where)]
        total += len(trajectories)
        if total > MAX_ROLLOUT_ROWS:
            raise RolloutValueError(f"{where}: more than {MAX_ROLLOUT_ROWS} trajectories")
        groups.append(TrajectoryGroup(trajectories))
    return groups


def _read_parquet(name: str) -> list[TrajectoryGroup]:
    import polars as pl
    from art import Trajectory, TrajectoryGroup

    try:
        table = pl.read_parquet(name, columns=["group_index", "reward", "messages"])
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise RolloutValueError(f"{name}: not an ART trajectory Parquet file: {exc}") from None
    if table.height > MAX_ROLLOUT_ROWS:
        raise RolloutValueError(f"{name}: more than {MAX_ROLLOUT_ROWS} trajectories")
    by_group: dict[int, list[Trajectory]] = {}
    for row_no, record in enumerate(table.iter_rows(named=True)):
        where = f"{name}: table row {row_no}"
        messages: list[Any] = [
            _unflatten(m, f"{where}: messages[{i}]") for i, m in enumerate(record["messages"] or [])
        ]
        trajectory = Trajectory(messages_and_choices=messages, reward=record["reward"] or 0.0)
        by_group.setdefault(int(record["group_index"] or 0), []).append(trajectory)
    return [TrajectoryGroup(by_group[index]) for index in sorted(by_group)]


def _unflatten(flat: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One message of ART's Parquet schema back to a chat dict."""
    message: dict[str, Any] = {"role": flat.get("role"), "content": flat.get("content")}
    if flat.get("tool_calls"):
        try:
            message["tool_calls"] = json.loads(flat["tool_calls"])
        except json.JSONDecodeError as exc:
            raise RolloutValueError(f"{where}.tool_calls: invalid JSON: {exc.msg}") from None
    if flat.get("tool_call_id"):
        message["tool_call_id"] = flat["tool_call_id"]
    return message
