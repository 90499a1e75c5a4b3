"""`agent-rollout check` and `agent-rollout schema`, run in process (``cli.main``).

Standard input, the 2 MiB stdin limit and the imports of a fresh interpreter
need a real ``python -m agent_rollout`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_rollout.cli.check import github_annotation
from agent_rollout.config import ConfigIssue
from support import PACKAGE_ROOT, Cli, CliResult, cli_argv, cli_env, cli_process


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
        f"::error file={files['bad']},line=2,col=20,title=agent-rollout check::"
    )
    assert first.endswith("valid: art, nemo_gym, openenv, ruler")


def test_github_escaping() -> None:
    issue = ConfigIssue("a,b:c%.yaml", 3, 4, "training.x", "100% bad\r\nnext, line: here", "value")
    assert github_annotation(issue) == (
        "::error file=a%2Cb%3Ac%25.yaml,line=3,col=4,title=agent-rollout check::"
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
        "checked 1 file: 0 valid, 1 invalid, 0 errors, 1 warning"
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
    assert github[0].startswith(f"::warning file={path},line=1,col=1,title=agent-rollout check::")


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
    assert done.out.splitlines() == [
        f"{typo}:1:1: training: section 'training' is missing (expected a mapping of "
        "training settings)",
        "checked 6 files: 1 valid, 1 invalid, 1 error, 4 skipped (not training configs)",
    ]
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
    assert cli("check", str(directory)).code == 2  # a directory is no file either
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
    assert schema["required"] == ["training"]
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

    proc = subprocess.Popen(
        cli_argv("check", "-"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdin is not None
    try:
        try:
            proc.stdin.write(b"# padding\n" * (2 * MAX_CONFIG_BYTES // 10))
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it stopped reading: what we want
        proc.wait(timeout=30)  # stdin is still open: only a bounded read returns
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    assert proc.returncode == 1, out
    assert out.splitlines()[0] == (
        f"<stdin>:1:1: larger than the {MAX_CONFIG_BYTES:,}-byte limit (stopped reading there)"
    )


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
