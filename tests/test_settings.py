"""``[tool.agent-rollout]`` in the nearest ``pyproject.toml``: one settings source for
``check`` (and the pre-commit hook) and the language server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_rollout.config import CheckSettings, ConfigError, find_settings, settings_values
from support import Cli


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "x"\n\n[tool.agent-rollout]\n{table}', encoding="utf-8"
    )
    configs = tmp_path / "configs" / "deep"
    configs.mkdir(parents=True)
    return configs


def test_the_nearest_pyproject_with_the_table_counts(tmp_path: Path) -> None:
    folder = project(tmp_path, 'section = "rl"\nstrict = true\nallow-keys = ["rollout_fn"]\n')
    (tmp_path / "configs" / "pyproject.toml").write_text('[project]\nname = "y"\n')
    settings = find_settings(str(folder / "c.yaml"))
    assert settings.origin == str(tmp_path / "pyproject.toml")
    assert (settings.section, settings.strict, settings.allow_keys) == ("rl", True, ("rollout_fn",))
    assert settings.check_options()["known_keys"] == frozenset({"rollout_fn"})
    assert find_settings(str(tmp_path.parent)) == CheckSettings()


def test_the_section_is_chosen_by_the_file_unless_a_setting_names_it(tmp_path: Path) -> None:
    from agent_rollout.config import AUTO_SECTION

    assert CheckSettings().section is AUTO_SECTION
    assert CheckSettings().check_options()["section"] is AUTO_SECTION
    folder = project(tmp_path, "strict = true\n")
    assert find_settings(str(folder)).section is AUTO_SECTION  # not set: the default
    assert "section" not in find_settings(str(folder)).explicit


def test_empty_section_is_the_top_level_and_settings_merge_on_top(tmp_path: Path) -> None:
    folder = project(tmp_path, 'section = ""\nyaml-version = "1.2"\n')
    settings = find_settings(str(folder))
    assert (settings.section, settings.yaml_version) == (None, "1.2")
    assert settings.explicit == {"section", "yaml_version"}
    over = settings.merged({"yaml_version": "1.1", "skip_unrelated": True})
    assert (over.section, over.yaml_version, over.skip_unrelated) == (None, "1.1", True)


def test_client_names_in_any_case() -> None:
    values, problems = settings_values(
        {"yamlVersion": "1.2", "skip_unrelated": True, "allowKeys": ["a"]}
    )
    assert problems == []
    assert values == {"yaml_version": "1.2", "skip_unrelated": True, "allow_keys": ("a",)}


@pytest.mark.parametrize(
    ("table", "where", "fact"),
    [
        ('yaml-versoin = "1"\n', "tool.agent-rollout.yaml-versoin", "mean 'yaml-version'"),
        ("yaml-version = 1.2\n", "tool.agent-rollout.yaml-version", "must be '1.1' or '1.2'"),
        ('strict = "yes"\n', "tool.agent-rollout.strict", "must be true or false"),
        ("allow-keys = [1]\n", "tool.agent-rollout.allow-keys", "list of keys"),
    ],
)
def test_a_bad_setting_is_an_error_at_its_line(
    tmp_path: Path, table: str, where: str, fact: str
) -> None:
    folder = project(tmp_path, table)
    with pytest.raises(ConfigError) as caught:
        find_settings(str(folder))
    issue = caught.value.issues[0]
    assert (issue.path, issue.line, issue.location, issue.kind) == (
        str(tmp_path / "pyproject.toml"),
        5,
        where,
        "settings",
    )
    assert fact in issue.message


def test_settings_are_read_again_when_the_file_changes(tmp_path: Path) -> None:
    folder = project(tmp_path, 'section = "a"\n')
    assert find_settings(str(folder)).section == "a"
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.agent-rollout]\nsection = "bb"\n', encoding="utf-8")
    assert find_settings(str(folder)).section == "bb"


def test_check_reads_the_settings_and_its_options_win(cli: Cli, tmp_path: Path) -> None:
    folder = project(tmp_path, 'section = "rl"\nstrict = true\n')
    config = folder / "c.yaml"
    config.write_text("rl:\n  rollout_backend: art\n", encoding="utf-8")
    done = cli("check", str(config))
    assert done.code == 1  # strict: the warning fails
    assert ": warning: rl.rollout_func:" in done.out
    assert cli("check", "--section", "training", str(config)).out.startswith(
        f"{config}:1:1: training: section 'training' is missing"
    )
    assert "training" in cli("check", "--isolated", str(config)).out


def test_check_exits_2_on_a_bad_setting(cli: Cli, tmp_path: Path) -> None:
    folder = project(tmp_path, "strictt = true\n")
    config = folder / "c.yaml"
    config.write_text("training:\n  rollout_backend: art\n", encoding="utf-8")
    done = cli("check", str(config))
    assert done.code == 2
    where = f"{tmp_path / 'pyproject.toml'}:5:1: tool.agent-rollout.strictt: unknown setting"
    assert where in done.err
