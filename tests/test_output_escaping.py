"""User text in the command line's output: one line per issue, and no CI workflow command.

GitHub Actions reads every line a step prints (split at CR and LF) and runs
it as a workflow command when, after leading white space, it starts with
``::`` (``::warning``, ``::add-mask::``, ``::stop-commands::``), or when it
holds ``##[`` anywhere (the legacy form). Keys, values and file names come
from files a pull request may write, so each printer shows them through
``agent_rollout._errors.printable``: these tests feed hostile ones to
``check`` (every format), ``normalise`` (errors and summary), ``run``
(errors and summary), argparse and the progress line.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import RolloutDrop, register_rollout_runner, unregister_rollout_runner
from agent_rollout._errors import printable
from agent_rollout.backends._ranking import BackendRows
from agent_rollout.backends._report import report_note
from agent_rollout.cli._progress import Progress
from agent_rollout.config import check_file
from support import BUNDLED_PROMPTS, Cli, cli_process

# Each a workflow command once its line breaks are taken literally (or, for ##[, as it is).
INJECTIONS = [
    "x\n::warning file=evil.py,line=1::injected",
    "y\r::add-mask::secret",
    "z\u2028::stop-commands::token",
    "w\x85::error::c1 next line",
    "v\r\n  ::notice::indented",
    "u ##[error]legacy anywhere in a line",
    "t\x1b[2J\x07",
]
HOSTILE_NAME = "cfg\n::warning::x"
"""A file name (without its suffix) that is a workflow command from its second line on."""

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""The bidirectional controls: shown as they are, they reorder the rest of a terminal line."""


def safe_lines(text: str, annotations: bool = False) -> list[str]:
    """The lines of ``text`` (which ends with a newline), checked to be safe in a CI log.

    Split as ``str.splitlines`` splits (CR, LF and every Unicode line break),
    so that a break left in makes one line more than the caller expects.
    With ``annotations``, a line of ``--format github``'s own (``::error``,
    ``::warning`` at the start) is allowed; no other line may start a command.
    """
    assert text.endswith("\n"), text
    lines = text.splitlines()
    for line in lines:
        assert not _UNSAFE.search(line), line
        assert not BIDI.search(line), line
        assert "##[" not in line, line
        if annotations and re.match(r"::(error|warning) file=", line):
            continue
        assert not line.lstrip().startswith("::"), line
    return lines


# ---- printable -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x00\x1b[31m\x7f", "\\x00\\x1b[31m\\x7f"),
        ("c1 \x85 \x9b", "c1 \\x85 \\x9b"),
        ("a\u2028b\u2029c", "a\\u2028b\\u2029c"),
        ("\u202eRTL \u202a\u202b\u202c\u202d", "\\u202eRTL \\u202a\\u202b\\u202c\\u202d"),
        (
            "\u2066i\u2069 \u2067\u2068 \u200e\u200f\u061c",
            "\\u2066i\\u2069 \\u2067\\u2068 \\u200e\\u200f\\u061c",
        ),
        ("byte \udcff, surrogate \ud800", "byte \\xff, surrogate \\ud800"),
        ("see ##[error]x", "see ##\\x5berror]x"),
        ("::warning::x", "\\x3a:warning::x"),
        ("  \u3000::add-mask::x", "  \u3000\\x3a:add-mask::x"),
        ("mid::line::is fine", "mid::line::is fine"),
        ("é, 日本, 🎉, a\u200db", "é, 日本, 🎉, a\u200db"),
    ],
)
def test_printable_escapes_what_a_log_must_not_hold(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown  # applying it again changes nothing more


@pytest.mark.parametrize("text", INJECTIONS)
def test_printable_is_one_safe_line(text: str) -> None:
    assert safe_lines(printable(text) + "\n") == [printable(text)]
    assert safe_lines(printable("::" + text) + "\n") == [printable("::" + text)]


# ---- check -----------------------------------------------------------------------------------


def hostile_config(folder: Path, name: str = HOSTILE_NAME) -> Path:
    """A YAML config whose keys and values are the injections, in a file named ``name``."""
    lines = ["training:", "  rollout_backend: art", "  rollout_func: m:f"]
    for text in INJECTIONS:
        quoted = json.dumps(text)  # a YAML double-quoted scalar: the same escapes as JSON
        lines += [f"  {quoted}: 1", f"  {quoted}: 2"]  # a duplicate key, at its position
        lines.append(f"  {json.dumps('rollout_' + text)}: {quoted}")  # an unknown key of ours
    lines.append(f"  rollout_max_steps: {json.dumps(INJECTIONS[0])}")  # a bad value
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def issues_of(path: Path) -> int:
    result = check_file(path)
    return len(result.issues) + len(result.warnings)


@pytest.mark.parametrize("name", [HOSTILE_NAME, "::error::named", " ::warning::spaced", "ok"])
def test_check_text_prints_one_safe_line_per_issue(
    name: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = hostile_config(tmp_path, name)
    monkeypatch.chdir(tmp_path)  # a relative name starts each line
    done = cli("check", config.name)
    assert done.code == 1, done.err
    lines = safe_lines(done.out)
    expected = issues_of(config)
    assert expected > len(INJECTIONS)  # a duplicate of each, and the bad value
    assert len(lines) == expected + 1  # every issue, then the summary
    assert all(line.startswith(printable(config.name) + ":") for line in lines[:-1])
    assert lines[-1].startswith("checked 1 file: 0 valid, 1 invalid, ")
    # The duplicate key is named as it is, escaped, not dropped.
    assert "duplicate key 'x\\n::warning file=evil.py,line=1::injected'" in done.out


def test_check_shows_bidirectional_controls_escaped(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key whose right-to-left override, shown as it is, would print the rest of the
    # issue's line reversed (and hide what follows it); the file's name holds a mark.
    key = json.dumps("\u202eevil\u2066x\u2069")
    config = tmp_path / "bidi\u200f.yaml"
    lines = ["training:", "  rollout_backend: art", "  rollout_max_steps: x"]
    config.write_text("\n".join([*lines, f"  {key}: 1", f"  {key}: 2"]) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = cli("check", config.name)
    assert done.code == 1, done.err
    issues = safe_lines(done.out)[:-1]
    assert issues and all(line.startswith("bidi\\u200f.yaml:") for line in issues)
    assert "training.\\u202eevil\\u2066x\\u2069: duplicate key " in done.out


def test_check_github_annotations_stay_one_line_each(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = hostile_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = cli("check", "--format", "github", config.name)
    assert done.code == 1
    lines = safe_lines(done.out, annotations=True)
    assert len(lines) == issues_of(config) + 1
    for annotation in lines[:-1]:
        # The file is named exactly, in GitHub's own escapes (%0A for its line break).
        assert re.match(
            r"::(error|warning) file=cfg%0A%3A%3Awarning%3A%3Ax\.yaml,line=", annotation
        )


def test_check_json_is_lossless_and_safe(cli: Cli, tmp_path: Path) -> None:
    config = hostile_config(tmp_path)
    done = cli("check", "--format", "json", str(config))
    assert done.code == 1
    safe_lines(done.out)
    report = json.loads(done.out)
    assert report["files"][0]["path"] == str(config)
    found = report["files"][0]
    locations = {issue["location"] for issue in found["errors"] + found["warnings"]}
    assert {f"training.{text}" for text in INJECTIONS} <= locations  # the keys as they are


def test_check_shows_an_undecodable_file_name_as_bytes(tmp_path: Path) -> None:
    # A real process: its standard output encodes strictly (no surrogates), as in CI.
    name = os.fsdecode(b"bad\xff.yaml")
    (tmp_path / name).write_text("training:\n  rollout_backend: nope\n", encoding="utf-8")
    done = cli_process("check", str(tmp_path / name))
    out = done.stdout.decode("utf-8")
    assert done.returncode == 1, done.stderr
    assert out.startswith(f"{tmp_path}/bad\\xff.yaml:2:20: training.rollout_backend: ")


def test_usage_errors_show_arguments_escaped(cli: Cli, tmp_path: Path) -> None:
    done = cli("check", str(tmp_path / "a.yaml"), "--bogus\n::warning::argv")
    assert done.code == 2
    lines = safe_lines(done.err)
    assert lines[-1] == "agent-rollout check: unrecognized arguments: --bogus\\n::warning::argv"


# ---- normalise -------------------------------------------------------------------------------


def test_normalise_errors_name_a_hostile_file_on_one_line(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    source = tmp_path / f"{HOSTILE_NAME}.jsonl"
    source.write_text('{"prompt": "ok"}\n{"prompt": 1}\n', encoding="utf-8")
    done = cli("normalise", str(source))
    assert done.code == 1
    # Every bad row, then the count: each line names the file, escaped.
    summary = f"{printable(str(source))}: 1 bad row of 2"
    left = "; no row written after the first bad one (--skip-bad writes the good rows)"
    assert safe_lines(done.err) == [
        f"{printable(str(source))}:2: row 1: prompt: must be a str or a list of chat messages, "
        "got 'int'",
        f"{summary} (prompt of a wrong type: 1){left}",
    ]
    source.write_text('{"prompt": "ok"}\n{"prompt": \n', encoding="utf-8")
    done = cli("normalise", str(source))
    assert done.code == 1
    assert safe_lines(done.err) == [
        f"{printable(str(source))}:2:12: invalid JSON: the line ends inside an object",
        f"{summary} (invalid JSON: 1){left}",
    ]


def test_normalise_io_errors_and_summary_name_a_hostile_output_on_one_line(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"prompt": "ok"}\n', encoding="utf-8")
    missing = tmp_path / f"{HOSTILE_NAME}" / "out.jsonl"
    done = cli("normalise", str(source), "-o", str(missing))
    assert done.code == 2
    (line,) = safe_lines(done.err)
    assert line == f"{printable(str(missing))}: cannot write file: No such file or directory"
    out = tmp_path / f"{HOSTILE_NAME}.jsonl"
    done = cli("normalise", str(source), "-o", str(out))
    assert done.code == 0, done.err
    (line,) = safe_lines(done.err)
    assert line.startswith("normalised 1 row in, 1 row out, ")
    assert line.endswith(f" -> {printable(str(out))}")
    assert out.read_text(encoding="utf-8") == '{"prompt":"ok"}\n'


def test_normalise_shows_an_undecodable_file_name_as_bytes(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    source = tmp_path / os.fsdecode(b"in\xff.jsonl")
    source.write_text("{}\n", encoding="utf-8")
    done = cli("normalise", str(source))
    assert done.code == 1, done.err
    assert safe_lines(done.err) == [
        f"{tmp_path}/in\\xff.jsonl:1: row 0: prompt: missing "
        "(every row needs a 'prompt': a str or a list of chat messages)",
        f"{tmp_path}/in\\xff.jsonl: 1 bad row of 1 (prompt missing: 1); no row written after "
        "the first bad one (--skip-bad writes the good rows)",
    ]
    done = cli("normalise", str(tmp_path / os.fsdecode(b"gone\xff.jsonl")))
    assert done.code == 2
    (line,) = safe_lines(done.err)
    assert line == f"{tmp_path}/gone\\xff.jsonl: cannot read file: No such file or directory"


# ---- run -------------------------------------------------------------------------------------


@pytest.fixture
def gym_config(tmp_path: Path) -> Path:
    config = tmp_path / "gym.yaml"
    config.write_text("training:\n  rollout_backend: nemo_gym\n", encoding="utf-8")
    return config


def test_run_config_errors_one_line_per_issue(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = hostile_config(tmp_path, "::error::named")
    monkeypatch.chdir(tmp_path)
    done = cli("run", config.name, "--prompts", str(BUNDLED_PROMPTS))
    assert done.code == 1
    lines = safe_lines(done.err)
    assert len(lines) == len(check_file(config).issues)
    assert all(line.startswith("\\x3a:error::named.yaml:") for line in lines)


def test_run_io_errors_name_a_hostile_file_on_one_line(
    gym_config: Path, cli: Cli, tmp_path: Path
) -> None:
    prompts = tmp_path / f"{HOSTILE_NAME}.jsonl"
    done = cli("run", str(gym_config), "--prompts", str(prompts))
    assert done.code == 2
    (line,) = safe_lines(done.err)
    assert line == f"{printable(str(prompts))}: cannot read file: No such file or directory"
    prompts.write_text('"ok"\n{"bad": \n', encoding="utf-8")
    done = cli("run", str(gym_config), "--prompts", str(prompts))
    assert done.code == 1
    assert safe_lines(done.err) == [
        f"{printable(str(prompts))}:2:9: invalid JSON: the line ends inside an object"
    ]


def test_run_summary_lines_stay_one_each(gym_config: Path, cli: Cli, tmp_path: Path) -> None:
    def runner(**kwargs: Any) -> BackendRows:
        report_note(f"note {INJECTIONS[2]}")
        drops = [RolloutDrop(index, "tie", text) for index, text in enumerate(INJECTIONS)]
        fields = {text: 1 for text in INJECTIONS[:3]}
        return BackendRows([{"prompt": "p", "answer": "a"}], drops, fields)

    out = tmp_path / f"{HOSTILE_NAME}.jsonl"
    register_rollout_runner("nemo_gym", runner)
    try:
        done = cli("run", str(gym_config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(out))
    finally:
        unregister_rollout_runner("nemo_gym")
    assert done.code == 0, done.err
    lines = safe_lines(done.err)
    # The summary, 5 drops shown and a line for the rest, 3 fields, the note.
    assert len(lines) == 1 + 5 + 1 + 3 + 1, lines
    assert lines[0].startswith("ran nemo_gym rollout: 6 seed prompts, 1 row, 7 prompts dropped")
    assert lines[0].endswith(f" -> {printable(str(out))}")
    assert lines[1] == f"  dropped prompt 0: tie: {printable(INJECTIONS[0])}"
    assert lines[-1] == f"  note {printable(INJECTIONS[2])}"


def test_run_backend_failure_keeps_its_lines_but_none_is_a_command(
    gym_config: Path, cli: Cli
) -> None:
    def runner(**kwargs: Any) -> BackendRows:
        raise RuntimeError("fell over; log tail:\n::error::from the log\n  ##[error]legacy\nend")

    register_rollout_runner("nemo_gym", runner)
    try:
        done = cli("run", str(gym_config), "--prompts", str(BUNDLED_PROMPTS))
    finally:
        unregister_rollout_runner("nemo_gym")
    assert done.code == 2
    assert safe_lines(done.err) == [
        "agent-rollout run: rollout backend 'nemo_gym' failed: RuntimeError: fell over; log tail:",
        "\\x3a:error::from the log",
        "  ##\\x5berror]legacy",
        "end (set AGENT_ROLLOUT_DEBUG=1 for a traceback)",
    ]


# ---- the progress line -----------------------------------------------------------------------


def test_progress_line_shows_a_status_escaped() -> None:
    stream = io.StringIO()
    progress = Progress("run", stream=stream, enabled=True, interval=0.0)
    progress.update(1, status=f"rollout {INJECTIONS[0]}", force=True)
    drawn = stream.getvalue()
    assert "\n" not in drawn
    assert printable(INJECTIONS[0]) in drawn


def test_check_fix_and_diff_print_the_files_lines_and_names_escaped(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        'note: "a\n  ::warning file=evil.py,line=1::injected"\n# ##[warning]legacy\n'
        'training:\n  rollout_backend: openenv\n  rollout_max_steps: "8"\n'
    )
    config = tmp_path / f"{HOSTILE_NAME}.yaml"
    config.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # A diff holds the file's lines as they are (escaped, it would not apply): under
    # GitHub Actions it is printed between ::stop-commands:: and the end token, and its
    # name in the --- and +++ lines is quoted on one line, as git quotes it.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    diff = cli("check", "--diff", config.name)
    assert diff.code == 1, diff.err
    safe_lines(diff.err)
    stop, *inside, resume = diff.out.splitlines()
    token = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", stop)
    assert token is not None and resume == f"::{token.group(1)}::"
    assert f"::{token.group(1)}::" not in inside
    assert " # ##[warning]legacy" in inside  # data, unescaped
    headers = [line for line in inside if line.startswith(("--- ", "+++ "))]
    assert safe_lines("\n".join(headers) + "\n") == [
        '--- "cfg\\n::warning::x.yaml"',
        '+++ "cfg\\n::warning::x.yaml"',
    ]
    fixed = cli("check", "--fix", config.name)
    assert fixed.code == 0, fixed.err
    (line, *_) = safe_lines(fixed.out)
    assert line.startswith(printable(config.name) + ":") and ": fixed: " in line
