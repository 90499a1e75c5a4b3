"""``[tool.agent-rollout]`` in the nearest ``pyproject.toml``: one settings source for
``check`` (and the pre-commit hook) and the language server.
"""

from __future__ import annotations

import sys
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
    assert ": error (strict): rl.rollout_func:" in done.out
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


# ---- how long a section may be (MAX_SECTION_KEYS, MAX_SECTION_LEN) -------------------------

LONG_SECTION = ".".join(["a"] * 20_000)


def test_the_section_limits_and_their_messages() -> None:
    from agent_rollout._limits import (
        MAX_NESTING_DEPTH,
        MAX_SECTION_KEYS,
        MAX_SECTION_LEN,
        check_section,
    )

    assert MAX_SECTION_KEYS == MAX_NESTING_DEPTH - 1 == 199
    assert MAX_SECTION_LEN == 1024
    deepest = ".".join(["a"] * MAX_SECTION_KEYS)
    assert check_section(deepest) == deepest
    with pytest.raises(ValueError) as caught:
        check_section(deepest + ".a")
    assert str(caught.value) == "section must be a dotted path of at most 199 keys, got 200 keys"
    with pytest.raises(ValueError) as caught:
        check_section(LONG_SECTION, "")
    assert str(caught.value) == "must be a dotted path of at most 199 keys, got 20,000 keys"
    with pytest.raises(ValueError) as caught:
        check_section("k" * 1025)
    assert str(caught.value) == "section must be at most 1,024 characters long, got 1,025"


def test_the_deepest_section_a_file_can_hold_is_read_and_one_more_is_refused() -> None:
    from agent_rollout._exceptions import RolloutValueError
    from agent_rollout._limits import MAX_SECTION_KEYS
    from agent_rollout.config import check_bytes

    text = "{a: " * MAX_SECTION_KEYS + "{rollout_backend: art, rollout_func: 'm:f'}" + "}" * 199
    section = ".".join(["a"] * MAX_SECTION_KEYS)
    result = check_bytes(text, section=section)
    assert result.issues == [] and result.section == tuple(section.split("."))
    with pytest.raises(RolloutValueError, match="at most 199 keys, got 200 keys"):
        check_bytes(text, section=section + ".a")


@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
def test_a_section_of_20000_keys_is_refused_at_once(fmt: str) -> None:
    from agent_rollout._exceptions import RolloutValueError
    from agent_rollout.config import check_bytes, fix_text

    text = {"yaml": "a:\n  a: 1\na: 2\n", "json": '{"a": {"a": 1}}', "toml": "[a]\na = 1\n"}[fmt]
    message = "section must be a dotted path of at most 199 keys, got 20,000 keys"
    with pytest.raises(RolloutValueError) as caught:
        check_bytes(text, format=fmt, section=LONG_SECTION)
    assert str(caught.value) == message
    with pytest.raises(RolloutValueError):
        fix_text(text, format=fmt, section=LONG_SECTION)


def test_check_file_refuses_a_long_section_before_reading(tmp_path: Path) -> None:
    from agent_rollout._exceptions import RolloutValueError
    from agent_rollout.config import check_file

    with pytest.raises(RolloutValueError, match="got 20,000 keys"):
        check_file(tmp_path / "missing.yaml", section=LONG_SECTION)


def test_a_long_section_setting_is_an_error_at_its_line(tmp_path: Path) -> None:
    folder = project(tmp_path, f'section = "{LONG_SECTION}"\n')
    with pytest.raises(ConfigError) as caught:
        find_settings(str(folder))
    issue = caught.value.issues[0]
    assert (issue.line, issue.location, issue.kind, issue.message) == (
        5,
        "tool.agent-rollout.section",
        "settings",
        "must be a dotted path of at most 199 keys, got 20,000 keys",
    )
    values, problems = settings_values({"section": "k" * 2000})  # a language client's
    assert values == {}
    assert problems == [("section", "must be at most 1,024 characters long, got 2,000")]


def test_check_refuses_a_long_section_flag_as_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("training:\n  rollout_backend: art\n", encoding="utf-8")
    done = cli("check", "--section", LONG_SECTION, str(config))
    assert done.code == 2
    assert (
        "agent-rollout check: argument --section: must be a dotted path of at most 199 keys, "
        "got 20,000 keys" in done.err
    )
    done = cli("schema", "--section", LONG_SECTION)
    assert done.code == 2 and "argument --section: must be a dotted path" in done.err
    assert cli("check", "--section", "", str(config)).code == 0  # '' is the top level


# ---- how big pyproject.toml may be (MAX_CONFIG_BYTES, as a config) ---------------------------

_PEAK = """
import os, resource, sys
# A process's peak starts at its parent's (Linux keeps it across fork and exec): the
# command runs in a child forked from this fresh interpreter, whose peak is its own.
pid = os.fork()
if pid == 0:
    from agent_rollout.cli import main
    code = main(sys.argv[1:])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(code, peak // 1024 if sys.platform != "darwin" else peak // 1024**2, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="resource is POSIX only")
@pytest.mark.parametrize("which", ["python", "rust"])
def test_a_huge_pyproject_is_refused_unread(tmp_path: Path, which: str) -> None:
    import subprocess

    from support import ENGINES, cli_env

    if which not in ENGINES:
        pytest.skip("the Rust engine is not built")
    project = tmp_path / "pyproject.toml"
    with project.open("wb") as handle:
        handle.truncate(256 * 1024 * 1024)  # sparse: no disk, 256 MiB to a reader
    (tmp_path / "c.yaml").write_text("training:\n  rollout_backend: art\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, "check", "c.yaml"],
        cwd=tmp_path,
        env=cli_env(which),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    code, peak_mib = map(int, done.stdout.split())
    assert code == 2
    # Found, not named, under the current folder: named relative to it.
    assert "\npyproject.toml:1:1: larger than the 1,048,576-byte limit (268,435,456 bytes)" in (
        "\n" + done.stderr
    )
    assert peak_mib < 200  # read whole, it took 550 MB


def test_read_settings_reads_as_the_config_reader_does(tmp_path: Path) -> None:
    from agent_rollout._limits import MAX_CONFIG_BYTES
    from agent_rollout.config import read_settings

    path = tmp_path / "pyproject.toml"
    table = '[tool.agent-rollout]\nsection = "rl"\n'
    path.write_text(table + "#" * (MAX_CONFIG_BYTES - len(table) - 1) + "\n", encoding="utf-8")
    settings = read_settings(str(path))
    assert settings is not None and settings.section == "rl"  # at the limit: read
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    with pytest.raises(ConfigError) as caught:
        read_settings(str(path))
    issue = caught.value.issues[0]
    assert (issue.path, issue.line, issue.col, issue.kind) == (str(path), 1, 1, "settings")
    assert issue.message == "larger than the 1,048,576-byte limit (1,048,577 bytes)"
