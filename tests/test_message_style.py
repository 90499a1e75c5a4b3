"""One message style (issue 45: 5 and 6), through the installed ``agent-rollout`` command.

Every line a command prints about a problem, and its summary, has one of the shapes of
``_errors.MESSAGE_SHAPES`` (docs/messages.md holds the same table): the command named
once (``agent-rollout COMMAND: ``), a file's path first where the line is about a file
(relative to the current folder when the package found it there), the reason in words
(never ``[Errno 2]``), no ``error:`` word, one install hint. Each case runs the
``agent-rollout`` script pip installed beside this Python, on this tree's package
(``cli_env``), in a folder of its own, on both engines where the engine reads the file;
a missing package is really missing from the import (a ``sitecustomize`` that blocks it,
first on ``PYTHONPATH``). Then ``check --strict``: the lines and the summary say what
fails the run and where strictness came from, and ``--format github`` annotates it as
``::error`` with the span ``--format json`` gives.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from agent_rollout._errors import BAD_ROW_KINDS, FILE_MESSAGES, ROW_MESSAGES
from agent_rollout._extras import install_hint, pip_command
from agent_rollout.cli import COMMANDS
from agent_rollout.cli._lines import MESSAGE_SHAPES
from support import cli_env

REPO = Path(__file__).resolve().parent.parent
SHAPES = {shape.name: re.compile(shape.pattern) for shape in MESSAGE_SHAPES}

WARNED = "training:\n  rollout_backend: art\n  rollout_func: m:f\n  rollout_group_size: '8'\n"
"""A valid config with one warning: a quoted number."""
BAD_ROWS = '{"prompt": "a"}\n{"prompt": "b"\n{"x": 1}\n{"prompt": [1, 2\n'
"""One good row; a line cut short inside an object, a row without a prompt, a line cut
short inside an array."""


def installed() -> Path:
    """The ``agent-rollout`` script pip installed beside this Python."""
    script = Path(sys.executable).parent / "agent-rollout"
    if not script.exists():
        pytest.skip("the agent-rollout command is not installed beside this Python")
    return script


def command(
    folder: Path, *args: str, engine: Optional[str] = None, blocked: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``agent-rollout ARGS...`` run in ``folder``; ``blocked``: packages that cannot be
    imported in it (``sys.modules[name] = None`` from a ``sitecustomize``: ``import``
    fails, ``find_spec`` finds nothing)."""
    extra = None
    if blocked:
        extra = folder / "blocker"
        extra.mkdir(exist_ok=True)
        lines = [f"sys.modules[{name!r}] = None" for name in blocked]
        (extra / "sitecustomize.py").write_text("import sys\n" + "\n".join(lines) + "\n")
    return subprocess.run(
        [str(installed()), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=cli_env(engine, extra) | {"COLUMNS": "100"},
        timeout=60,
        check=False,
    )


def shaped(text: str, shape: str, /, **parts: str) -> None:
    """The line ``text`` has the shape ``shape``, with these parts."""
    found = SHAPES[shape].fullmatch(text)
    assert found is not None, f"not a {shape!r} line: {text!r}"
    assert {key: found.group(key) for key in parts} == parts, text


def usage_then(err: str) -> str:
    """The line after argparse's usage block (the usage, wrapped, is shaped too)."""
    *usage, last = err.splitlines()
    assert usage and all(SHAPES["usage"].fullmatch(line) for line in usage), err
    return last


def no_old_style(text: str, folder: Path) -> None:
    """What one style rules out, anywhere in the output."""
    assert "[Errno" not in text and "Traceback" not in text, text
    assert "agent-rollout: agent-rollout" not in text, text
    assert not re.search(r"^agent-rollout(?: [a-z]+)?: error: ", text, re.MULTILINE), text
    assert str(folder) not in text, text  # paths under the current folder: relative


# ---- the table, in code and in docs -------------------------------------------------------------


def test_the_docs_hold_the_table_of_the_code() -> None:
    doc = (REPO / "docs" / "messages.md").read_text(encoding="utf-8")
    for shape in MESSAGE_SHAPES:
        assert f"`{shape.written}`".replace("|", "\\|") in doc, shape.name  # escaped in a table
        assert SHAPES[shape.name].fullmatch(shape.example), shape.name


def test_every_kind_of_bad_row_has_a_name_for_the_summary() -> None:
    assert set(ROW_MESSAGES) | {"json_syntax", "utf8"} <= set(BAD_ROW_KINDS)
    assert set(BAD_ROW_KINDS) - set(ROW_MESSAGES) <= set(FILE_MESSAGES)


# ---- check --------------------------------------------------------------------------------------


def test_check_lines(tmp_path: Path) -> None:
    done = command(tmp_path, "check", "nope.yaml")
    assert done.returncode == 2
    first, summary = done.stdout.splitlines()
    shaped(first, "config issue", path="nope.yaml", message="cannot read file: "
           "No such file or directory")  # fmt: skip
    shaped(summary, "summary", verb="checked")
    (tmp_path / "syntax.yaml").write_text("training:\n  rollout_backend: [\n")
    done = command(tmp_path, "check", "syntax.yaml")
    assert done.returncode == 1
    shaped(done.stdout.splitlines()[0], "config issue", path="syntax.yaml", line="2")
    no_old_style(done.stdout + done.stderr, tmp_path)


def test_a_bad_setting_is_named_by_its_path_from_here(tmp_path: Path) -> None:
    """Named relative to the current folder, however the config was named (the absolute
    path here): the file was found, not typed."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.agent-rollout]\nstrictt = true\n")
    (sub / "c.yaml").write_text(WARNED)
    done = command(tmp_path, "check", str(sub / "c.yaml"))
    assert done.returncode == 2
    issue, said = done.stderr.splitlines()
    shaped(issue, "config issue", path="sub/pyproject.toml", line="2", col="1")
    shaped(said, "command", command="check", message="bad settings in pyproject.toml")
    no_old_style(done.stderr, tmp_path)


def test_settings_not_utf8_read_as_a_config_does(tmp_path: Path) -> None:
    """A ``pyproject.toml`` that is not UTF-8 is said as a config that is not (review 45b):
    the byte and where it is, not Python's codec text."""
    sub = tmp_path / "g"
    sub.mkdir()
    (sub / "pyproject.toml").write_bytes(b"[tool.agent-rollout]\nstrict = true\n# \xc3(\n")
    (sub / "c.yaml").write_text(WARNED)
    (tmp_path / "bad8.yaml").write_bytes(b"training:\n  x: \xff\n")
    done = command(tmp_path, "check", "g/c.yaml")
    assert done.returncode == 2
    issue, said = done.stderr.splitlines()
    assert said == "agent-rollout check: bad settings in pyproject.toml"
    assert issue == "g/pyproject.toml:3:3: not UTF-8: byte 0xc3", done.stderr
    config = command(tmp_path, "check", "bad8.yaml").stdout.splitlines()[0]
    assert config == "bad8.yaml:2:6: not UTF-8: byte 0xff"


@pytest.mark.parametrize(
    ("args", "name", "message"),
    [
        (("check",), "check", "the following arguments are required: PATH"),
        (("check", "--format", "xml", "c.yaml"), "check", None),
        (("demo", "--rows", "0"), "demo", "argument --rows: must be in [1, 10,000,000], got 0"),
        (("normalise", "--max-rows", "x", "in.jsonl"), "normalise", None),
        (("stats",), "stats", "the following arguments are required: FILE"),
        (("nope",), None, None),
        # An unknown option is the command's usage error, not agent-rollout's (review 45b).
        (("demo", "--rows", "10", "--bogus"), "demo", "unrecognized arguments: --bogus"),
        (("normalise", "u.jsonl", "--bogus"), "normalise", "unrecognized arguments: --bogus"),
        (("lsp", "--bogus", "x"), "lsp", "unrecognized arguments: --bogus x"),
        # run's own usage errors, after its usage as argparse's (review 45b).
        (("run",), "run", "give a CONFIG file, or --example NAME for a bundled one"),
        (
            ("run", "c.yaml", "--example", "nemo_gym"),
            "run",
            "give a CONFIG file or --example nemo_gym, not both",
        ),
    ],
)
def test_usage_errors(
    tmp_path: Path, args: tuple[str, ...], name: Optional[str], message: Optional[str]
) -> None:
    done = command(tmp_path, *args)
    assert done.returncode == 2
    found = SHAPES["command"].fullmatch(usage_then(done.stderr))
    assert found is not None, done.stderr
    assert found.group("command") == name
    assert message is None or found.group("message") == message
    no_old_style(done.stderr, tmp_path)


def test_usage_errors_of_a_command_itself(tmp_path: Path) -> None:
    done = command(tmp_path, "check", "--fix", "-")
    assert done.returncode == 2
    shaped(done.stderr.strip(), "command", command="check")
    done = command(tmp_path, "schema", "--vscode", "--glob", "a.toml")
    assert done.returncode == 2
    shaped(done.stderr.strip(), "command", command="schema")


# ---- files: named first, the reason in words ---------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("normalise", "nope.jsonl"),
        ("normalise", "nope.jsonl", "-o", "x.jsonl"),
        ("stats", "nope.jsonl"),
    ],
)
def test_a_missing_input_reads_as_checks(
    engine: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """As ``check nope.yaml``'s line: the path, ``cannot read file``, the reason in words."""
    done = command(tmp_path, *args, engine=engine)
    assert done.returncode == 2
    shaped(done.stderr.strip(), "file", path="nope.jsonl",
           message="cannot read file: No such file or directory")  # fmt: skip
    no_old_style(done.stderr, tmp_path)


def test_files_run_and_schema_cannot_use(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(WARNED)
    done = command(tmp_path, "run", "c.yaml", "--prompts", "nope.jsonl")
    assert done.returncode == 2
    shaped(done.stderr.strip(), "file", path="nope.jsonl",
           message="cannot read file: No such file or directory")  # fmt: skip
    (tmp_path / "folder").mkdir()
    done = command(tmp_path, "schema", "-o", "folder")
    assert done.returncode == 2
    shaped(done.stderr.strip(), "file", path="folder", message="cannot write file: Is a directory")
    (tmp_path / "in.jsonl").write_text('{"prompt": "a"}\n')
    done = command(tmp_path, "normalise", "in.jsonl", "-o", "gone/out.jsonl")
    assert done.returncode == 2
    shaped(done.stderr.strip(), "file", path="gone/out.jsonl",
           message="cannot write file: No such file or directory")  # fmt: skip
    no_old_style(done.stderr, tmp_path)


def test_bad_rows_say_what_happened_and_are_counted_by_kind(engine: str, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(BAD_ROWS)
    done = command(tmp_path, "normalise", "bad.jsonl", "-o", "out.jsonl", engine=engine)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 4, done.stderr
    shaped(lines[0], "file line", path="bad.jsonl", line="2", col="15",
           message="invalid JSON: the line ends inside an object")  # fmt: skip
    shaped(lines[1], "file line", path="bad.jsonl", line="3")
    shaped(lines[2], "file line", path="bad.jsonl", line="4", col="17",
           message="invalid JSON: the line ends inside an array")  # fmt: skip
    shaped(lines[3], "file", path="bad.jsonl",
           message="3 bad rows of 4 (invalid JSON: 2, prompt missing: 1); nothing written "
           "(--skip-bad writes the good rows)")  # fmt: skip
    stats = command(tmp_path, "stats", "bad.jsonl", engine=engine)
    assert stats.returncode == 1
    assert "\nbad rows: 3 (invalid JSON: 2, prompt missing: 1); " in stats.stdout
    no_old_style(done.stderr + stats.stdout, tmp_path)


# ---- a missing package: the command once, one hint --------------------------------------------


@pytest.mark.parametrize(
    ("args", "blocked", "extra"),
    [
        (("normalise", "in.jsonl", "-o", "x.parquet"), ("pyarrow",), "arrow"),
        (("stats", "x.parquet"), ("pyarrow",), "arrow"),
        (("run", "--example", "nemo_gym", "-o", "x.parquet"), ("pyarrow",), "arrow"),
        (("lsp",), ("pygls",), "lsp"),
    ],
)
def test_a_missing_package_names_the_command_once(
    tmp_path: Path, args: tuple[str, ...], blocked: tuple[str, ...], extra: str
) -> None:
    (tmp_path / "in.jsonl").write_text('{"prompt": "a"}\n')
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    done = command(tmp_path, *args, blocked=blocked)
    assert done.returncode == 2, done.stderr
    shaped(done.stderr.strip(), "missing package", command=args[0],
           message=f"{blocked[0]} is not installed", hint=install_hint(extra))  # fmt: skip
    no_old_style(done.stderr, tmp_path)


def test_the_readme_gives_the_hint_the_command_gives() -> None:
    """The README installs the extra from a clone (``.[lsp]``) and names the packages the
    command names wherever it runs: one hint, two places (docs/messages.md says why)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cli_section = " ".join(readme.split("## The command line", 1)[1].split("\n## ", 1)[0].split())
    assert "pip install '.[lsp]'" in cli_section
    assert pip_command("lsp") in cli_section


# ---- -V, and --help texts that start alike -----------------------------------------------------


def test_dash_v_is_version(tmp_path: Path) -> None:
    short, long = command(tmp_path, "-V"), command(tmp_path, "--version")
    assert (short.returncode, short.stdout, short.stderr) == (0, long.stdout, "")
    assert short.stdout.startswith("agent-rollout ")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_descriptions_start_alike(tmp_path: Path, name: str) -> None:
    """Each command's summary (``agent-rollout --help``) is a verb phrase; its own
    ``--help`` description starts with the same verb, capitalised, and is a sentence."""
    verb = COMMANDS[name].split()[0]
    assert verb.islower() and not COMMANDS[name].endswith(".")
    done = command(tmp_path, name, "--help")
    assert done.returncode == 0
    description = done.stdout.split("\n\n")[1]
    assert description.split()[0] == verb.capitalize(), description
    assert description.rstrip().endswith("."), description


# ---- check --strict (issue 45: 6) ---------------------------------------------------------------


def strict_project(tmp_path: Path) -> None:
    """``sub/c.yaml`` (one warning) under a ``pyproject.toml`` that says ``strict = true``,
    and ``c.yaml`` (the same) with none."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.agent-rollout]\nstrict = true\n")
    (sub / "c.yaml").write_text(WARNED)
    (tmp_path / "c.yaml").write_text(WARNED)


def test_strict_lines_and_summary_say_what_fails_and_why(tmp_path: Path) -> None:
    strict_project(tmp_path)
    loose = command(tmp_path, "check", "c.yaml")
    assert loose.returncode == 0
    issue, summary = loose.stdout.splitlines()
    shaped(issue, "config issue", path="c.yaml", level="warning: ")
    assert summary == "checked 1 file: 1 valid, 0 invalid, 0 errors, 1 warning"
    flag = command(tmp_path, "check", "--strict", "c.yaml")
    assert flag.returncode == 1
    issue, summary = flag.stdout.splitlines()
    shaped(issue, "config issue", path="c.yaml", level="error (strict): ")
    assert summary == (
        "checked 1 file: 0 valid, 1 invalid, 0 errors, 1 warning; --strict: 1 warning fails the run"
    )
    settings = command(tmp_path, "check", "sub/c.yaml")
    assert settings.returncode == 1
    issue, summary = settings.stdout.splitlines()
    shaped(issue, "config issue", path="sub/c.yaml", level="error (strict): ")
    assert summary.endswith("; strict = true in sub/pyproject.toml: 1 warning fails the run")


def test_strict_in_github_annotations_and_json(tmp_path: Path) -> None:
    strict_project(tmp_path)
    report = json.loads(command(tmp_path, "check", "--format", "json", "sub/c.yaml").stdout)
    assert (report["strict"], report["strict_source"]) == (True, "sub/pyproject.toml")
    [warning] = report["files"][0]["warnings"]
    # The issue's own severity, whatever the run; whether it fails is the run's.
    assert (warning["severity"], warning["fails"]) == ("warning", True)
    loose = json.loads(command(tmp_path, "check", "--format", "json", "c.yaml").stdout)
    assert (loose["strict"], loose["strict_source"]) == (False, None)
    assert loose["files"][0]["warnings"][0]["fails"] is False
    github = command(tmp_path, "check", "--format", "github", "sub/c.yaml")
    annotation, summary = github.stdout.splitlines()
    shaped(annotation, "annotation", level="error", path="sub/c.yaml",
           line=str(warning["line"]), end_line=str(warning["end_line"]),
           col=str(warning["col"]), end_col=str(warning["end_col"]),
           title="agent-rollout check (strict)")  # fmt: skip
    assert warning["end_col"] > warning["col"]  # a span, not a point
    shaped(summary, "summary", verb="checked")
    annotation = command(tmp_path, "check", "--format", "github", "c.yaml").stdout.splitlines()[0]
    shaped(annotation, "annotation", level="warning", title="agent-rollout check")
