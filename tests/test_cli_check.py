"""`agent-rollout check` and `agent-rollout schema`, run in process (``cli.main``).

Standard input, the 2 MiB stdin limit and the imports of a fresh interpreter
need a real ``python -m agent_rollout`` process.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.cli.check import github_annotation
from agent_rollout.config import ConfigIssue
from support import PACKAGE_ROOT, Cli, CliResult, cli_argv, cli_env, cli_process, started


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.yaml"
    good.write_text("training:\n  rollout_backend: art\n  rollout_func: m:f\n", encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  rollout_backend: verl\n  rollout_fucn: m:f\n", encoding="utf-8")
    toml = tmp_path / "good.toml"
    toml.write_text('[training]\nrollout_backend = "nemo_gym"\n', encoding="utf-8")
    return {"good": good, "bad": bad, "toml": toml}


def test_all_valid_exits_0_with_a_summary(cli: Cli, files: dict[str, Path]) -> None:
    done = cli("check", str(files["good"]), str(files["toml"]))
    assert done.code == 0, done.err
    assert done.out == "checked 2 files: 2 valid, 0 invalid, 0 errors\n"


def test_text_format_lists_positioned_errors_then_the_summary(
    cli: Cli, files: dict[str, Path]
) -> None:
    done = cli("check", str(files["good"]), str(files["bad"]))
    assert done.code == 1
    bad = files["bad"]
    assert done.out.splitlines() == [
        f"{bad}:2:20: training.rollout_backend: rollout_backend='verl' is not supported; "
        "valid: art, nemo_gym, openenv, ruler",
        f"{bad}:3:3: training.rollout_fucn: unknown key 'rollout_fucn'; "
        "did you mean 'rollout_func'?",
        "checked 2 files: 1 valid, 1 invalid, 2 errors",
    ]


def test_json_format_is_one_report(cli: Cli, files: dict[str, Path]) -> None:
    done = cli("check", "--format", "json", str(files["good"]), str(files["bad"]))
    assert done.code == 1
    report = json.loads(done.out)
    assert report["valid"] is False
    assert report["summary"] == {
        "files": 2,
        "valid": 1,
        "invalid": 1,
        "skipped": 0,
        "errors": 2,
        "warnings": 0,
    }
    assert [entry["valid"] for entry in report["files"]] == [True, False]
    first = report["files"][1]["errors"][0]
    assert (first["line"], first["col"], first["kind"]) == (2, 20, "value")


def test_github_format_annotations(cli: Cli, files: dict[str, Path]) -> None:
    done = cli("check", "--format", "github", str(files["bad"]))
    assert done.code == 1
    first = done.out.splitlines()[0]
    assert first.startswith(
        f"::error file={files['bad']},line=2,endLine=2,col=20,endColumn=24,"
        "title=agent-rollout check::"
    )
    assert first.endswith("valid: art, nemo_gym, openenv, ruler")


def test_github_escaping() -> None:
    issue = ConfigIssue("a,b:c%.yaml", 3, 4, "training.x", "100% bad\r\nnext, line: here", "value")
    assert github_annotation(issue) == (
        "::error file=a%2Cb%3Ac%25.yaml,line=3,endLine=3,col=4,endColumn=4,"
        "title=agent-rollout check::"
        "training.x: 100%25 bad%0D%0Anext, line: here"
    )


def test_stdin_with_its_format_flag() -> None:
    # Standard input is the real process's: a real process.
    done = cli_process("check", "-", stdin=b"training:\n  rollout_backend: nope\n")
    assert done.returncode == 1
    assert done.stdout.decode().startswith("<stdin>:2:20: training.rollout_backend:")
    done = cli_process(
        "check",
        "--stdin-format",
        "json",
        "-",
        stdin=b'{"training": {"rollout_backend": "nemo_gym"}}',
    )
    assert done.returncode == 0, done.stdout
    done = cli_process(
        "check", "--stdin-format", "toml", "-", stdin=b"[training]\nrollout_backend = 3\n"
    )
    assert done.returncode == 1
    assert done.stdout.decode().startswith(
        "<stdin>:2:19: training.rollout_backend: rollout_backend must"
    )


def test_section_flag(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  rollout_backend: nemo_gym\n", encoding="utf-8")
    assert cli("check", "--section", "rl", str(path)).code == 0
    done = cli("check", str(path))
    assert done.code == 1
    assert "no rollout settings found" in done.out and "--section rl" in done.out
    done = cli("check", "--section", "training", str(path))  # named: looked for there only
    assert "section 'training' is missing" in done.out
    flat = tmp_path / "flat.json"
    flat.write_text('{"rollout_backend": "art", "rollout_func": "m:f"}', encoding="utf-8")
    assert cli("check", "--section", "", str(flat)).code == 0


def test_usage_errors_exit_2(cli: Cli, files: dict[str, Path]) -> None:
    assert cli("check").code == 2
    assert cli("check", "--format", "xml", str(files["good"])).code == 2


WARNED = "training:\n  rollout_backend: ruler\n  rollout_judge_model: j\n"


def test_warnings_pass_unless_strict(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "ruler.yaml"
    path.write_text(WARNED, encoding="utf-8")
    done = cli("check", str(path))
    assert done.code == 0, done.out
    assert done.out.splitlines() == [
        f"{path}:1:1: warning: training.rollout_func: rollout_func is not set: the built-in "
        "'ruler' adapter needs it (a runner registered with register_rollout_runner may not)",
        "checked 1 file: 1 valid, 0 invalid, 0 errors, 1 warning",
    ]
    strict = cli("check", "--strict", str(path))
    assert strict.code == 1
    assert strict.out.splitlines()[-1] == (
        "checked 1 file: 0 valid, 1 invalid, 0 errors, 1 warning; --strict: 1 warning fails the run"
    )


def test_warnings_in_json_and_github(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "ruler.yaml"
    path.write_text(WARNED, encoding="utf-8")
    report = json.loads(cli("check", "--format", "json", str(path)).out)
    assert report["valid"] is True and report["summary"]["warnings"] == 1
    [entry] = report["files"]
    assert entry["errors"] == []
    [warning] = entry["warnings"]
    assert (warning["severity"], warning["kind"], warning["location"]) == (
        "warning",
        "incomplete",
        "training.rollout_func",
    )
    strict = json.loads(cli("check", "--strict", "--format", "json", str(path)).out)
    assert strict["valid"] is False and strict["files"][0]["valid"] is False
    github = cli("check", "--format", "github", str(path)).out.splitlines()
    assert github[0].startswith(
        f"::warning file={path},line=1,endLine=1,col=1,endColumn=9,title=agent-rollout check::"
    )


def test_yaml_version_flag_and_warnings(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "training:\n  rollout_backend: nemo_gym\n  rollout_max_steps: 010\n", encoding="utf-8"
    )
    done = cli("check", str(path))
    assert done.code == 0, done.out
    assert done.out.splitlines() == [
        f"{path}:3:22: warning: training.rollout_max_steps: '010' reads as int 8 under YAML 1.1 "
        "(yaml.safe_load, as trainers read it) and as int 10 under YAML 1.2 (YAML editors and "
        "1.2 loaders); quote it, or write it so that both read it alike",
        "checked 1 file: 1 valid, 0 invalid, 0 errors, 1 warning",
    ]
    assert cli("check", "--strict", str(path)).code == 1
    report = json.loads(cli("check", "--format", "json", str(path)).out)
    assert report["files"][0]["warnings"][0]["kind"] == "yaml_version"
    # The reading decides the value: 0o10 is a string to YAML 1.1, 8 to YAML 1.2.
    path.write_text(
        "training:\n  rollout_backend: nemo_gym\n  rollout_max_steps: 0o10\n", encoding="utf-8"
    )
    assert cli("check", str(path)).code == 1
    assert cli("check", "--yaml-version", "1.2", str(path)).code == 0
    assert cli("check", "--yaml-version", "1.3", str(path)).code == 2


def test_allow_key_declares_the_trainers_own_keys(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "training:\n  rollout_backend: nemo_gym\n  rollout_sources: [a, b]\n", encoding="utf-8"
    )
    done = cli("check", str(path))
    assert done.code == 1
    assert "unknown key 'rollout_sources'; did you mean 'rollout_source'?" in done.out
    assert cli("check", "--allow-key", "rollout_sources", str(path)).code == 0
    both = cli("check", "--allow-key", "x", "--allow-key", "rollout_sources", str(path))
    assert both.code == 0


def test_dotted_section(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trainer:\n  rl:\n    lr: 1\n    rollout_backend: verl\n", encoding="utf-8")
    done = cli("check", "--section", "trainer.rl", str(path))
    assert done.code == 1
    assert done.out.startswith(f"{path}:4:22: trainer.rl.rollout_backend: ")
    done = cli("check", "--section", "trainer.rollout", str(path))
    assert done.out.startswith(f"{path}:1:1: trainer.rollout: section 'trainer.rollout' is")


def test_skip_unrelated_files(cli: Cli, tmp_path: Path) -> None:
    workflow = tmp_path / "ci.yaml"
    workflow.write_text("on: push\njobs:\n  test:\n    runs-on: x\n", encoding="utf-8")
    package = tmp_path / "package.json"
    package.write_text('{"name": "x", "scripts": {"t": "jest"}}', encoding="utf-8")
    tagged = tmp_path / ".gitlab-ci.yml"
    tagged.write_text("a: !reference [b, c]\n", encoding="utf-8")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n', encoding="utf-8")
    typo = tmp_path / "typo.yaml"  # the section is misspelt but rollout keys are there
    typo.write_text("trainig:\n  rollout_backend: art\n", encoding="utf-8")
    good = tmp_path / "good.yaml"
    good.write_text("training:\n  rollout_backend: nemo_gym\n", encoding="utf-8")
    files = [str(p) for p in (workflow, package, tagged, pyproject, typo, good)]
    done = cli("check", "--skip-unrelated", *files)
    assert done.code == 1
    lines = done.out.splitlines()
    assert len(lines) == 2
    assert (
        lines[0].startswith(f"{typo}:1:1: no rollout settings found")
        and "--section trainig" in lines[0]
    )
    assert (
        lines[1] == "checked 6 files: 1 valid, 1 invalid, 1 error, 4 skipped (not training configs)"
    )
    report = json.loads(cli("check", "--skip-unrelated", "--format", "json", *files).out)
    assert [entry["skipped"] for entry in report["files"]] == [True] * 4 + [False] * 2
    assert report["summary"]["skipped"] == 4
    # Without the flag they are errors, as before.
    assert cli("check", str(workflow)).code == 1


def test_unreadable_files_exit_2_like_normalise(
    cli: Cli, files: dict[str, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.yaml"
    done = cli("check", str(files["bad"]), str(missing), str(files["good"]))
    assert done.code == 2
    lines = done.out.splitlines()
    # The other files are still checked and reported.
    assert f"{missing}:1:1: cannot read file: No such file or directory" in lines
    assert lines[-1] == "checked 3 files: 1 valid, 2 invalid, 3 errors"
    # Missing is missing, whatever the suffix: not "unsupported file type", not exit 1.
    for name in ("missing.txt", "missing", ""):
        path = str(tmp_path / name) if name else name
        done = cli("check", path)
        assert done.code == 2, (name, done.out)
        assert done.out.startswith(f"{path}:1:1: cannot read file: No such file or directory\n")
    directory = tmp_path / "dir.yaml"
    directory.mkdir()
    done = cli("check", str(directory))  # a folder: its config files (none here)
    assert (done.code, done.out) == (0, "checked 0 files: 0 valid, 0 invalid, 0 errors\n")
    assert "no .yaml, .yml, .json or .toml file in" in done.err
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.yaml"
        os.mkfifo(fifo)
        done = cli("check", str(fifo))
        assert done.code == 2
        assert "it is a FIFO, not a regular file" in done.out


def test_resolve_imports_and_checks_the_function(
    cli: Cli, tmp_path: Path, user_modules: Callable[[Path], Path]
) -> None:
    (tmp_path / "user_rollouts.py").write_text(
        "def good(prompts):\n    return []\n"
        "def two_args(a, b):\n    return []\n"
        "def art_style(model, prompt):\n    return None\n"
        "not_callable = 3\n",
        encoding="utf-8",
    )
    user_modules(tmp_path)  # what `python -m` run from tmp_path would import
    config = tmp_path / "c.yaml"

    def check(func: str, *flags: str) -> CliResult:
        config.write_text(
            f"training:\n  rollout_backend: openenv\n  rollout_func: {func}\n", encoding="utf-8"
        )
        return cli("check", *flags, str(config))

    assert check("user_rollouts:missing").code == 0  # not imported without --resolve
    assert check("user_rollouts:good", "--resolve").code == 0
    art = tmp_path / "art.yaml"
    art.write_text(
        "training:\n  rollout_backend: art\n  rollout_func: user_rollouts:art_style\n",
        encoding="utf-8",
    )
    assert cli("check", "--resolve", str(art)).code == 0
    art.write_text(art.read_text(encoding="utf-8").replace("art_style", "good"), encoding="utf-8")
    done = cli("check", "--resolve", str(art))
    assert done.code == 1
    assert "cannot be called as fn(model, prompt)" in done.out
    for func, needle in (
        ("user_rollouts:missing", "has no attribute 'missing'"),
        ("user_rollouts:not_callable", "not callable"),
        ("user_rollouts:two_args", "cannot be called as fn(prompts) with the seed prompts"),
        ("user_rollouts:art_style", "cannot be called as fn(prompts)"),
        ("no_such_module_xyz:f", "could not be imported"),
    ):
        done = check(func, "--resolve")
        assert done.code == 1, func
        assert done.out.startswith(f"{config}:3:17: training.rollout_func: "), done.out
        assert needle in done.out


def test_schema_command_prints_and_writes(cli: Cli, tmp_path: Path) -> None:
    done = cli("schema")
    assert done.code == 0
    schema = json.loads(done.out)
    # By default, check's reading: the training section if present, else the top level.
    assert schema["if"]["required"] == ["training"]
    assert schema["then"]["properties"]["training"] == {"$ref": "#/definitions/rollout_settings"}
    assert cli("schema", "--section", "training").out != done.out
    out = tmp_path / "s.json"
    assert cli("schema", "--section", "rl", "-o", str(out)).code == 0
    assert json.loads(out.read_text(encoding="utf-8"))["required"] == ["rl"]
    done = cli("schema", "-o", str(tmp_path / "no" / "dir" / "s.json"))
    assert done.code == 2
    assert "cannot write" in done.err
    done = cli("schema", "-o", "")  # a usage error, as for normalise and run
    assert (done.code, done.out) == (2, "")
    assert "argument -o/--output: expected a file name, got ''" in done.err


def test_check_imports_stay_light() -> None:
    code = (
        "import sys, argparse\n"
        "import agent_rollout.cli.check as c, agent_rollout.cli.schema as s\n"
        "heavy = [m for m in ('pydantic', 'yaml', 'jsonschema') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_pre_commit_hook_manifest() -> None:
    import yaml

    manifest = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"
    hooks = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    assert [hook["id"] for hook in hooks] == ["agent-rollout-check"]
    hook = hooks[0]
    assert hook["entry"] == "agent-rollout check --skip-unrelated"
    assert hook["language"] == "python"
    assert set(hook["types_or"]) == {"yaml", "json", "toml"}


def test_schema_vscode_settings(cli: Cli, tmp_path: Path) -> None:
    done = cli("schema", "--vscode")
    assert done.code == 0, done.err
    settings = json.loads(done.out)
    path = "./schema/training-config.schema.json"
    assert settings == {
        "yaml.schemas": {path: ["configs/**/*.yaml", "configs/**/*.yml"]},
        "json.schemas": [{"fileMatch": ["configs/**/*.json"], "url": path}],
    }
    custom = json.loads(
        cli("schema", "--vscode", "--schema-path", "s.json", "--glob", "rl/*.yml").out
    )
    assert custom == {"yaml.schemas": {"s.json": ["rl/*.yml"]}}
    toml = cli("schema", "--vscode", "--glob", "rl/*.toml")
    assert toml.code == 2 and "#:schema" in toml.err


def test_bundled_example_has_a_modeline_that_resolves(cli: Cli) -> None:
    example = PACKAGE_ROOT / "agent_rollout" / "examples" / "grpo.yaml"
    first = example.read_text(encoding="utf-8").splitlines()[0]
    prefix = "# yaml-language-server: $schema="
    assert first.startswith(prefix)
    assert cli("check", str(example)).code == 0
    repo = Path(__file__).resolve().parent.parent
    if PACKAGE_ROOT != repo / "python":
        pytest.skip("an installed package: the modeline's relative path points into a clone")
    target = (example.parent / first[len(prefix) :]).resolve()
    repo_schema = repo / "schema" / "training-config.schema.json"
    assert target == repo_schema.resolve() and target.is_file()


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("deep.toml", "x = " + "[" * 1000 + "]" * 1000 + "\n", ":1:"),
        ("deep2.toml", "x = " + "{a = " * 1000 + "1" + "}" * 1000 + "\n", ":1:"),
        ("hex.yaml", "training:\n  rollout_max_steps: 0x" + "f" * 4000 + "\n", ":2:22:"),
        (
            "alias.yaml",
            "\n".join(
                ["a0: &a0 [1]"]
                + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 1500)]
                + ["training: {rollout_max_steps: *a1499}"]
            ),
            ":201:7:",
        ),
    ],
)
def test_hostile_configs_are_positioned_errors_not_tracebacks(
    cli: Cli, tmp_path: Path, name: str, text: str, where: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = cli("check", str(path))
    assert done.code == 1, done.err
    assert "internal error" not in done.err and "Traceback" not in done.err
    assert done.out.startswith(f"{path}{where}")


def test_stdin_over_the_size_limit_is_refused_without_reading_to_the_end() -> None:
    # Standard input that never ends (a pipe kept open after 2 MiB): check stops
    # reading past the limit and reports it, instead of waiting for EOF with
    # everything held in memory.
    from agent_rollout._limits import MAX_CONFIG_BYTES

    with started(
        cli_argv("check", "-"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(b"# padding\n" * (2 * MAX_CONFIG_BYTES // 10))
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it stopped reading: what we want
        proc.wait(timeout=30)  # stdin is still open: only a bounded read returns
        out = proc.stdout.read().decode()
    assert proc.returncode == 1, out
    assert out.splitlines()[0] == (
        f"<stdin>:1:1: larger than the {MAX_CONFIG_BYTES:,}-byte limit (stopped reading there)"
    )


def test_reader_leaving_early_is_not_an_internal_error(tmp_path: Path) -> None:
    # A real process: its standard output is a pipe the reader closes (`| head -1`)
    # long before the report (about 400 kB, past any pipe buffer) is written.
    many = tmp_path / "many.yaml"
    many.write_text("training:\n" + "  rollout_backend: art\n" * 3000, encoding="utf-8")
    with started(
        cli_argv("check", str(many)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env()
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
    assert first.startswith(str(many).encode())
    assert "internal error" not in err and "Traceback" not in err


def test_resolve_of_a_module_that_exits_is_an_error_not_a_silent_pass(
    cli: Cli, tmp_path: Path, user_modules: Callable[[Path], Path]
) -> None:
    # A module calling sys.exit(0) while imported used to end check with status 0
    # and no report, other files' errors included.
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    exits = tmp_path / "exits.yaml"
    exits.write_text(
        "training:\n  rollout_backend: openenv\n  rollout_func: quits:f\n", encoding="utf-8"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  rollout_backend: nope\n", encoding="utf-8")
    user_modules(tmp_path)
    done = cli("check", "--resolve", str(exits), str(bad))
    assert done.code == 1, done.out + done.err
    lines = done.out.splitlines()
    assert lines[0] == (f"{exits}:3:17: training.rollout_func: importing it raised SystemExit(0)")
    assert lines[1].startswith(f"{bad}:2:20: training.rollout_backend: ")
    assert lines[-1] == "checked 2 files: 0 valid, 2 invalid, 2 errors"


# ---- flat configs (no training section), --resolve from the current folder ------------------

TRL_FLAT = (
    "model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\n"
    "learning_rate: 1.0e-6\n"
    "num_generations: 8\n"
    "per_device_train_batch_size: 4\n"
    "rollout_backend: openenv\n"
    "rollout_func: mypkg.roll:run\n"
)
AXOLOTL_FLAT = (
    "base_model: Qwen/Qwen2.5-0.5B\n"
    "rl: grpo\n"
    "trl:\n"
    "  beta: 0.001\n"
    "  rollout_func: my_mod.fn\n"  # axolotl's own TRL setting, not ours
    "datasets:\n"
    "  - path: openai/gsm8k\n"
    "rollout_backend: art\n"
    "rollout_func: mypkg.roll:run\n"
)


@pytest.mark.parametrize("text", [TRL_FLAT, AXOLOTL_FLAT], ids=["trl", "axolotl"])
def test_flat_trainer_configs_pass_by_default(cli: Cli, tmp_path: Path, text: str) -> None:
    path = tmp_path / "trainer.yaml"
    path.write_text(text, encoding="utf-8")
    done = cli("check", str(path))
    assert (done.code, done.out) == (0, "checked 1 file: 1 valid, 0 invalid, 0 errors\n")
    report = json.loads(cli("check", "--format", "json", str(path)).out)
    assert report["files"][0]["section"] == ""  # the top level was read
    # A section named on the command line is the only place looked at, as before.
    named = cli("check", "--section", "training", str(path))
    assert named.code == 1
    assert "training: section 'training' is missing" in named.out


def test_json_says_which_section_was_read(cli: Cli, tmp_path: Path) -> None:
    nested = tmp_path / "nested.yaml"
    nested.write_text("training:\n  rollout_backend: nemo_gym\n", encoding="utf-8")
    flat = tmp_path / "flat.toml"
    flat.write_text('lr = 1\nrollout_backend = "nemo_gym"\n', encoding="utf-8")
    neither = tmp_path / "neither.json"
    neither.write_text('{"lr": 1}', encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text("a:\n  b:\n    rollout_backend: nemo_gym\n", encoding="utf-8")
    done = cli("check", "--format", "json", str(nested), str(flat), str(neither))
    assert [entry["section"] for entry in json.loads(done.out)["files"]] == [
        "training",
        "",
        None,
    ]
    done = cli("check", "--format", "json", "--section", "a.b", str(other))
    assert json.loads(done.out)["files"][0]["section"] == "a.b"
    # Where neither place holds rollout settings: which places were looked at, and --section.
    text = cli("check", str(neither), str(other)).out
    assert f"{neither}:1:1: no rollout settings found: looked for a 'training' section" in text
    assert "--section (section= in Python" in text
    assert "'a.b' holds rollout keys: --section a.b" in text


def test_a_training_key_that_is_no_mapping_beside_flat_keys_is_the_trainers(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("training: true\nrollout_backend: nemo_gym\n", encoding="utf-8")
    assert cli("check", str(path)).code == 0
    path.write_text("training:\nlr: 1\n", encoding="utf-8")  # no flat keys: the section it is
    assert "training: section must be a mapping, got null" in cli("check", str(path)).out


def test_pyproject_section_is_kept_and_an_empty_one_is_the_top_level(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agent-rollout]\nsection = "training"\n', encoding="utf-8"
    )
    flat = tmp_path / "flat.yaml"
    flat.write_text(TRL_FLAT, encoding="utf-8")
    assert "section 'training' is missing" in cli("check", str(flat)).out
    assert cli("check", "--isolated", str(flat)).code == 0


def test_resolve_keeps_what_the_module_prints_off_the_report(
    cli: Cli, tmp_path: Path, user_modules: Callable[[Path], Path]
) -> None:
    (tmp_path / "chatty_rollouts.py").write_text(
        "print('loading chatty_rollouts')\ndef run(prompts):\n    return []\n",
        encoding="utf-8",
    )
    user_modules(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text(
        "training:\n  rollout_backend: openenv\n  rollout_func: chatty_rollouts:run\n",
        encoding="utf-8",
    )
    done = cli("check", "--resolve", "--format", "json", str(config))
    assert done.code == 0, done.err
    report = json.loads(done.out)  # one JSON document: nothing of the module's in it
    assert report["valid"] and report["files"][0]["errors"] == []
    assert "loading chatty_rollouts" in done.err


def test_resolve_imports_from_the_current_folder_first(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "roll.py").write_text(
        "def run(prompts):\n    return []\n\ndef _private(prompts):\n    return []\n",
        encoding="utf-8",
    )
    config = tmp_path / "trainer.yaml"
    text = "training:\n  rollout_backend: openenv\n  rollout_func: mypkg.roll:run\n"
    config.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path and "" not in sys.path[:1]
    try:
        done = cli("check", "--resolve", "trainer.yaml")
        assert (done.code, done.out) == (0, "checked 1 file: 1 valid, 0 invalid, 0 errors\n")
        # Did-you-mean from the module's public callables (run, not _private).
        config.write_text(text.replace("roll:run", "roll:runn"), encoding="utf-8")
        done = cli("check", "--resolve", "trainer.yaml")
        assert done.code == 1
        assert done.out.startswith("trainer.yaml:3:17: training.rollout_func: rollout_func ")
        assert "has no attribute 'runn'; did you mean 'run'?" in done.out
        config.write_text(text.replace("roll:run", "roll:_privat"), encoding="utf-8")
        assert "did you mean" not in cli("check", "--resolve", "trainer.yaml").out
        # A flat config: the key is placed at the top level.
        config.write_text(TRL_FLAT.replace("roll:run", "roll:runn"), encoding="utf-8")
        done = cli("check", "--resolve", "trainer.yaml")
        assert done.out.startswith("trainer.yaml:6:15: rollout_func: rollout_func ")
    finally:
        for name in ("mypkg", "mypkg.roll"):
            sys.modules.pop(name, None)


def test_backend_did_you_mean(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("training:\n  rollout_backend: open_env\n", encoding="utf-8")
    done = cli("check", str(path))
    assert done.code == 1
    assert f"{path}:2:20: training.rollout_backend: rollout_backend='open_env' is not" in done.out
    assert done.out.splitlines()[0].endswith("; did you mean 'openenv'?")


# ---- folders ---------------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


FOLDER = {
    "a.yaml": "training:\n  rollout_backend: nemo_gym\n",
    "sub/b.toml": '[training]\nrollout_backend = "verl"\n',
    "sub/deeper/c.json": '{"rollout_backend": "nemo_gym"}',
    "sub/notes.txt": "rollout_backend: verl\n",  # not a suffix check reads
    "package.json": '{"name": "x"}',  # not a training config: skipped, counted
    "sub/.pre-commit-config.yaml": "repos: []\n",
    ".venv/lib/bad.yaml": "training:\n  rollout_backend: verl\n",  # never walked into
    "node_modules/x/bad.json": '{"rollout_backend": "verl"}',
    "out/ignored.yaml": "training:\n  rollout_backend: verl\n",
    "ignored.yml": "training:\n  rollout_backend: verl\n",
}


def test_a_folder_is_its_config_files(cli: Cli, tmp_path: Path) -> None:
    _tree(tmp_path, FOLDER)
    done = cli("check", "--format", "json", str(tmp_path))
    report = json.loads(done.out)
    paths = [entry["path"] for entry in report["files"]]
    # Outside a git work tree nothing is ignored; ruff's excluded folders are not walked.
    assert paths == [
        str(tmp_path / name)
        for name in (
            "a.yaml",
            "ignored.yml",
            "package.json",
            "out/ignored.yaml",
            "sub/.pre-commit-config.yaml",
            "sub/b.toml",
            "sub/deeper/c.json",
        )
    ]
    assert report["summary"] == {
        "files": 7,
        "valid": 2,
        "invalid": 3,
        "skipped": 2,
        "errors": 3,
        "warnings": 0,
    }
    assert done.code == 1
    # A file named on the command line is checked whatever its folder, skipped or not.
    bad = tmp_path / ".venv" / "lib" / "bad.yaml"
    assert cli("check", str(bad)).code == 1
    assert cli("check", str(tmp_path / "package.json")).code == 1  # named: not skipped


def test_a_folder_skips_files_without_settings_or_our_keys(cli: Cli, tmp_path: Path) -> None:
    """A model card (``training: true``) and an OpenRLHF config (its own ``rollout_*`` key)
    are not training configs of ours: skipped in a folder and by --skip-unrelated."""
    _tree(
        tmp_path,
        {
            "card.yaml": "name: m\ntraining: true\n",
            "openrlhf.yaml": "rollout_batch_size: 512\n",
            "good.yaml": FOLDER["a.yaml"],
        },
    )
    done = cli("check", str(tmp_path))
    assert (done.code, done.out) == (
        0,
        "checked 3 files: 1 valid, 0 invalid, 0 errors, 2 skipped (not training configs)\n",
    )
    named = [str(tmp_path / name) for name in ("card.yaml", "openrlhf.yaml")]
    assert cli("check", "--skip-unrelated", *named).code == 0
    assert cli("check", *named).code == 1  # named without the flag: errors, as before


def test_a_folder_in_a_git_work_tree_leaves_out_what_git_ignores(cli: Cli, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _tree(tmp_path, {**FOLDER, ".gitignore": "out/\nignored.yml\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    done = cli("check", "--format", "json", str(tmp_path / "sub"), str(tmp_path))
    report = json.loads(done.out)
    # sub's files first, each file once; what .gitignore names left out.
    assert [entry["path"] for entry in report["files"]] == [
        str(tmp_path / name)
        for name in (
            "sub/.pre-commit-config.yaml",
            "sub/b.toml",
            "sub/deeper/c.json",
            "a.yaml",
            "package.json",
        )
    ]
    assert (report["summary"]["valid"], report["summary"]["skipped"]) == (2, 2)
    # A tracked file is not ignored, as git has it.
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "ignored.yml"], check=True, timeout=60)
    done = cli("check", str(tmp_path))
    assert "ignored.yml:2:20:" in done.out and "out/ignored.yaml" not in done.out


def _git(*args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        timeout=60,
        capture_output=True,
    )


def test_a_submodule_keeps_git_ignores_for_the_whole_folder(cli: Cli, tmp_path: Path) -> None:
    """git refuses a path inside a submodule (exit 128): those files are asked of the
    submodule's own repository, and the rest keep the outer repository's ignores; a
    nested repository the outer one ignores is left out whole."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    bad = "training:\n  rollout_backend: verl\n"
    other, outer = tmp_path / "other", tmp_path / "outer"
    _tree(other, {".gitignore": "sub_ignored.yaml\n", "kept.yaml": bad})
    _git("init", "-q", str(other))
    _git("-C", str(other), "add", ".")
    _git("-C", str(other), "commit", "-q", "-m", "first")
    _tree(
        outer,
        {
            ".gitignore": "ignored.yaml\nvendor/\n",
            "a.yaml": bad,
            "ignored.yaml": bad,
            "vendor/lib/x.yaml": bad,  # a clone of its own, in a folder the outer ignores
        },
    )
    _git("init", "-q", str(outer))
    _git("init", "-q", str(outer / "vendor" / "lib"))
    _git("-C", str(outer), "-c", "protocol.file.allow=always", "submodule", "add", str(other), "sm")
    (outer / "sm" / "sub_ignored.yaml").write_text(bad, encoding="utf-8")
    done = cli("check", "--format", "json", str(outer))
    assert [entry["path"] for entry in json.loads(done.out)["files"]] == [
        str(outer / "a.yaml"),
        str(outer / "sm" / "kept.yaml"),
    ]


def test_each_file_is_checked_once_whatever_the_order_and_spelling(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named twice, named and under a folder given, or reached through a symbolic link:
    one check, under the first spelling; --fix and --diff fix it once."""
    _tree(tmp_path, {"sub/bad.yaml": "training:\n  rollout_backnd: nemo_gym\n"})
    monkeypatch.chdir(tmp_path)
    try:
        os.symlink(os.path.join("sub", "bad.yaml"), "link.yaml")
    except (OSError, NotImplementedError):
        pytest.skip("no symbolic links here")
    summary = "checked 1 file: 0 valid, 1 invalid, 1 error"
    for args, shown in (
        (["sub", "sub/bad.yaml"], "sub/bad.yaml"),
        (["sub/bad.yaml", "sub"], "sub/bad.yaml"),
        (["link.yaml", "sub"], "link.yaml"),
        (["sub/bad.yaml", "sub/bad.yaml"], "sub/bad.yaml"),
        (["sub/bad.yaml", "./sub/../link.yaml"], "sub/bad.yaml"),
    ):
        done = cli("check", *args)
        lines = done.out.splitlines()
        assert lines[-1] == summary, args
        assert [line.split(":")[0] for line in lines[:-1]] == [shown], args
    diff = cli("check", "--diff", "link.yaml", "sub/bad.yaml", "sub")
    assert diff.err == "would fix 1 issue in 1 file\n"
    fixed = cli("check", "--fix", "sub/bad.yaml", "link.yaml")
    assert "fixed 1 issue in 1 file" in fixed.out.splitlines()
    assert fixed.out.splitlines()[-1] == "checked 1 file: 1 valid, 0 invalid, 0 errors"


def test_a_folder_given_as_dot_shows_relative_paths(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"a.yaml": FOLDER["a.yaml"], "sub/b.toml": FOLDER["sub/b.toml"]})
    monkeypatch.chdir(tmp_path)
    done = cli("check", ".")
    assert done.out.splitlines() == [
        "sub/b.toml:2:19: training.rollout_backend: rollout_backend='verl' is not supported; "
        "valid: art, nemo_gym, openenv, ruler",
        "checked 2 files: 1 valid, 1 invalid, 1 error",
    ]


def test_a_subfolder_that_cannot_be_read_is_a_usage_error(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"a.yaml": FOLDER["a.yaml"], "locked/b.yaml": FOLDER["a.yaml"]})
    locked = tmp_path / "locked"
    scandir = os.scandir

    def no_entry(path: Any) -> Any:  # as for a folder of mode 000 (root reads those)
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", no_entry)
    done = cli("check", str(tmp_path))
    assert done.code == 2
    assert done.out.splitlines() == [
        f"{locked}:1:1: cannot read folder: Permission denied",
        "checked 2 files: 1 valid, 1 invalid, 1 error",
    ]


def test_missing_paths_exit_2_whatever_the_suffix(cli: Cli, tmp_path: Path) -> None:
    for name in ("missing.txt", "missing.yaml", "missing_folder/"):
        done = cli("check", str(tmp_path / name))
        assert done.code == 2, name
        assert "cannot read file: No such file or directory" in done.out


# ---- colour ----------------------------------------------------------------------------------

SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_color_always_paints_the_text_report_and_only_that(
    cli: Cli, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = cli("check", "--color", "never", str(files["bad"]), str(files["good"]))
    monkeypatch.setenv("NO_COLOR", "1")  # --color always overrides it
    painted = cli("check", "--color", "always", str(files["bad"]), str(files["good"]))
    assert painted.code == plain.code == 1
    assert "\x1b[" not in plain.out
    assert f"\x1b[1m{files['bad']}\x1b[0m\x1b[36m:2:20:\x1b[0m" in painted.out
    assert SGR.sub("", painted.out) == plain.out  # the same text, colour codes aside
    for style in ("json", "github"):
        done = cli("check", "--color", "always", "--format", style, str(files["bad"]))
        assert "\x1b" not in done.out, style


def test_color_auto_follows_force_color_no_color_and_the_terminal(
    cli: Cli, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert "\x1b[" not in cli("check", str(files["bad"])).out  # captured: not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in cli("check", str(files["bad"])).out
    assert "\x1b[" not in cli("check", "--color", "never", str(files["bad"])).out

    from agent_rollout.cli._color import use_color

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR")
    assert use_color("auto", Terminal(), {}) is True
    assert use_color("auto", Terminal(), {"NO_COLOR": ""}) is True  # empty: unset
    assert use_color("auto", Terminal(), {"NO_COLOR": "1"}) is False
    assert use_color("auto", Terminal(), {"NO_COLOR": "1", "FORCE_COLOR": "1"}) is True
    assert use_color("auto", io.StringIO(), {}) is False
    assert use_color("always", io.StringIO(), {"NO_COLOR": "1"}) is True
    assert use_color("never", Terminal(), {"FORCE_COLOR": "1"}) is False


def test_color_never_lets_user_text_through_unescaped(cli: Cli, tmp_path: Path) -> None:
    name = tmp_path / "x\x1b[31mred\x07.yaml"
    name.write_text('training:\n  rollout_backend: "\\e[2Jverl"\n', encoding="utf-8")
    done = cli("check", "--color", "always", str(name))
    assert done.code == 1
    shown = done.out.splitlines()[0]
    assert "\\x1b[31mred\\x07.yaml" in shown and "\\x1b[2Jverl" in shown
    # Every escape character left is one of our colour codes.
    assert "\x1b" not in SGR.sub("", shown)
    assert all(
        code in ("\x1b[0m", "\x1b[1m", "\x1b[36m", "\x1b[1;33m") for code in SGR.findall(shown)
    )


SKIP_CORPUS = Path(__file__).resolve().parent / "data" / "skip_corpus"


def test_skip_unrelated_over_the_corpus_reports_ours_only(cli: Cli, tmp_path: Path) -> None:
    """tests/data/skip_corpus (see tests/test_skip_corpus.py): the files that are not
    training configs, JSONC and broken ones included, are skipped; ours are reported."""
    unrelated = sorted(
        p
        for p in (SKIP_CORPUS / "unrelated").rglob("*")
        if p.suffix in (".json", ".yaml", ".yml", ".toml")
    )
    ours = sorted((SKIP_CORPUS / "ours").iterdir())
    done = cli("check", "--skip-unrelated", "--format", "json", *map(str, unrelated + ours))
    report = json.loads(done.out)
    by_path = {Path(entry["path"]): entry for entry in report["files"]}
    assert [p for p in unrelated if not by_path[p]["skipped"]] == []
    assert all(by_path[p]["errors"] == [] for p in unrelated)
    reported = {p.name for p in ours if by_path[p]["errors"]}
    assert reported == {
        "broken.yaml",
        "issue_example.yaml",
        "launch_with_rollout.json",
        "lookalike_only.json",
        "multi_doc.yaml",
        "nested.yaml",
        "torchtitan_ours.toml",
    }
    assert [len(by_path[p]["errors"]) for p in ours if p.name in reported] == [1] * 7
    summary = report["summary"]
    assert (summary["skipped"], summary["valid"], summary["invalid"]) == (len(unrelated), 2, 7)
    # A folder: the same, but for what the walk leaves out (.vscode, as ruff does).
    shutil.copytree(SKIP_CORPUS, tmp_path / "corpus")
    walked = json.loads(cli("check", "--format", "json", str(tmp_path / "corpus")).out)
    assert (walked["summary"]["invalid"], walked["summary"]["errors"]) == (7, 7)
    assert walked["summary"]["skipped"] == len(unrelated) - len(
        list((SKIP_CORPUS / "unrelated" / ".vscode").iterdir())
    )
