"""NeMo Gym live mode's settings: ``launch_rollout`` options checked into ``GymLiveSettings``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

from agent_rollout._exceptions import RolloutValueError

__all__ = ["DEFAULT_HEAD_PORT", "GymLiveSettings", "settings_from_options"]

DEFAULT_HEAD_PORT = 11000
"""Gym's own default head server port."""


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


def settings_from_options(options: Mapping[str, Any]) -> GymLiveSettings:
    """Check the live options of ``launch_rollout("nemo_gym", options=...)``."""
    raw = options.get("gym_config")
    config: tuple[str, ...]
    if isinstance(raw, str):
        config = tuple(part.strip() for part in raw.split(",") if part.strip())
    elif isinstance(raw, (list, tuple)) and all(isinstance(part, str) for part in raw):
        config = tuple(raw)
    else:
        raise RolloutValueError(
            f"gym_config must be a path string or a list of them, got {type(raw).__name__}"
        )
    if not config:
        raise RolloutValueError("gym_config must name at least one Gym config file")
    base_url = options.get("policy_base_url")
    model = options.get("policy_model")
    if not isinstance(base_url, str) or not base_url:
        raise RolloutValueError(
            "nemo_gym live (gym_config set) needs rollout_policy_base_url: the "
            "OpenAI-compatible endpoint of the policy"
        )
    if not isinstance(model, str) or not model:
        raise RolloutValueError("nemo_gym live (gym_config set) needs rollout_policy_model")
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
            raise RolloutValueError(f"{option} has the wrong type: {type(value).__name__}")
        kwargs[name] = value
    if kwargs.get("num_repeats", 1) < 1:
        raise RolloutValueError("group_size (Gym num_repeats) must be at least 1")
    return GymLiveSettings(
        gym_config=config, policy_base_url=base_url, policy_model=model, **kwargs
    )
