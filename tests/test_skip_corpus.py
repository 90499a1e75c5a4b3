"""Files that are not training configs stay quiet; ours are still checked.

The corpus, tests/data/skip_corpus/, holds files a repository of training code
carries: JSONC files of editors (``.vscode/*.json``, ``tsconfig.json``,
``devcontainer.json``: comments and trailing commas, which JSON refuses),
``package.json``, compose files, CI workflows, Kubernetes manifests (two
documents), ``pyproject.toml``, Hugging Face model files, and other trainers'
configs (axolotl, TRL, verl, OpenRLHF, torchtitan, NeMo, DeepSpeed, accelerate)
without a key of ours, each saying "training" somewhere: ``unrelated/``. And
configs with our keys or look-alikes (valid, misspelt, broken, elsewhere):
``ours/``. The skip rule reads keys, never words: with ``skip_unrelated`` (the
language server's default, and ``check``'s in a folder) every unrelated file is
skipped, whole or broken, and every file of ours gets its issues.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent_rollout.config import (
    MAX_CONFIG_BYTES,
    ROLLOUT_KEYS,
    check_bytes,
    check_file,
    format_for_suffix,
    lookalike_key,
)
from agent_rollout.lsp._documents import Document, Documents

CORPUS = Path(__file__).resolve().parent / "data" / "skip_corpus"
UNRELATED = sorted(p for p in (CORPUS / "unrelated").rglob("*") if format_for_suffix(p.name))
OURS: dict[str, list[tuple[int, str]]] = {
    # file: its issues as (line, kind); none has a warning.
    "axolotl_ours.yaml": [],  # ours at the top level; axolotl's trl.rollout_func apart
    "broken.yaml": [(3, "syntax")],
    "issue_example.yaml": [(2, "unknown_key")],  # issue 44's: the look-alike alone
    "launch_with_rollout.json": [(2, "syntax")],  # JSONC holding our keys: refused at its comment
    "lookalike_only.json": [(1, "unknown_key")],
    "multi_doc.yaml": [(4, "syntax")],
    "nested.yaml": [(2, "missing")],  # named in the error: --section trainer.rollout
    "torchtitan_ours.toml": [(6, "unknown_key")],
    "trl_flat.yaml": [],
}


def relative(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def test_the_corpus_is_what_the_tests_say() -> None:
    assert sorted(p.name for p in (CORPUS / "ours").iterdir()) == sorted(OURS)
    assert len(UNRELATED) >= 25
    for path in UNRELATED:
        text = path.read_text(encoding="utf-8")
        assert "training" in text.lower(), path  # the word that made the old rule report
        assert format_for_suffix(path.name) is not None, path
    # JSONC (comments, trailing commas) is among them, and JSON refuses it.
    jsonc = [".vscode/launch.json", ".vscode/settings.json", "tsconfig.json"]
    for name in jsonc:
        refused = check_file(CORPUS / "unrelated" / name)
        assert [issue.kind for issue in refused.issues] == ["syntax"], name


@pytest.mark.parametrize("path", UNRELATED, ids=relative)
def test_an_unrelated_file_is_skipped(path: Path) -> None:
    result = check_file(path, skip_unrelated=True)
    assert (result.skipped, result.issues, result.warnings) == (True, [], [])
    text = path.read_text(encoding="utf-8")
    fmt = format_for_suffix(path.name)
    assert fmt is not None
    in_memory = check_bytes(text, format=fmt, source=str(path), skip_unrelated=True)
    assert (in_memory.skipped, in_memory.issues, in_memory.warnings) == (True, [], [])


@pytest.mark.parametrize("name", sorted(OURS))
def test_a_config_of_ours_is_checked(name: str) -> None:
    result = check_file(CORPUS / "ours" / name, skip_unrelated=True)
    assert not result.skipped
    assert [(issue.line, issue.kind) for issue in result.issues] == OURS[name]
    assert result.warnings == []
    assert check_file(CORPUS / "ours" / name).issues == result.issues  # the flag changes nothing


def server_check(path: Path) -> tuple[bool, list[tuple[int, str]]]:
    """How the language server checks an open document, with the defaults it applies
    (``skip_unrelated`` unless a setting says otherwise): (skipped, issues)."""
    problems: list[str] = []
    documents = Documents(lambda document, checked: None, problems.append)
    fmt = format_for_suffix(path.name)
    text = path.read_text(encoding="utf-8")
    checked = documents.check(Document(path.as_uri(), fmt, text, 1), text, 1)
    assert checked is not None and problems == []
    assert checked.settings.skip_unrelated
    found = [*checked.result.issues, *checked.result.warnings]
    return checked.result.skipped, [(issue.line, issue.kind) for issue in found]


def test_the_server_defaults_skip_the_unrelated_and_check_ours() -> None:
    for path in UNRELATED:
        assert server_check(path) == (True, []), relative(path)
    for name, issues in OURS.items():
        assert server_check(CORPUS / "ours" / name) == (False, issues), name


# ------------------------------------------------------------ keys, never words


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('{\n  // the training job\n  "a": 1,\n}\n', "json"),  # JSONC
        ("training: [\n", "yaml"),  # a trainer's broken file: its key, not ours
        ("# rollout_func and rollout_backend are in the training docs\nx: [\n", "yaml"),
        ('[training]\nsteps = "1\n', "toml"),
        ("train: {rollout_batch_size: 5, rollout_n: [\n", "yaml"),  # other trainers' rollouts
    ],
)
def test_text_that_does_not_parse_is_ours_only_by_its_keys(text: str, fmt: str) -> None:
    result = check_bytes(text, format=fmt, skip_unrelated=True)
    assert (result.skipped, result.issues) == (True, [])
    assert check_bytes(text, format=fmt).issues  # named without the flag: its syntax error


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('{\n  // ours\n  "rollout_backend": "art",\n}\n', "json"),
        ("training:\n  rolout_backend: [art\n", "yaml"),
        ("x:\n  - Rollout-Func: m:f\n  - [\n", "yaml"),
        ('training.rollout_fucn = "m:f"\nx = [\n', "toml"),
        ("{'rollout_source' : x, y: [}\n", "yaml"),
    ],
)
def test_text_that_does_not_parse_is_ours_by_a_key_of_ours(text: str, fmt: str) -> None:
    result = check_bytes(text, format=fmt, skip_unrelated=True)
    assert not result.skipped and [issue.kind for issue in result.issues] == ["syntax"]


def test_a_training_mapping_without_our_keys_is_not_ours() -> None:
    # Read by default (the "training" section), but it holds no key of ours: skipped,
    # as torchtitan's [training] table and a model card's are.
    for text, fmt in (
        ("training:\n  epochs: 3\n", "yaml"),
        ("[training]\nsteps = 10\n", "toml"),
        ('{"training": {"lr": 0.1}}', "json"),
    ):
        assert check_bytes(text, format=fmt, skip_unrelated=True).skipped, text
    kept = check_bytes("training:\n  epochs: 3\n  rollout_backend: art\n", skip_unrelated=True)
    assert not kept.skipped


def test_a_key_shared_with_other_tools_alone_elsewhere_is_not_ours() -> None:
    # axolotl's trl.rollout_func (a dotted path for TRL) is axolotl's: not read, not ours.
    axolotl = "rl: grpo\ntrl:\n  rollout_func: math_env.rollout\n"
    assert check_bytes(axolotl, skip_unrelated=True).skipped
    # Beside another key of ours, or a look-alike, that mapping is ours (named in the error).
    for text in (
        "rl: grpo\ntrl:\n  rollout_func: m:f\n  rollout_backend: art\n",
        "rl: grpo\ntrl:\n  rollout_func: m:f\n  rolout_backend: art\n",
    ):
        result = check_bytes(text, skip_unrelated=True)
        assert [issue.kind for issue in result.issues] == ["missing"], text
    # At the top level (axolotl's flat layout), or in the section, it is ours.
    assert not check_bytes("rl: grpo\nrollout_func: m:f\n", skip_unrelated=True).skipped
    assert not check_bytes("training:\n  rollout_func: m:f\n", skip_unrelated=True).skipped


KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


@st.composite
def misspelt(draw: st.DrawFn) -> str:
    """One of our keys with one or two edits (characters a bare key may hold), or none."""
    word = draw(st.sampled_from(ROLLOUT_KEYS))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(word) - 1))
        char = draw(st.sampled_from(KEY_CHARS))
        edit = draw(st.sampled_from(["delete", "insert", "substitute"]))
        if edit == "delete":
            word = word[:at] + word[at + 1 :]
        elif edit == "insert":
            word = word[:at] + char + word[at:]
        else:
            word = word[:at] + char + word[at + 1 :]
    return word


@given(key=misspelt(), form=st.integers(0, 5))
def test_a_key_of_ours_or_a_look_alike_in_broken_text_is_found(key: str, form: int) -> None:
    assume(key in ROLLOUT_KEYS or lookalike_key(key))
    text, fmt = [
        (f"{key}: [\n", "yaml"),
        (f"x:\n  - {key} : 1\n  - [\n", "yaml"),
        (f'{{"a": 1,\n "{key}": 2,}}', "json"),
        (f"// c\n{{'{key}': 1}}", "json"),
        (f"[training]\nx.{key} = 1\ny = [\n", "toml"),
        (f"{{a: 1, {key}: 2, b: [}}\n", "yaml"),
    ][form]
    assert not check_bytes(text, format=fmt, skip_unrelated=True).skipped, text


def test_big_files_are_read_for_keys_across_chunks(tmp_path: Path) -> None:
    """Over the size limit the text is read in chunks for our keys, never parsed: a big
    JSONC file saying "training" is skipped, one holding a key of ours across two
    chunks is reported (too big)."""
    chunk = 1024 * 1024
    filler = '  // training notes\n  "note": "training",\n'
    body = filler * (3 * chunk // len(filler))
    quiet = tmp_path / "big.json"
    quiet.write_text("{\n" + body + "}\n", encoding="utf-8")
    assert quiet.stat().st_size > MAX_CONFIG_BYTES
    assert check_file(quiet, skip_unrelated=True).skipped
    assert check_bytes(
        quiet.read_text(encoding="utf-8"), format="json", skip_unrelated=True
    ).skipped
    for cut in (5, len('"rollout_backend"') - 1):  # the key split by a chunk's end
        ours = tmp_path / f"ours{cut}.json"
        head = "{\n" + "x" * (chunk - 2 - cut)
        ours.write_text(head + '"rollout_backend": "art",\n' + body + "}\n", encoding="utf-8")
        assert len(head) + cut == chunk
        result = check_file(ours, skip_unrelated=True)
        assert not result.skipped and "-byte limit" in result.issues[0].message
