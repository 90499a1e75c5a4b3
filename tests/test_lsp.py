"""``agent-rollout lsp`` end to end: a real LSP client (pytest-lsp) over stdio.

For every bundled config and a corpus of broken ones, in the position
encodings and diagnostic modes real clients negotiate (Neovim 0.7: push,
UTF-16; Neovim 0.11: pull, UTF-8; Emacs 29: push, UTF-32; VS Code: push,
UTF-16, versioned edits), the server's diagnostics are what ``check
--format json`` says of the same text, converted here by the test's own
arithmetic (the message without its key path, cut short, the full text as
related information where the client takes it). Code actions applied give
a config ``check`` accepts; hover and completion answer; half-typed text
never ends the server; outdated results are dropped; settings come from
``pyproject.toml`` under the client's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Optional

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from agent_rollout.config import check_bytes  # noqa: E402
from agent_rollout.lsp._diagnostics import short_message  # noqa: E402
from support import EXAMPLES, Cli, cli_argv, cli_env  # noqa: E402

PROFILES = {
    "neovim-0.7": "neovim@v0.7.0",
    "neovim-0.11": "neovim@v0.11.0",
    "emacs-29": "emacs@v29.1",
    "vscode-1.65": "visual_studio_code@v1.65.2",
}
FIX_ALL = "source.fixAll.agent-rollout"
WAIT = 60.0


def _record(ls: Any, params: types.PublishDiagnosticsParams) -> None:
    ls.diagnostics[params.uri] = params.diagnostics
    ls.published.append(params)


def make_client() -> LanguageClient:
    """pytest-lsp's client, keeping every publishDiagnostics with its version."""
    client = LanguageClient()
    features = {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record}
    register_lsp_features(client, features)
    client.published = []  # type: ignore[attr-defined]
    return client


SERVER = ClientServerConfig(
    server_command=cli_argv("lsp"), server_env=cli_env(), client_factory=make_client
)


def encoding_of(client: LanguageClient) -> str:
    caps = client.capabilities
    offered = (caps.general.position_encodings if caps and caps.general else None) or []
    for name in offered:
        if name in ("utf-8", "utf-16", "utf-32"):
            return str(name)
    return "utf-16"


def pulls(client: LanguageClient) -> bool:
    caps = client.capabilities
    return bool(caps and caps.text_document and caps.text_document.diagnostic is not None)


@pytest_lsp.fixture(config=SERVER, scope="module", params=list(PROFILES))
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    capabilities = client_capabilities(PROFILES[request.param])
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    yield
    await lsp_client.shutdown_session()


# ---- the test's own conversion of check's report -------------------------------------------


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def client_position(lines: list[str], line: int, col: int, encoding: str) -> tuple[int, int]:
    text = lines[line - 1] if line <= len(lines) else ""
    return line - 1, units(text[: col - 1], encoding)


def related(client: LanguageClient) -> bool:
    caps = client.capabilities
    sent = caps.text_document.publish_diagnostics if caps and caps.text_document else None
    return bool(sent and sent.related_information)


def expected(
    text: str, report: dict[str, Any], encoding: str, with_related: bool = False
) -> list[tuple[Any, ...]]:
    """check --format json's issues as (start, end, severity, code, message, full text),
    client units: the message without the key path, cut short past 100 characters; the
    full text (``location: message``) as related information where it was cut and
    ``with_related`` (the client takes it), else None."""
    lines = text.removeprefix("\ufeff").split("\n")
    if text.startswith("\ufeff"):
        lines[0] = "\ufeff" + lines[0]  # the client counts the mark on line 1
    out = []
    for issue in [*report["errors"], *report["warnings"]]:
        shift = 1 if text.startswith("\ufeff") else 0
        start_col = issue["col"] + (shift if issue["line"] == 1 else 0)
        end_col = issue["end_col"] + (shift if issue["end_line"] == 1 else 0)
        where = f"{issue['location']}: " if issue["location"] else ""
        message = short_message(issue["message"])
        assert len(message) <= 100 and not message.startswith(where or "\0")
        full = where + issue["message"] if with_related and message != issue["message"] else None
        out.append(
            (
                client_position(lines, issue["line"], start_col, encoding),
                client_position(lines, issue["end_line"], end_col, encoding),
                1 if issue["severity"] == "error" else 2,
                issue["kind"],
                message,
                full,
            )
        )
    return sorted(out)


def seen(diagnostics: list[types.Diagnostic]) -> list[tuple[Any, ...]]:
    assert all(d.source == "agent-rollout" for d in diagnostics)
    return sorted(
        (
            (d.range.start.line, d.range.start.character),
            (d.range.end.line, d.range.end.character),
            int(d.severity or 0),
            d.code,
            d.message,
            d.related_information[0].message if d.related_information else None,
        )
        for d in diagnostics
    )


def check_report(cli: Cli, path: Path) -> dict[str, Any]:
    done = cli("check", "--format", "json", "--skip-unrelated", str(path))
    report: dict[str, Any] = json.loads(done.out)["files"][0]
    return report


# ---- talking to the server --------------------------------------------------------------------

_versions: dict[str, int] = {}


async def published(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    """The diagnostics the server pushes (or, to a pulling client, answers) for ``version``."""
    if pulls(client):
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
        )
        return list(report.items)

    async def wait() -> list[types.Diagnostic]:
        while True:
            for params in reversed(client.published):  # type: ignore[attr-defined]
                if params.uri == uri and params.version == version:
                    return list(params.diagnostics)
            await asyncio.sleep(0.005)

    return await asyncio.wait_for(wait(), WAIT)


async def open_document(
    client: LanguageClient, path: Path, text: str, language: str
) -> list[types.Diagnostic]:
    uri = path.as_uri()
    _versions[uri] = 1
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
        )
    )
    return await published(client, uri, 1)


async def replace_text(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    uri = path.as_uri()
    _versions[uri] += 1
    version = _versions[uri]
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return await published(client, uri, version)


def close_document(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri()))
    )


def offset_of(text: str, position: types.Position, encoding: str) -> int:
    lines = text.split("\n")
    before = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    chars = 0
    while chars < len(line) and units(line[:chars], encoding) < position.character:
        chars += 1
    return before + chars


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    spans = [
        (offset_of(text, edit.range.start, encoding), offset_of(text, edit.range.end, encoding))
        for edit in edits
    ]
    news = [edit.new_text for edit in edits]
    for (start, end), new in sorted(zip(spans, news, strict=True), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert action.edit is not None
    if action.edit.document_changes:
        change = action.edit.document_changes[0]
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        return list(change.edits)  # type: ignore[arg-type]
    assert action.edit.changes is not None
    return list(action.edit.changes[uri])


async def actions(
    client: LanguageClient, path: Path, at: types.Range, only: Optional[list[str]] = None
) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(path.as_uri()),
            range=at,
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [action for action in found or [] if isinstance(action, types.CodeAction)]


WHOLE = types.Range(types.Position(0, 0), types.Position(10_000, 0))

# ---- the corpus -------------------------------------------------------------------------------

BROKEN: dict[str, tuple[str, str]] = {
    "typo.yaml": ("yaml", "training:\n  rollout_backend: art\n  rollout_fucn: pkg.mod:play\n"),
    "emoji.yaml": (
        "yaml",
        'training: {note: "😀 é", rollout_fucn: m:f, rollout_backend: Open-Env}\n',
    ),
    "cross.yaml": (
        "yaml",
        "training:\n  rollout_backend: art\n  rollout_func: m:f\n  rollout_judge_model: j  # 🙂\n",
    ),
    "versions.yaml": (
        "yaml",
        "training:\n  rollout_backend: openenv\n  rollout_func: m:f\n"
        "  rollout_max_steps: 010\n  rollout_group_size: '4'\n",
    ),
    "warnings.yaml": ("yaml", "training:\n  rollout_backend: art\n"),
    "syntax.yaml": ("yaml", "training:\n  rollout_backend: [art\n"),
    "half.yaml": ("yaml", "training:\n  rollout_backend: ar\n  rollout_"),
    "duplicate.yaml": ("yaml", "training:\n  rollout_backend: art\n  rollout_backend: ruler\n"),
    "missing.yaml": ("yaml", "trainer:\n  rollout_backend: art\n"),
    "bom.yaml": ("yaml", "\ufefftraining: {rollout_fucn: m:f, rollout_backend: art}\n"),
    "unrelated.yaml": ("yaml", "name: ci\non: push\njobs: {}\n"),
    "typo.json": (
        "json",
        '{"training": {"note": "😀", "rollout_backend": "Nemo-Gym", "rollout_sorce": "d.jsonl"}}',
    ),
    "bad.json": ("json", '{"training": {"rollout_backend": "art",}}'),
    "typo.toml": (
        "toml",
        '# 😀\n[training]\nrollout_backend = "openenv"\nrollout_fucn = "m:f"\n'
        'rollout_max_steps = "9"\n',
    ),
    "nested.toml": ("toml", '[training]\nrollout_backend = "ruler"\nrollout_func = 3\n'),
}
BUNDLED = sorted(EXAMPLES.glob("*.yaml"))
FIXABLE = ["typo.yaml", "emoji.yaml", "versions.yaml", "bom.yaml", "typo.json", "typo.toml"]


def corpus_texts() -> list[tuple[str, str, str]]:
    out = [(path.name, "yaml", path.read_text(encoding="utf-8")) for path in BUNDLED]
    out += [(name, fmt, text) for name, (fmt, text) in BROKEN.items()]
    return out


# ---- the tests --------------------------------------------------------------------------------

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_diagnostics_are_checks_report(
    client: LanguageClient, cli: Cli, tmp_path: Path
) -> None:
    encoding = encoding_of(client)
    for name, fmt, text in corpus_texts():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        report = check_report(cli, path)
        found = await open_document(client, path, text, fmt)
        assert seen(found) == expected(text, report, encoding, related(client)), name
        if report["skipped"]:
            assert found == [], name
        close_document(client, path)


async def test_an_emoji_before_the_error_does_not_shift_it(
    client: LanguageClient, tmp_path: Path
) -> None:
    line = 'training: {note: "😀", rollout_fucn: m:f, rollout_backend: art}'
    path = tmp_path / "emoji-start.yaml"
    found = await open_document(client, path, line + "\n", "yaml")
    start = found[0].range.start
    want = {"utf-16": 23, "utf-8": 25, "utf-32": 22}[encoding_of(client)]
    assert (start.line, start.character, found[0].code) == (0, want, "unknown_key")
    close_document(client, path)


async def test_fix_all_gives_a_config_check_accepts(client: LanguageClient, tmp_path: Path) -> None:
    encoding = encoding_of(client)
    for name in FIXABLE:
        fmt, text = BROKEN[name]
        path = tmp_path / name
        await open_document(client, path, text, fmt)
        found = await actions(client, path, WHOLE, only=["source.fixAll"])
        assert [action.kind for action in found] == [FIX_ALL], name
        fixed = apply_edits(text, edits_of(found[0], path.as_uri()), encoding)
        result = check_bytes(fixed, format=fmt)
        assert result.issues == [], (name, fixed)
        assert fixed.count("\n") == text.count("\n")  # lines kept, comments with them
        close_document(client, path)


async def test_quick_fixes_one_by_one(client: LanguageClient, tmp_path: Path) -> None:
    encoding = encoding_of(client)
    for name in FIXABLE:
        fmt, text = BROKEN[name]
        path = tmp_path / f"quick-{name}"
        diagnostics = await open_document(client, path, text, fmt)
        for _ in range(10):
            fixes = [
                action
                for action in await actions(client, path, WHOLE)
                if action.kind == types.CodeActionKind.QuickFix
            ]
            if not fixes:
                break
            first = fixes[0]
            assert first.diagnostics
            assert first.diagnostics[0].message in {d.message for d in diagnostics}
            text = apply_edits(text, edits_of(first, path.as_uri()), encoding)
            diagnostics = await replace_text(client, path, text)
        assert check_bytes(text, format=fmt).issues == [], (name, text)
        close_document(client, path)


async def test_quick_fixes_only_at_the_range_asked(client: LanguageClient, tmp_path: Path) -> None:
    fmt, text = BROKEN["versions.yaml"]
    path = tmp_path / "range.yaml"
    await open_document(client, path, text, fmt)
    on_010 = types.Range(types.Position(3, 22), types.Position(3, 22))
    found = await actions(client, path, on_010, only=[types.CodeActionKind.QuickFix])
    assert [action.title for action in found] == [
        "Write 010 as 8 (as the trainer reads it: yaml.safe_load)",
        "Write 010 as 10 (as YAML 1.2 reads it)",
    ]
    line_start = types.Range(types.Position(4, 0), types.Position(4, 0))
    assert await actions(client, path, line_start, only=[types.CodeActionKind.QuickFix]) == []
    # Neovim asks at the cursor and names the diagnostics of its line in the context.
    diagnostics = await published(client, path.as_uri(), 1)
    on_line = [d for d in diagnostics if d.range.start.line == 4]
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(path.as_uri()),
            range=line_start,
            context=types.CodeActionContext(
                diagnostics=on_line, only=[types.CodeActionKind.QuickFix]
            ),
        )
    )
    assert [action.title for action in found or [] if isinstance(action, types.CodeAction)] == [
        "Unquote '4' (an int)"
    ]
    close_document(client, path)


SAFETY = (
    "training:\n"
    "  rollout_backend: ruler\n"
    "  rollout_ourc: pkg.mod:play\n"  # as near rollout_func as rollout_source: display-only
    "  rollout_judge_model: yes\n"  # a string key: "yes", safe
    "  rollout_max_steps: 010\n"  # 8 as the trainer reads it, or 10: unsafe
)


async def test_quick_fixes_offer_every_choice_and_prefer_the_safe_ones(
    client: LanguageClient, tmp_path: Path
) -> None:
    encoding = encoding_of(client)
    path = tmp_path / "safety.yaml"
    await open_document(client, path, SAFETY, "yaml")
    found = await actions(client, path, WHOLE, only=[types.CodeActionKind.QuickFix])
    assert [(action.title, bool(action.is_preferred)) for action in found] == [
        ("Rename 'rollout_ourc' to 'rollout_func'", False),
        ("Rename 'rollout_ourc' to 'rollout_source'", False),
        ('Write yes as "yes" (as YAML 1.2 reads it)', True),
        ("Write 010 as 8 (as the trainer reads it: yaml.safe_load)", False),
        ("Write 010 as 10 (as YAML 1.2 reads it)", False),
    ]
    # Each choice, applied alone, leaves no issue of its diagnostic's kind at its key (its
    # line: one key a line here; the message no longer names the key).
    for action in found:
        assert action.diagnostics
        line = action.diagnostics[0].range.start.line + 1
        kind = action.diagnostics[0].code
        fixed = apply_edits(SAFETY, edits_of(action, path.as_uri()), encoding)
        result = check_bytes(fixed)
        issues = [*result.issues, *result.warnings]
        left = [i for i in issues if (i.line, i.kind) == (line, kind)]
        assert left == [], (action.title, fixed)
    # Fix all: the safe fixes only, what `check --fix` writes.
    (fix_all,) = await actions(client, path, WHOLE, only=["source.fixAll"])
    assert fix_all.title == "Fix all agent-rollout issues (1 fix)"
    fixed = apply_edits(SAFETY, edits_of(fix_all, path.as_uri()), encoding)
    assert fixed == SAFETY.replace(": yes", ': "yes"')
    close_document(client, path)


async def test_hover_on_keys_and_backends(client: LanguageClient, tmp_path: Path) -> None:
    text = "training:\n  rollout_backend: ruler\n  rollout_max_steps: 9\n"
    path = tmp_path / "hover.yaml"
    await open_document(client, path, text, "yaml")
    uri = types.TextDocumentIdentifier(path.as_uri())
    key = await client.text_document_hover_async(types.HoverParams(uri, types.Position(2, 6)))
    assert key is not None and isinstance(key.contents, types.MarkupContent)
    assert key.contents.kind == types.MarkupKind.Markdown
    assert "**rollout_max_steps**" in key.contents.value
    assert "int in [1, " in key.contents.value and "default: 64" in key.contents.value
    assert key.range == types.Range(types.Position(2, 2), types.Position(2, 19))
    backend = await client.text_document_hover_async(types.HoverParams(uri, types.Position(1, 21)))
    assert backend is not None and isinstance(backend.contents, types.MarkupContent)
    assert "openpipe-art" in backend.contents.value and "judge" in backend.contents.value
    nothing = await client.text_document_hover_async(types.HoverParams(uri, types.Position(1, 0)))
    assert nothing is None
    # A diagnostic whose message was cut: its full text, as check prints it, in the hover.
    cut = await client.text_document_hover_async(types.HoverParams(uri, types.Position(0, 2)))
    assert cut is not None and isinstance(cut.contents, types.MarkupContent)
    assert (
        "training.rollout_judge_model: rollout_judge_model is not set: the built-in 'ruler' "
        "adapter needs it (a runner registered with" in cut.contents.value
    )
    close_document(client, path)


@pytest.mark.parametrize(
    ("fmt", "text", "at"),
    [
        ("yaml", "training:\n  rollout_backend: ruler\n  rollout_\n", (2, 10)),
        ("toml", '[training]\nrollout_backend = "ruler"\nrollout_\n', (2, 8)),
        ("json", '{"training": {"rollout_backend": "ruler", "rollout_\n', (0, 51)),
    ],
)
async def test_completion_of_keys_the_backend_takes_first(
    client: LanguageClient, tmp_path: Path, fmt: str, text: str, at: tuple[int, int]
) -> None:
    path = tmp_path / f"complete.{fmt}"
    await open_document(client, path, text, fmt)
    found = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(*at))
    )
    assert isinstance(found, types.CompletionList)
    ordered = [item.label for item in sorted(found.items, key=lambda item: item.sort_text or "")]
    assert "rollout_backend" not in ordered  # already set
    assert ordered.index("rollout_judge_model") < ordered.index("rollout_source")
    close_document(client, path)


async def test_completion_of_backend_names(client: LanguageClient, tmp_path: Path) -> None:
    text = "training:\n  rollout_backend: \n"
    path = tmp_path / "backend.yaml"
    await open_document(client, path, text, "yaml")
    found = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(1, 19))
    )
    assert isinstance(found, types.CompletionList)
    assert [item.label for item in found.items] == ["art", "nemo_gym", "openenv", "ruler"]
    assert "openpipe-art" in str(found.items[0].documentation)
    close_document(client, path)


async def test_half_typed_text_never_ends_the_server(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = (
        '# 😀\ntraining:\n  rollout_backend: "ruler"\n  rollout_func: m:f\n'
        "  rollout_judge_model: [a, {b: 'c'}]\n  rollout_max_steps: 0x10\n"
    )
    path = tmp_path / "typing.yaml"
    await open_document(client, path, "", "yaml")
    for end in range(0, len(text) + 1, 3):
        found = await replace_text(client, path, text[:end])
        assert all(d.source == "agent-rollout" for d in found)
    for junk in ("\x00\x01", "{[}", "training: &a [*a]", "training: !!python/object:os.system x"):
        await replace_text(client, path, junk)
    final = await replace_text(client, path, text)
    assert seen(final) == expected_from_check(text, encoding_of(client), related(client))
    close_document(client, path)


def expected_from_check(text: str, encoding: str, with_related: bool) -> list[tuple[Any, ...]]:
    result = check_bytes(text, skip_unrelated=True)
    report = {
        "errors": [issue.as_dict() for issue in result.issues],
        "warnings": [issue.as_dict() for issue in result.warnings],
    }
    return expected(text, report, encoding, with_related)


SKIP_CORPUS = Path(__file__).resolve().parent / "data" / "skip_corpus"
LANGUAGES = {".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}


async def test_files_that_are_not_training_configs_stay_quiet(
    client: LanguageClient, cli: Cli
) -> None:
    """tests/data/skip_corpus (see tests/test_skip_corpus.py), opened as an editor opens
    them, with the server's defaults: nothing on the files that are not training configs
    (JSONC, workflows, manifests, other trainers' configs), ``check``'s issues on ours."""
    encoding = encoding_of(client)
    spoken = 0
    for path in sorted(p for p in SKIP_CORPUS.rglob("*") if p.suffix in LANGUAGES):
        text = path.read_text(encoding="utf-8")
        found = await open_document(client, path, text, LANGUAGES[path.suffix])
        if path.parent.name == "ours":
            report = check_report(cli, path)
            assert seen(found) == expected(text, report, encoding, related(client)), path.name
            spoken += bool(found)
        else:
            assert found == [], path
        close_document(client, path)
    assert spoken == 7  # ours but the two valid ones


async def test_a_large_document_drops_outdated_results(
    client: LanguageClient, tmp_path: Path
) -> None:
    if pulls(client):
        pytest.skip("a pulling client gets the current version's diagnostics when it asks")
    # 190 kB: its check takes far longer than five small edits take to arrive.
    filler = "".join(f"  key_{i}: [value {i}, {{a: {i}}}]\n" for i in range(5_000))
    text = "training:\n  rollout_fucn: m:f\n" + filler
    lines = text.count("\n")
    path = tmp_path / "large.yaml"
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "yaml", 1, text))
    )
    for version in range(2, 7):
        end = types.Position(lines + version - 2, 0)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [
                    types.TextDocumentContentChangePartial(
                        range=types.Range(end, end), text=f"# edit {version}\n"
                    )
                ],
            )
        )
    last = await published(client, uri, 6)
    assert [d.code for d in last] == ["unknown_key"]
    versions = [p.version for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert versions[-1] == 6 and set(versions) <= {1, 6}, versions
    close_document(client, path)


# ---- settings: pyproject.toml, initializationOptions, workspace/configuration -----------------


@pytest_lsp.fixture(config=SERVER, loop_scope="module")
async def configured(lsp_client: LanguageClient) -> AsyncIterator[None]:
    capabilities = client_capabilities("visual_studio_code@v1.65.2")
    lsp_client.set_configuration({"yamlVersion": "1.2"}, section="agent-rollout")
    options = {"agent-rollout": {"section": "rl", "strict": True}}
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, initialization_options=options)
    )
    yield
    await lsp_client.shutdown_session()


async def test_settings_pyproject_then_the_client(
    configured: LanguageClient, tmp_path: Path
) -> None:
    client = configured
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agent-rollout]\nsection = "other"\nallow-keys = ["rollout_fucn"]\n'
    )
    path = tmp_path / "c.yaml"
    text = "rl:\n  rollout_backend: art\n  rollout_fucn: m:f\n  rollout_max_steps: 0o10\n"
    await open_document(client, path, text, "yaml")
    # section and strict from initializationOptions, allow-keys from pyproject.toml,
    # YAML 1.2 from workspace/configuration (0o10 is 8, not the string '0o10'), once the
    # server has asked for it (after `initialized`; it checks open documents again then).
    error, warning = types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning
    assert await eventually(client, path, [("incomplete", error), ("yaml_version", error)])
    client.set_configuration({"yamlVersion": "1.1", "strict": False}, section="agent-rollout")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    want = [("incomplete", warning), ("value", error), ("yaml_version", warning)]
    assert await eventually(client, path, want)


async def eventually(client: LanguageClient, path: Path, want: list[tuple[Any, Any]]) -> bool:
    """Whether the diagnostics last pushed for ``path`` come to be ``want`` (code, severity)."""

    async def wait() -> bool:
        while True:
            latest = [p for p in client.published if p.uri == path.as_uri()]  # type: ignore[attr-defined]
            if latest and sorted((d.code, d.severity) for d in latest[-1].diagnostics) == want:
                return True
            await asyncio.sleep(0.01)

    return await asyncio.wait_for(wait(), WAIT)


async def test_bad_client_settings_are_shown_not_fatal(
    configured: LanguageClient, tmp_path: Path
) -> None:
    client = configured
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"agent-rollout": {"yamlVersion": "2"}})
    )
    path = tmp_path / "c.yaml"
    found = await open_document(client, path, "rl:\n  rollout_fucn: m:f\n", "yaml")
    assert [d.code for d in found] == ["unknown_key"]
    assert any("yamlVersion" in m.message for m in client.messages)
