"""Adoption kits for hosts without pydantic, each run against the real package.

- ``RolloutArguments`` with ``transformers.HfArgumentParser`` and TRL's
  ``TrlParser`` (beside ``GRPOConfig``: TRL 1.16's ``GRPOConfig`` cannot be
  instantiated without torch, so with it the test parses to a namespace; the
  full ``parse_args_and_config`` runs beside TRL's ``ScriptArguments`` and
  ``ModelConfig``), and as a Hydra/OmegaConf structured config under its own
  ``agent_rollout:`` section (verl's layout);
- ``add_rollout_arguments`` on an ``argparse`` parser with OpenRLHF's options;
- ``RolloutSettings.from_section`` taking each of them, unset (``None``)
  values ignored, the host's declared keys never taken for typos of ours.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest
from pydantic import ValidationError

from agent_rollout.config import (
    ROLLOUT_DEFAULTS,
    ROLLOUT_KEYS,
    RolloutArguments,
    RolloutSettings,
    add_rollout_arguments,
    check_file,
)
from support import facts

TRL_CONFIG = """\
output_dir: /tmp/out
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
dataset_name: trl-lib/tldr
learning_rate: 1.0e-6
num_generations: 8
rollout_backend: openenv
rollout_func: agent_rollout.examples.openenv_rollout:offline_rollout
rollout_max_steps: 010
"""


def test_the_dataclass_holds_every_key_with_help_and_our_defaults() -> None:
    fields = {f.name: f for f in dataclasses.fields(RolloutArguments)}
    assert tuple(fields) == ROLLOUT_KEYS
    assert all(f.metadata["help"] for f in fields.values())
    arguments = RolloutArguments()
    for key in ROLLOUT_KEYS:
        assert getattr(arguments, key) == ROLLOUT_DEFAULTS.get(key)
    # Our defaults copied into the host are unset for the rules: no backend, no error.
    assert RolloutSettings.from_section(arguments) == RolloutSettings()


# ------------------------------------------------------------ transformers / TRL


@dataclass
class TrainerArguments:
    """A trainer's own dataclass, with a key two edits from ours."""

    learning_rate: float = 1e-5
    rollout_sources: Optional[str] = None


def test_hf_argument_parser_takes_the_dataclass() -> None:
    transformers = pytest.importorskip("transformers")
    parser = transformers.HfArgumentParser((TrainerArguments, RolloutArguments))
    trainer, rollout = parser.parse_args_into_dataclasses(
        [
            "--rollout_backend",
            "Ruler",
            "--rollout_func",
            "m:f",
            "--rollout_judge_model",
            "openai/o4-mini",
            "--rollout_group_size",
            "8",
            "--learning_rate",
            "2e-5",
        ]
    )
    assert trainer.learning_rate == 2e-5
    settings = RolloutSettings.from_section(rollout)
    assert settings.to_launch_kwargs() == {
        "name": "ruler",
        "rollout_func": "m:f",
        "max_steps": 64,
        "options": {"group_size": 8, "judge_model": "openai/o4-mini"},
    }
    # Errors read in our words.
    (_, wrong) = parser.parse_args_into_dataclasses(["--rollout_backend", "verl"])
    with pytest.raises(ValidationError, match="'verl' is not supported"):
        RolloutSettings.from_section(wrong)


def test_trl_parser_reads_our_keys_from_its_config_file(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    config = tmp_path / "grpo.yaml"
    config.write_text(TRL_CONFIG, encoding="utf-8")
    parser = trl.TrlParser((trl.ScriptArguments, trl.ModelConfig, RolloutArguments))
    script, _model, rollout = parser.parse_args_and_config(
        ["--config", str(config), "--rollout_group_size", "4"], fail_with_unknown_args=False
    )
    assert script.dataset_name == "trl-lib/tldr"
    settings = RolloutSettings.from_section(rollout)
    # TRL reads the file with yaml.safe_load: 010 is 8 to it, and to check too.
    assert rollout.rollout_max_steps == 8 == settings.rollout_max_steps
    checked = check_file(config, section=None)
    assert checked.issues == [] and checked.settings is not None
    assert checked.settings.rollout_max_steps == 8
    assert [w.kind for w in checked.warnings] == ["yaml_version"]  # 10 to a YAML 1.2 editor


def test_trl_parser_takes_it_beside_grpo_config(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    # Option names do not collide with GRPOConfig's ~200; the config file's keys reach ours.
    parser = trl.TrlParser((trl.GRPOConfig, RolloutArguments))
    import yaml

    parser.set_defaults_with_config(**yaml.safe_load(TRL_CONFIG))
    namespace = parser.parse_args(["--rollout_max_steps", "12"])
    assert namespace.num_generations == 8  # GRPOConfig's own option
    settings = RolloutSettings.from_section(namespace)  # every GRPOConfig key is the host's
    assert (settings.rollout_backend, settings.rollout_max_steps) == ("openenv", 12)


# ------------------------------------------------------------ Hydra / OmegaConf (verl)


@dataclass
class VerlStyleConfig:
    """A verl-style root config: the trainer's sections and ours under ``agent_rollout``."""

    trainer: dict = field(default_factory=lambda: {"total_epochs": 1})
    agent_rollout: RolloutArguments = field(default_factory=RolloutArguments)


def test_hydra_composes_it_as_a_structured_config(tmp_path: Path) -> None:
    pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.errors import ConfigCompositionException

    ConfigStore.instance().store(name="agent_rollout_base", node=VerlStyleConfig)
    (tmp_path / "ppo.yaml").write_text(
        "defaults:\n  - agent_rollout_base\n  - _self_\n"
        "trainer:\n  total_epochs: 3\n"
        "agent_rollout:\n  rollout_backend: nemo_gym\n  rollout_source: data/gym.jsonl\n",
        encoding="utf-8",
    )
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        cfg = compose(config_name="ppo", overrides=["agent_rollout.rollout_max_steps=16"])
        settings = RolloutSettings.from_section(cfg.agent_rollout)
        assert (settings.rollout_backend, settings.rollout_max_steps) == ("nemo_gym", 16)
        assert settings.to_launch_kwargs()["options"] == {"source": "data/gym.jsonl"}
        # A typo on the command line: the structured config refuses it itself.
        with pytest.raises(ConfigCompositionException):
            compose(config_name="ppo", overrides=["agent_rollout.rollout_fucn=m:f"])
        # A value of the right type but the wrong meaning: ours to refuse, in our words.
        wrong = compose(config_name="ppo", overrides=["agent_rollout.rollout_judge_model=j"])
        with pytest.raises(ValidationError, match="rollout_judge_model needs rollout_backend"):
            RolloutSettings.from_section(wrong.agent_rollout)


def test_omegaconf_merges_a_file_into_it(tmp_path: Path) -> None:
    omegaconf = pytest.importorskip("omegaconf")
    OmegaConf = omegaconf.OmegaConf
    path = tmp_path / "ppo.yaml"
    path.write_text(
        "agent_rollout:\n  rollout_backend: openenv\n  rollout_func: m:f\n"
        "  rollout_max_steps: ${trainer.total_epochs}\ntrainer:\n  total_epochs: 5\n",
        encoding="utf-8",
    )
    cfg = OmegaConf.merge(OmegaConf.structured(VerlStyleConfig), OmegaConf.load(path))
    settings = RolloutSettings.from_section(cfg.agent_rollout)  # interpolation resolved
    assert (settings.rollout_func, settings.rollout_max_steps) == ("m:f", 5)
    # A plain (not structured) DictConfig is data: a typo of ours is caught.
    plain = OmegaConf.create({"rollout_backend": "openenv", "rollout_fucn": "m:f", "x": "???"})
    with pytest.raises(ValidationError, match="did you mean 'rollout_func'"):
        RolloutSettings.from_section(plain)


# ------------------------------------------------------------ argparse (OpenRLHF)


def openrlhf_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="train_ppo_ray")
    parser.add_argument("--rollout_batch_size", type=int, default=1024)
    parser.add_argument("--n_samples_per_prompt", type=int, default=1)
    parser.add_argument("--pretrain", type=str, default=None)
    return parser


def test_add_rollout_arguments_on_an_openrlhf_style_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = openrlhf_parser()
    group = add_rollout_arguments(parser)
    assert group.title == "agent rollout"
    args = parser.parse_args(
        [
            "--pretrain",
            "m",
            "--rollout_backend",
            "art",
            "--rollout-func",
            "m:f",
            "--rollout_max_steps",
            "9",
        ]
    )
    assert (args.rollout_batch_size, args.rollout_group_size) == (1024, 4)
    settings = RolloutSettings.from_section(args)  # rollout_batch_size is the host's own
    assert settings.to_launch_kwargs() == {
        "name": "art",
        "rollout_func": "m:f",
        "max_steps": 9,
        "options": {"group_size": 4},
    }
    # The defaults are ours: openenv is not refused for a group size nobody set.
    openenv = parser.parse_args(["--rollout_backend", "openenv", "--rollout_func", "m:f"])
    assert RolloutSettings.from_section(openenv).rollout_group_size == 4
    with pytest.raises(SystemExit):
        parser.parse_args(["--rollout_max_steps", "many"])
    assert "--rollout_max_steps" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    help_text = capsys.readouterr().out
    assert "agent rollout:" in help_text and "(default: 64)" in help_text


def test_a_command_line_path_that_is_not_utf8_is_refused_by_name() -> None:
    """``--rollout_source $'\\xe9t\\xe9.jsonl'``: argv holds the bytes as lone surrogates
    (surrogateescape); no config text or JSON dump can hold them, so validation
    refuses the value, naming the key, instead of a dump failing later."""
    parser = openrlhf_parser()
    add_rollout_arguments(parser)
    name = b"\xe9t\xe9.jsonl".decode("utf-8", "surrogateescape")
    args = parser.parse_args(["--rollout_backend", "nemo_gym", "--rollout_source", name])
    with pytest.raises(ValidationError) as caught:
        RolloutSettings.from_section(args)
    (error,) = caught.value.errors()
    assert error["loc"] == ("rollout_source",)
    assert re.search(facts("rollout_source", "U+DCE9", "index 0"), error["msg"])
    fine = parser.parse_args(["--rollout_backend", "nemo_gym", "--rollout_source", "\u00e9t.jsonl"])
    settings = RolloutSettings.from_section(fine)
    assert RolloutSettings.model_validate_json(settings.model_dump_json()) == settings


# ------------------------------------------------------------ from_section's inputs


def test_from_section_ignores_unset_values_of_every_kind() -> None:
    mapping = {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_max_steps": None}
    from_mapping = RolloutSettings.from_section(mapping)
    assert from_mapping.rollout_max_steps == 64
    # Data as written: null on a key with a default is unset, and said so (as check says it).
    assert [(w.key, w.kind) for w in from_mapping.rollout_warnings] == [
        ("rollout_max_steps", "coerced")
    ]
    # A parser's None is its own "unset": left out, nothing to say.
    namespace = argparse.Namespace(**mapping, rollout_judge_model=None)
    assert RolloutSettings.from_section(namespace) == RolloutSettings.model_validate(
        {"rollout_backend": "openenv", "rollout_func": "m:f"}
    )
    arguments = RolloutArguments(rollout_backend="openenv", rollout_func="m:f")
    assert RolloutSettings.from_section(arguments) == RolloutSettings.from_section(namespace)


def test_a_dataclass_hosts_own_fields_are_declared_keys() -> None:
    @dataclass
    class HostArguments(RolloutArguments):
        rollout_sources: Optional[str] = None  # two edits from rollout_source
        epochs: int = 1

    host = HostArguments(rollout_backend="nemo_gym", rollout_sources="a.jsonl")
    assert RolloutSettings.from_section(host).rollout_backend == "nemo_gym"
    # The same key in plain data is a typo of ours.
    with pytest.raises(ValidationError, match="did you mean 'rollout_source'"):
        RolloutSettings.from_section(dataclasses.asdict(host))
    # A host dataclass that copies our defaults into its own fields is not refused.

    @dataclass
    class CopiedDefaults:
        rollout_backend: Optional[str] = "openenv"
        rollout_func: Optional[str] = "m:f"
        rollout_max_steps: int = 64
        rollout_group_size: int = 4

    assert RolloutSettings.from_section(CopiedDefaults()).rollout_backend == "openenv"


def test_from_section_refuses_what_is_not_a_section() -> None:
    with pytest.raises(ValidationError):
        RolloutSettings.from_section([("rollout_backend", "art")])
    with pytest.raises(ValidationError):
        RolloutSettings.from_section(RolloutArguments)  # the class, not an instance
