"""No false alarms on real trainers' keys, typos of ours still caught.

The corpus, tests/data/trainer_keys.json, is written by
scripts/gen_trainer_keys.py from the released packages' source (TRL's
GRPOConfig, OpenRLHF's training options, verl's rollout config, axolotl's
config models, soup-cli's TrainingConfig).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from agent_rollout.config import (
    ROLLOUT_KEYS,
    RolloutSettings,
    check_bytes,
    lookalike_key,
    nearest_key,
    training_config_schema,
)

CORPUS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent / "data" / "trainer_keys.json").read_text(encoding="utf-8")
)
NAMES = Draft7Validator(
    training_config_schema("training")["properties"]["training"]["propertyNames"]
)


def corpus_keys(trainer: str) -> list[str]:
    entry = CORPUS[trainer]
    return [*entry["keys"], *entry.get("derived_keys", [])]


def test_the_corpus_covers_the_five_trainers() -> None:
    packages = {entry["package"].split("==")[0] for entry in CORPUS.values()}
    assert packages == {"trl", "openrlhf", "verl", "axolotl", "soup-cli"}
    for trainer in CORPUS:
        assert len(CORPUS[trainer]["keys"]) >= 50, trainer
    # The keys that made the old rule cry wolf are in it.
    assert "rollout_batch_size" in CORPUS["openrlhf-0.8"]["keys"]
    assert "rollout_n" in CORPUS["verl"]["derived_keys"]


@pytest.mark.parametrize("trainer", sorted(CORPUS))
def test_no_trainer_key_is_taken_for_a_typo_of_ours(trainer: str) -> None:
    keys = corpus_keys(trainer)
    flagged = [key for key in keys if key not in ROLLOUT_KEYS and lookalike_key(key)]
    assert flagged == []
    # The editor's rule (the schema's propertyNames) agrees, and the model too.
    assert [key for key in keys if not NAMES.is_valid(key)] == []
    section = {key: None for key in keys if key not in ROLLOUT_KEYS}
    RolloutSettings.model_validate(section)


@pytest.mark.parametrize("trainer", sorted(CORPUS))
def test_check_of_a_config_of_every_trainer_key_says_nothing(trainer: str) -> None:
    # The whole text path (reading, duplicates, YAML 1.1/1.2, coercion warnings): a flat
    # config holding every key of the trainer (our own shared ones unset) is clean.
    text = "".join(f"{key}: null\n" for key in dict.fromkeys(corpus_keys(trainer)))
    result = check_bytes(text, section=None, source=f"{trainer}.yaml")
    assert (result.issues, result.warnings) == ([], [])


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("rollout_fucn", "rollout_func"),
        ("rolout_backend", "rollout_backend"),
        ("rollout_backed", "rollout_backend"),
        ("rollout_max_step", "rollout_max_steps"),
        ("rollout_groupsize", "rollout_group_size"),
        ("rollout_judge_mdl", "rollout_judge_model"),
        ("Rollout-Source", "rollout_source"),
    ],
)
def test_real_typos_are_still_caught(typo: str, meant: str) -> None:
    assert lookalike_key(typo) and not NAMES.is_valid(typo)
    assert nearest_key(typo) == meant


def test_corpus_keys_that_are_ours_are_read_as_ours() -> None:
    # soup-cli (where the seed comes from) and axolotl's trl section share two names with us.
    shared = {key for trainer in CORPUS for key in corpus_keys(trainer) if key in ROLLOUT_KEYS}
    assert shared <= set(ROLLOUT_KEYS)
    assert {"rollout_backend", "rollout_func"} <= shared


def test_nearest_miss_in_the_corpus_is_three_edits_away() -> None:
    # A margin worth knowing: how close the closest real key comes to the rule.
    from agent_rollout.config._lookalike import edit_distance, fold_key

    def distance(key: str) -> int:
        folded = fold_key(key).replace("-", "_")
        return min(edit_distance(folded, ours, 9) for ours in ROLLOUT_KEYS)

    keys = {key for trainer in CORPUS for key in corpus_keys(trainer)} - set(ROLLOUT_KEYS)
    closest = min(distance(key) for key in keys)
    assert closest >= 3
    assert all(re.fullmatch(r"[\w.]+", key) for key in keys)
