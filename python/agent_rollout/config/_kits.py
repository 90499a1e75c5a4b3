"""Adoption kits for trainers whose config is not a pydantic model.

- ``RolloutArguments``: our keys as a plain dataclass, for parsers that build
  options from dataclasses (``transformers.HfArgumentParser``, TRL's
  ``TrlParser``, beside ``GRPOConfig``) and for Hydra/OmegaConf structured
  configs (under a section of its own, e.g. ``agent_rollout:``);
- ``add_rollout_arguments(parser)``: our keys as ``--rollout_*`` options of an
  ``argparse`` parser (OpenRLHF style);
- ``section_values``: what ``RolloutSettings.from_section`` validates when it
  is handed one of those (a dataclass instance, an ``argparse.Namespace``, a
  Mapping or an OmegaConf ``DictConfig``): a plain dict (without the unset,
  ``None``, values of a parser's dataclass or namespace), and the keys the
  host declared as its own.

The kits carry our defaults (``rollout_max_steps`` 64, ``rollout_group_size``
4) so that ``--help`` shows them; a key holding its default counts as unset
for the cross-field rules, so copying the defaults never breaks a config.
The integer fields are optional (``Optional[int]``, default ours), so that
OmegaConf takes ``null`` there as the other readers do (unset). The values
are validated by ``RolloutSettings.from_section``, in one place.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from agent_rollout.backends import ROLLOUT_DEFAULTS, ROLLOUT_KEYS
from agent_rollout.config._fields import INT_RANGES, KEY_HELP, int_text


def _help(key: str) -> dict[str, str]:
    return {"help": KEY_HELP[key]}


@dataclass
class RolloutArguments:
    """The ``rollout_*`` keys as a dataclass: one more dataclass for a dataclass parser.

    ``TrlParser((GRPOConfig, RolloutArguments))`` (or ``HfArgumentParser``)
    gives ``--rollout_backend`` and the other options, read from the command
    line and from the top level of the ``--config`` YAML file; Hydra takes it
    as a structured config under a section of its own. Validate what was
    parsed with ``RolloutSettings.from_section(arguments)``.
    """

    rollout_backend: Optional[str] = field(default=None, metadata=_help("rollout_backend"))
    rollout_func: Optional[str] = field(default=None, metadata=_help("rollout_func"))
    rollout_max_steps: Optional[int] = field(
        default=ROLLOUT_DEFAULTS["rollout_max_steps"], metadata=_help("rollout_max_steps")
    )
    rollout_group_size: Optional[int] = field(
        default=ROLLOUT_DEFAULTS["rollout_group_size"], metadata=_help("rollout_group_size")
    )
    rollout_judge_model: Optional[str] = field(default=None, metadata=_help("rollout_judge_model"))
    rollout_judge_base_url: Optional[str] = field(
        default=None, metadata=_help("rollout_judge_base_url")
    )
    rollout_policy_model: Optional[str] = field(
        default=None, metadata=_help("rollout_policy_model")
    )
    rollout_policy_base_url: Optional[str] = field(
        default=None, metadata=_help("rollout_policy_base_url")
    )
    rollout_source: Optional[str] = field(default=None, metadata=_help("rollout_source"))
    rollout_gym_config: Optional[str] = field(default=None, metadata=_help("rollout_gym_config"))
    rollout_gym_head_port: Optional[int] = field(
        default=None, metadata=_help("rollout_gym_head_port")
    )


assert tuple(f.name for f in dataclasses.fields(RolloutArguments)) == ROLLOUT_KEYS


def add_rollout_arguments(parser: Any, *, title: str = "agent rollout") -> Any:
    """Add ``--rollout_backend`` and the other keys to an ``argparse`` parser.

    Each option is spelt with underscores (``--rollout_max_steps``, as
    OpenRLHF spells its own) and with dashes (``--rollout-max-steps``); the
    integers are typed, the defaults are ours. The options go in an argument
    group named ``title``, which is returned. Validate the parsed namespace
    with ``RolloutSettings.from_section(args)``.
    """
    group = parser.add_argument_group(title)
    for key in ROLLOUT_KEYS:
        default = ROLLOUT_DEFAULTS.get(key)
        shown_default = "" if default is None else f" (default: {default})"
        group.add_argument(
            f"--{key}",
            f"--{key.replace('_', '-')}",
            dest=key,
            type=whole_number if key in INT_RANGES else str,
            default=default,
            metavar="N" if key in INT_RANGES else "VALUE",
            help=KEY_HELP[key].replace("%", "%%") + shown_default,
        )
    return group


def whole_number(text: str) -> int:
    """An integer option's text, read as ``check`` reads a quoted number (``int_text``):
    ``8`` is 8; ``8 ``, ``+8``, ``08``, ``1_0`` or ``٨`` are refused, where argparse's
    ``int`` would read them all."""
    value = int_text(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a whole number in digits, got {text!r}")
    return value


def _omegaconf_values(section: Any) -> tuple[Any, bool]:
    """A ``DictConfig`` as a plain dict (interpolations resolved, ``???`` left out)."""
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(section, resolve=True, throw_on_missing=False)
    if not isinstance(values, dict):
        return values, False
    for key in list(values):
        if OmegaConf.is_missing(section, key):
            del values[key]
    return values, dataclasses.is_dataclass(OmegaConf.get_type(section))


def section_values(section: Any) -> tuple[Any, frozenset[str]]:
    """What ``from_section`` validates: ``(values, keys the host declared)``.

    A dataclass instance, an ``argparse.Namespace``, an OmegaConf
    ``DictConfig`` or any Mapping becomes a plain dict. The fields of a
    dataclass (and of a structured ``DictConfig``) and the options of a
    parsed namespace are the host's own keys, never taken for typos of ours,
    and their ``None`` values are the parser's "unset", left out. A plain
    Mapping or ``DictConfig`` is data as written: a ``null`` there is read
    as the model reads it (unset, with a warning where the key has a
    default). Anything else is returned as it is (the model refuses what is
    not a mapping).
    """
    declared = False
    if isinstance(section, argparse.Namespace):
        values: Any = dict(vars(section))
        declared = True
    elif dataclasses.is_dataclass(section) and not isinstance(section, type):
        values = {f.name: getattr(section, f.name) for f in dataclasses.fields(section)}
        declared = True
    elif type(section).__module__.split(".")[0] == "omegaconf":
        values, declared = _omegaconf_values(section)
        if not isinstance(values, dict):
            return values, frozenset()
    elif isinstance(section, Mapping):
        values = dict(section)
    else:
        return section, frozenset()
    if not declared:
        return values, frozenset()
    own = frozenset(key for key in values if isinstance(key, str) and key not in ROLLOUT_KEYS)
    return {key: value for key, value in values.items() if value is not None}, own


__all__ = ["RolloutArguments", "add_rollout_arguments", "section_values"]
