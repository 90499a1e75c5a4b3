"""The language server's parts, in this process: positions, scheduling, packaging.

Over stdio with a real client: ``test_lsp.py``; in Neovim: ``test_lsp_neovim.py``.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout._limits import LSP_INLINE_CHARS
from agent_rollout.config import MAX_CONFIG_BYTES, CheckSettings, check_bytes
from agent_rollout.lsp import _start as start
from agent_rollout.lsp._documents import Checked, Document, Documents
from agent_rollout.lsp._text import (
    Change,
    Lines,
    LineStarts,
    apply_changes,
    document_format,
    line_starts,
    uri_path,
)
from agent_rollout.lsp._wire import Refused, receive
from support import cli_env

# ---- positions --------------------------------------------------------------------------------


@pytest.mark.parametrize(("encoding", "want"), [("utf-16", 7), ("utf-8", 9), ("utf-32", 6)])
def test_columns_after_an_emoji(encoding: str, want: int) -> None:
    lines = Lines("a: '😀', rollout_fucn: 1\n", encoding)
    # check's column 7 (1-based characters) is the ','
    assert lines.to_client(1, 7) == (0, want)
    assert lines.from_client(0, want) == (1, 7)


def test_a_byte_order_mark_is_counted_on_line_one_only() -> None:
    lines = Lines("\ufeffab\ncd\n")
    assert lines.to_client(1, 1) == (0, 1)
    assert lines.to_client(2, 1) == (1, 0)
    assert lines.from_client(0, 1) == (1, 1)
    assert lines.line_text(1) == "ab"


def test_line_breaks_check_and_the_client_count_differently() -> None:
    # YAML breaks lines at NEL; a client does not: check's line 2 is inside client line 0.
    text = "a: 1\x85b: 2\r\nc: 3\n"
    lines = Lines(text, "utf-16", "yaml")
    assert lines.to_client(2, 1) == (0, 5)
    assert lines.to_client(3, 1) == (1, 0)
    assert lines.from_client(0, 5) == (2, 1)
    # A lone CR breaks a line for the client and for YAML, not for JSON.
    json_text = '{"a":\r 1}'
    assert Lines(json_text, "utf-16", "json").to_client(1, 8) == (1, 1)


def test_positions_past_the_end_are_clamped() -> None:
    lines = Lines("ab\n")
    assert lines.to_client(1, 99) == (0, 2)
    assert lines.to_client(9, 1) == (8, 0)
    assert lines.from_client(5, 3) == (6, 1)


@given(
    st.text(alphabet="ab😀é\r\n\x85\ufeff", max_size=40),
    st.sampled_from(["utf-8", "utf-16", "utf-32"]),
    st.sampled_from(["yaml", "json"]),
    st.lists(st.tuples(st.integers(-1, 12), st.integers(-1, 45)), max_size=12),
)
def test_positions_converted_at_once_are_those_converted_one_by_one(
    text: str, encoding: str, fmt: str, points: list[tuple[int, int]]
) -> None:
    lines = Lines(text, encoding, fmt)
    assert lines.to_client_all(points) == [lines.to_client(*point) for point in points]


def test_many_issues_on_one_long_line_measure_the_line_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Diagnostics of 2,000 issues on one line of a minified JSON file: its text is
    measured (in the client's units) once in all, not once up to each issue."""
    from agent_rollout.lsp import _text
    from agent_rollout.lsp._diagnostics import diagnostics

    keys = ", ".join(['"rollout_fucn": 1'] * 2_000)
    text = '{"training": {"é": 1, "rollout_backend": "art", "rollout_func": "m:f", ' + keys + "}}"
    documents = Documents(lambda document, checked: None, lambda message: None)
    documents.client_values = {"skip_unrelated": False}
    documents.opened("file:///nowhere/one.json", text, 1, "json")
    checked = documents.open["file:///nowhere/one.json"].checked
    assert checked is not None
    measured = []
    real = _text.code_units

    def counting(piece: str, encoding: str) -> int:
        measured.append(len(piece))
        return real(piece, encoding)

    monkeypatch.setattr(_text, "code_units", counting)
    found = diagnostics(checked, Lines(text, "utf-16", "json"))
    assert len(found) >= 1_999  # each repeat of the key after the first
    last = found[-1]["range"]["end"]["character"]
    assert last == text.rindex('": 1}}') + 1  # the last key's end ("é" is one unit)
    assert sum(measured) <= 2 * len(text)


def test_formats_and_paths() -> None:
    assert document_format("file:///x/c.YML", None) == "yaml"
    assert document_format("untitled:1", "toml") == "toml"
    assert document_format("file:///x/c.jsonc", "jsonc") == "json"
    assert document_format("file:///x/c.txt", "plaintext") is None
    assert uri_path("file:///tmp/a%20b/c.yaml") == "/tmp/a b/c.yaml"
    assert uri_path("untitled:Untitled-1") is None


def test_fix_all_edits_end_on_the_last_line_without_a_break() -> None:
    pytest.importorskip("pygls")
    from agent_rollout.lsp._actions import fix_all_edits

    edits = fix_all_edits("a: 1\nb: 😀x", "a: 1\nb: 😀y", "utf-16")
    assert [(e.range.start.line, e.range.end.line, e.range.end.character) for e in edits] == [
        (1, 1, 6)
    ]
    assert edits[0].new_text == "b: 😀y"


# ---- edits ------------------------------------------------------------------------------------

_CLIENT_BREAK = re.compile("\r\n|\r|\n")


_UNIT_BYTES = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}


def _reference_offset(text: str, line: int, character: int, encoding: str) -> int:
    """The protocol's reading of a position, one character at a time: lines break at CR,
    LF and CRLF; a unit inside a character reaches all of it; past the end, the end."""
    starts = [0] + [found.end() for found in _CLIENT_BREAK.finditer(text)]
    if line < 0:
        return 0
    if line >= len(starts):
        return len(text)
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    codec, size = _UNIT_BYTES[encoding]
    units = chars = 0
    for char in text[starts[line] : end].rstrip("\r\n"):
        if units >= character:
            break
        units += len(char.encode(codec, "surrogatepass")) // size
        chars += 1
    return starts[line] + chars


_PIECES = st.sampled_from(["a", "b", "\r", "\n", "\r\n", "é", "😀", "\u2028", "\x85", "\t", "\x00"])
_TEXTS = st.lists(_PIECES, max_size=30).map("".join)
_POSITIONS = st.tuples(st.integers(-1, 8), st.integers(-1, 8))


@given(
    text=_TEXTS,
    edits=st.lists(st.tuples(_POSITIONS, _POSITIONS, _TEXTS), max_size=6),
    encoding=st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_edits_apply_as_the_protocol_reads_positions(
    text: str, edits: list[Any], encoding: str
) -> None:
    """``apply_changes`` (an edit at memory speed, line starts moved, not found again)
    against the protocol read one character at a time, CRs meeting LFs across edits."""
    want = text
    changes = []
    for first, last, new in edits:
        changes.append(Change(new, first, last))
        begin = _reference_offset(want, *first, encoding)
        stop = max(_reference_offset(want, *last, encoding), begin)
        want = want[:begin] + new + want[stop:]
    got, starts = apply_changes(text, None, changes, encoding)
    assert got == want
    assert list(starts) == line_starts(want)
    kept = LineStarts(line_starts(text))  # one edit at a time, the starts kept between
    for change in changes:
        text, kept = apply_changes(text, kept, [change], encoding)
        assert list(kept) == line_starts(text)
        assert kept[1:3] == line_starts(text)[1:3] and kept[-1] == line_starts(text)[-1]
    assert text == want


def _edit_peaks(text: str) -> tuple[int, str, Any]:
    """The highest memory growth of 48 keystrokes near the top of ``text``, each with a
    line added below and taken away again; the text and its line starts after them."""
    import tracemalloc

    text, starts = apply_changes(text, None, [], "utf-16")
    highest = 0
    tracemalloc.start()
    try:
        for column in range(2, 50):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            edit = [Change("x", (5, column), (5, column)), Change("\n", (7, 0), (7, 0))]
            text, starts = apply_changes(text, starts, edit, "utf-16")
            highest = max(highest, tracemalloc.get_traced_memory()[1] - before)
            edit = [Change("", (7, 0), (8, 0))]
            text, starts = apply_changes(text, starts, edit, "utf-16")
    finally:
        tracemalloc.stop()
    return highest, text, starts


def test_an_edit_costs_the_text_it_copies_not_a_list_of_every_line_start() -> None:
    """Typing near the top of a 200,000-line file costs what it costs in a file of the
    same size in 2,000 lines: the copy of the text, whatever the Python's allocator makes
    of it, and no line start after the edit moved one by one (that cost 22 MB a keystroke
    here, 8.5x the text, against 3x for the copy). The starts stay right."""
    many = "training:\n" + "  key: value\n" * 200_000
    few = "training:\n" + "\n".join(
        "  key: value" + " " * (len(many) // 2_000 - 13) for _ in range(2_000)
    )
    many_peak, text, starts = _edit_peaks(many)
    assert list(starts) == line_starts(text)
    few_peak, text, starts = _edit_peaks(few)
    assert list(starts) == line_starts(text)
    assert abs(len(many) - len(few)) < 3_000
    assert many_peak < 1.5 * few_peak + 500_000, (many_peak, few_peak)


def test_a_position_past_the_end_is_the_end_and_a_cursor_far_down_costs_nothing() -> None:
    lines = Lines("training:\n  rollout_backend: art\n  ", "utf-16")
    assert lines.clamp(2**31 - 1, 2**31 - 1) == (2, 2)
    assert lines.clamp(1, 2**31 - 1) == (1, 2**31 - 1)  # from_client clamps within a line
    assert lines.from_client(1, 2**31 - 1) == (2, 23)  # after "  rollout_backend: art"
    assert lines.clamp(-1, 5) == (0, 0)


# ---- the wire ---------------------------------------------------------------------------------


def _framed(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return (header % len(body) if b"%d" in header else header) + body


def test_the_reader_resumes_at_the_next_header_whatever_came_before() -> None:
    good = _framed(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    stream = io.BytesIO(
        b"\r\n\r\n"  # blank lines between messages
        + b"junk " * 5_000  # one line far longer than a header line is read
        + b"\r\nContent-Length: -5\r\nContent-Type: x\r\n\r\n{}"  # skipped; its body ...
        + b"content-length:  "
        + good.split(b":", 1)[1]  # ... runs into a header, read
    )
    first = receive(stream)
    assert isinstance(first, Refused) and "'-5'" in first.reason
    assert receive(stream) == {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    assert receive(stream) is None


def test_a_header_line_over_its_bound_with_no_length_resyncs_at_the_next_header() -> None:
    good = _framed(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    stream = io.BytesIO(b"Content-Length: 5" + b"x" * 9_000 + b"\r\n\r\n{}{}}" + good)
    first = receive(stream)
    assert isinstance(first, Refused) and "header line longer" in first.reason
    assert first.id is None
    assert receive(stream) == {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    assert receive(stream) is None
    assert receive(io.BytesIO(b"Content-Length: 5\r\nX: " + b"x" * 20_000)) is None


@pytest.mark.parametrize(
    ("body", "ident"),
    [
        (b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": "%s"}', 7),
        (b'{"method": "x", "params": "%s", "id": "last"}', "last"),
        (b'{"jsonrpc": "2.0", "id": 8, "result": "%s"}', None),  # a response: never answered
        (b'{"params": {"id": 9, "x": "%s"}, "method": "x"}', None),  # an id, but not the request's
        # a response whose result holds a "method": a response still, never answered
        (b'{"jsonrpc": "2.0", "id": 8, "result": {"method": "x", "y": "%s"}}', None),
        # an "id" in the text, and a nested one last: neither is the request's
        (b'{"method": "x", "id": 3, "params": {"text": "\\"id\\": 4, %s", "id": 5}}', 3),
        (b'{"method": "x", "params": ["%s", {"id": 6}]}', None),
    ],
)
def test_a_message_over_the_limit_is_read_in_pieces_and_its_id_found_where_it_can_be(
    body: bytes, ident: Any
) -> None:
    from agent_rollout._limits import MAX_LSP_MESSAGE_BYTES

    stream = io.BytesIO(_framed(body % (b"y" * MAX_LSP_MESSAGE_BYTES)) + _framed(b"{}"))
    skipped = receive(stream)
    assert isinstance(skipped, Refused) and skipped.code == -32600
    assert skipped.id == ident
    assert isinstance(receive(stream), Refused)  # the next frame is read where it starts


@pytest.mark.parametrize(
    ("body", "ident"),
    [
        (b'{"jsonrpc": "2.0", "method": "n", "params": {"x": {"id": 5}', None),
        (b'{"jsonrpc": "2.0", "method": "n", "params": {"x": {"id": 5}}, "id": 6', 6),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "n", "params": {"x": {"id": 5}', 7),
        (b'{"jsonrpc": "2.0", "id": 8, "result": {"method": "n", "x": ', None),
        (b'{"jsonrpc": "2.0", "method": "n", "params": "\\"id\\": 9}', None),
    ],
)
def test_a_message_that_is_not_json_is_answered_at_its_own_id_only(body: bytes, ident: Any) -> None:
    """The id of a body that does not parse is a member of the top-level object read
    before the error, never an ``"id"`` of a param."""
    refused = receive(io.BytesIO(_framed(body)))
    assert isinstance(refused, Refused) and refused.code == -32700, refused
    assert refused.id == ident


def test_params_are_read_where_the_protocol_puts_them_or_refused_saying_where() -> None:
    from agent_rollout.lsp._params import BadParams, change, position, take

    good = {"textDocument": {"uri": "file:///c.yaml"}, "position": {"line": 2, "character": 0}}
    assert position(good) == ("file:///c.yaml", 2, 0)
    assert take({"id": "x"}, "id", "id") == "x"
    assert take({}, "textDocument.version", "integer", optional=True) is None
    refused = {
        None: "params: an object expected, got null",
        5: "params: an object expected, got an integer",
        "x": "params: an object expected, got a string",
    }
    for params, reason in refused.items():
        with pytest.raises(BadParams, match=re.escape(reason)):
            position(params)
    cases = [
        ({"textDocument": 5.5}, "params.textDocument: an object expected, got a number"),
        ({"textDocument": {}}, "params.textDocument.uri is missing"),
        (
            {**good, "position": {"line": True, "character": 0}},
            "params.position.line: an integer expected, got a boolean",
        ),
    ]
    for params, reason in cases:
        with pytest.raises(BadParams, match=re.escape(reason)):
            position(params)
    assert change({"text": "x"}) == Change("x")
    where = {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}}
    assert change({"text": "", "range": where}) == Change("", (0, 1), (0, 2))
    with pytest.raises(BadParams, match=re.escape("params.range.end is missing")):
        change({"text": "", "range": {"start": where["start"]}})


# ---- when documents are checked ---------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.published: list[tuple[str, Optional[int]]] = []
        self.errors: list[str] = []

    def publish(self, document: Document, checked: Optional[Checked]) -> None:
        self.published.append((document.uri, None if checked is None else checked.version))

    def error(self, message: str) -> None:
        self.errors.append(message)


def test_small_documents_are_checked_at_once_and_skipped_when_unrelated() -> None:
    seen = Recorder()
    documents = Documents(seen.publish, seen.error)
    documents.opened("file:///nowhere/c.yaml", "training:\n  rollout_fucn: m:f\n", 1, "yaml")
    documents.opened("file:///nowhere/ci.yaml", "on: push\n", 1, "yaml")
    documents.opened("file:///nowhere/notes.txt", "x", 1, "plaintext")
    assert seen.published == [("file:///nowhere/c.yaml", 1), ("file:///nowhere/ci.yaml", 1)]
    checked = documents.open["file:///nowhere/ci.yaml"].checked
    assert checked is not None and checked.result.skipped  # the server's default
    assert documents.open["file:///nowhere/notes.txt"].checked is None


def test_a_flat_config_is_checked_at_its_top_level_and_completed_there() -> None:
    from agent_rollout.config import AUTO_SECTION
    from agent_rollout.lsp._help import completion_sections, completions

    seen = Recorder()
    documents = Documents(seen.publish, seen.error)
    text = "model_name_or_path: m\nrollout_backend: openenv\nrollout_fucn: m:f\n"
    documents.opened("file:///nowhere/flat.yaml", text, 1, "yaml")
    checked = documents.open["file:///nowhere/flat.yaml"].checked
    assert checked is not None and checked.result.section == ()
    [issue] = checked.result.issues
    assert (issue.location, issue.kind) == ("rollout_fucn", "unknown_key")
    # Keys are completed where the settings are: the top level here.
    sections = completion_sections(checked.settings.section, checked.result.section)
    assert sections == [()]
    rows = [*text.splitlines(), "rollout_"]
    found = completions(rows, 3, 8, "yaml", sections, "\n".join(rows))
    assert "rollout_func" in [item.label for item in found]
    assert completions(rows, 3, 8, "yaml", [("training",)], "\n".join(rows)) == []
    # Nothing read yet (a new file): either place the default looks.
    assert completion_sections(AUTO_SECTION, None) == [("training",), ()]
    assert completion_sections("rl", ()) == [("rl",)]
    assert completion_sections(None, ("training",)) == [()]


def test_a_large_document_is_checked_off_the_loop_and_old_results_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Recorder()
    started: list[int] = []
    release = threading.Event()

    def slow_check(self: Documents, document: Document, text: str, version: Any, edit: int) -> Any:
        started.append(version)
        if version == 1:
            release.wait(30)  # held until every edit has arrived
        return Checked(version, edit, text, "yaml", CheckSettings(), check_bytes(text)), []

    monkeypatch.setattr(Documents, "_check", slow_check)
    big = "training:\n  rollout_fucn: m:f\n" + "#" * LSP_INLINE_CHARS + "\n"

    async def scenario() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            documents = Documents(seen.publish, seen.error, pool)
            documents.opened("file:///x/big.yaml", big, 1, "yaml")
            for version in range(2, 6):
                edit = [Change(big + f"# {version}\n")]
                assert documents.changed("file:///x/big.yaml", edit, version, "utf-16")
            waiting = asyncio.ensure_future(documents.current("file:///x/big.yaml"))
            await asyncio.sleep(0.05)
            assert seen.published == [] and not waiting.done()  # the loop is free meanwhile
            release.set()
            checked = await asyncio.wait_for(waiting, 30)
            assert checked is not None and checked.version == 5

    asyncio.run(scenario())
    assert started == [1, 5]  # the edits in between were never checked
    assert seen.published == [("file:///x/big.yaml", 5)]  # version 1's result dropped


def test_only_documents_within_the_inline_bound_are_checked_on_the_message_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A document of ``LSP_INLINE_CHARS`` characters is checked on the thread that handles
    messages, once none waits (edits meanwhile: one check, of the last); one character
    more, on a worker thread, so no larger check holds up a message."""
    seen = Recorder()
    checked_on: list[tuple[str, Any, threading.Thread]] = []
    real = Documents._check

    def recording(self: Documents, document: Document, text: str, version: Any, edit: int) -> Any:
        checked_on.append((document.uri, version, threading.current_thread()))
        return real(self, document, text, version, edit)

    monkeypatch.setattr(Documents, "_check", recording)
    head = "training:\n  rollout_fucn: m:f\n"
    at_bound = head + "#" * (LSP_INLINE_CHARS - len(head) - 1) + "\n"
    assert len(at_bound) == LSP_INLINE_CHARS

    async def scenario() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            documents = Documents(seen.publish, seen.error, pool)
            documents.deferred = True
            documents.opened("file:///x/small.yaml", at_bound, 1, "yaml")
            for version in range(2, 6):
                edit = [Change("", (0, 0), (0, 0))]
                assert documents.changed("file:///x/small.yaml", edit, version, "utf-16")
            documents.opened("file:///x/big.yaml", at_bound + "#", 1, "yaml")
            assert list(documents.due) == ["file:///x/small.yaml"]
            documents.run_due()
            assert not documents.due
            await asyncio.wait_for(documents.current("file:///x/big.yaml"), 30)

    asyncio.run(scenario())
    main = threading.main_thread()
    where = {(uri, version): thread for uri, version, thread in checked_on}
    assert len(checked_on) == 2  # versions 1 to 4 of the small one never checked
    assert where[("file:///x/small.yaml", 5)] is main
    assert where[("file:///x/big.yaml", 1)] is not main
    assert sorted(seen.published) == [("file:///x/big.yaml", 1), ("file:///x/small.yaml", 5)]


def test_a_bug_in_the_check_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = Recorder()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("agent_rollout.lsp._documents.check_bytes", broken)
    Documents(seen.publish, seen.error).opened("file:///x/c.yaml", "a: 1\n", 1, "yaml")
    assert seen.published == [("file:///x/c.yaml", None)]  # its diagnostics go
    assert "checking /x/c.yaml failed: RuntimeError: boom" in seen.errors[0]


def test_text_over_the_size_limit_that_is_not_a_config_is_skipped() -> None:
    big = "items:\n" + "  - x\n" * (MAX_CONFIG_BYTES // 6 + 1)
    assert check_bytes(big, skip_unrelated=True).skipped
    assert check_bytes(big).issues[0].kind == "file"
    config = "training:\n  rollout_backend: art\n" + "#" * MAX_CONFIG_BYTES
    assert check_bytes(config, skip_unrelated=True).issues[0].kind == "file"


# ---- packaging --------------------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=60
    )


def test_import_and_the_cli_stay_free_of_pygls() -> None:
    done = run_python(
        "import sys, agent_rollout, agent_rollout.config, agent_rollout.lsp\n"
        "import agent_rollout.lsp._session\n"
        "from agent_rollout.cli import build_parser\n"
        "build_parser(['lsp']).parse_args(['lsp', '--stdio'])\n"
        "print([m for m in ('pygls', 'lsprotocol', 'cattrs') if m in sys.modules])\n"
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_the_server_says_what_it_needs_when_pygls_is_missing() -> None:
    done = run_python(
        "import sys; sys.modules['pygls'] = None\n"
        "from agent_rollout.cli import main\n"
        "sys.exit(main(['lsp']))\n"
    )
    assert done.returncode == 2
    assert "pip install 'pygls>=2,<3' 'lsprotocol>=2025.0.0'" in done.stderr


# ---- a session ------------------------------------------------------------------------------


class Kept(io.BytesIO):
    """A stream pygls may close (on ``exit``) that keeps what was written."""

    def close(self) -> None:
        pass


def framed(*messages: dict[str, Any]) -> bytes:
    out = b""
    for message in messages:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        out += b"Content-Length: %d\r\n\r\n" % len(body) + body
    return out


def unframed(data: bytes) -> list[dict[str, Any]]:
    stream = io.BytesIO(data)
    found = []
    while (message := receive(stream)) is not None:
        assert isinstance(message, dict), message
        found.append(message)
    return found


def session(
    capabilities: dict[str, Any], *messages: dict[str, Any], options: Any = None
) -> list[dict[str, Any]]:
    """What the server writes for ``initialize`` + ``messages`` + shutdown/exit, in order."""
    pytest.importorskip("pygls")
    from agent_rollout.lsp import serve

    params = {"capabilities": capabilities, "initializationOptions": options}
    stdin = Kept(
        framed(
            {"id": 1, "method": "initialize", "params": params},
            {"method": "initialized", "params": {}},
            *messages,
            {"id": 99, "method": "shutdown"},
            {"method": "exit"},
        )
    )
    stdout = Kept()
    serve(stdin, stdout)
    return unframed(stdout.getvalue())


OPEN = {
    "method": "textDocument/didOpen",
    "params": {
        "textDocument": {
            "uri": "file:///nowhere/c.yaml",
            "languageId": "yaml",
            "version": 1,
            "text": "training:\n  rollout_fucn: m:f\n",
        }
    },
}


def test_the_first_diagnostics_go_out_once_and_each_request_is_answered_once() -> None:
    hover = {
        "id": 2,
        "method": "textDocument/hover",
        "params": {
            "textDocument": {"uri": OPEN["params"]["textDocument"]["uri"]},
            "position": {"line": 1, "character": 4},
        },
    }
    out = session({}, OPEN, hover)
    replies = [message.get("id") for message in out if "id" in message and "method" not in message]
    assert replies == [1, 2, 99]  # each request answered once
    published = [m["params"] for m in out if m.get("method") == "textDocument/publishDiagnostics"]
    assert [(p["version"], [d["code"] for d in p["diagnostics"]]) for p in published] == [
        (1, ["unknown_key"])
    ]
    assert out[0]["result"]["capabilities"]["positionEncoding"] == "utf-16"


def test_a_pulling_client_is_answered_early_and_once() -> None:
    capabilities = {
        "general": {"positionEncodings": ["utf-32", "utf-8"]},
        "textDocument": {"diagnostic": {"dynamicRegistration": False}},
    }
    uri = OPEN["params"]["textDocument"]["uri"]
    pull = {"method": "textDocument/diagnostic", "params": {"textDocument": {"uri": uri}}}
    out = session(capabilities, OPEN, {"id": 2, **pull}, {"id": 3, **pull})
    assert not any(m.get("method") == "textDocument/publishDiagnostics" for m in out)
    answers = {m["id"]: m.get("result") for m in out if "id" in m and "method" not in m}
    assert sorted(answers) == [1, 2, 3, 99]
    assert answers[1]["capabilities"]["positionEncoding"] == "utf-32"
    assert [d["code"] for d in answers[2]["items"]] == ["unknown_key"]
    assert answers[3]["items"] == answers[2]["items"]


def test_initialization_options_apply_from_the_first_diagnostics() -> None:
    options = {"agent-rollout": {"section": "rl", "yamlVersion": "2"}}
    opened = json.loads(json.dumps(OPEN).replace("training:", "rl:"))
    out = session({}, opened, options=options)
    published = [m["params"] for m in out if m.get("method") == "textDocument/publishDiagnostics"]
    assert [d["code"] for d in published[0]["diagnostics"]] == ["unknown_key"]  # section rl
    shown = [m["params"]["message"] for m in out if m.get("method") == "window/showMessage"]
    assert len(shown) == 1 and "yamlVersion: must be '1.1' or '1.2'" in shown[0]


@pytest.mark.parametrize(
    "profile", ["neovim@v0.7.0", "neovim@v0.11.0", "emacs@v29.1", "visual_studio_code@v1.65.2"]
)
def test_the_reply_to_initialize_is_the_protocols_and_names_only_methods_answered(
    profile: str,
) -> None:
    """The session's reply reads as lsprotocol's ``InitializeResult``; each capability it
    gives has a method the session or pygls answers; pygls is given only methods it
    handles, and every method it handles is the session's or given to it."""
    pytest_lsp = pytest.importorskip("pytest_lsp")
    from lsprotocol import types
    from lsprotocol.converters import get_converter

    from agent_rollout.lsp._server import build_server
    from agent_rollout.lsp._session import PYGLS_METHODS, SESSION_METHODS

    converter = get_converter()
    capabilities = converter.unstructure(pytest_lsp.client_capabilities(profile))
    params = {"capabilities": capabilities}
    reply = start.capabilities(params, start.position_encoding(params))
    result = converter.structure({"capabilities": reply}, types.InitializeResult)
    assert result.capabilities.position_encoding == start.position_encoding(params)
    provided = {
        "textDocumentSync": ["textDocument/didOpen", "textDocument/didChange"],
        "completionProvider": ["textDocument/completion"],
        "hoverProvider": ["textDocument/hover"],
        "codeActionProvider": ["textDocument/codeAction"],
        "executeCommandProvider": ["workspace/executeCommand"],
        "diagnosticProvider": ["textDocument/diagnostic"],
        "workspace": ["workspace/didChangeWorkspaceFolders"],
    }
    answered = SESSION_METHODS | PYGLS_METHODS
    assert SESSION_METHODS.isdisjoint(PYGLS_METHODS)
    for name in reply:
        if name != "positionEncoding":
            assert set(provided[name]) <= answered, name
    client = start.read_client(params)
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    seen = Recorder()
    server = build_server("9.9", Documents(seen.publish, seen.error), client, message, print)
    features = server.protocol.fm
    pygls_methods = set(features.builtin_features) | set(features.features)
    assert PYGLS_METHODS <= pygls_methods
    assert pygls_methods <= answered
    server.shutdown()


def test_the_servers_limits_live_in_limits() -> None:
    """One rule, one home: no module of the server defines a size or count of its own
    (the JSON-RPC error codes, severities and the session's timings in seconds aside)."""
    import ast
    from pathlib import Path

    import agent_rollout.lsp

    kept = re.compile(
        r"^(ERROR|WARNING|[A-Z_]*_SECONDS|[A-Z_]*(ERROR|REQUEST|FOUND|PARAMS|"
        r"INITIALIZED|CANCELLED|FAILED))$"
    )
    found = []
    for path in sorted(Path(agent_rollout.lsp.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            names += [
                e.id
                for t in node.targets
                if isinstance(t, ast.Tuple)
                for e in t.elts
                if isinstance(e, ast.Name)
            ]
            parts = list(ast.walk(node.value))
            arithmetic = all(isinstance(n, (ast.Constant, ast.BinOp, ast.operator)) for n in parts)
            if arithmetic and all(isinstance(getattr(n, "value", 0), int) for n in parts):
                found += [f"{path.name}: {n}" for n in names if not kept.match(n.lstrip("_"))]
    assert found == []


@given(
    st.lists(
        st.sampled_from(
            [
                "rollout_backend: art",
                "  rollout_backend = 'x'",
                " ",
                "a: 1",
                '"rollout_backend": "b"',
                "x rollout_backend: c",
                "",
            ]
        ),
        max_size=6,
    )
)
def test_the_chosen_backend_is_found_as_a_search_of_every_line_finds_it(rows: list[str]) -> None:
    from agent_rollout.lsp._help import chosen_backend

    text = "\n".join(rows)
    every_line = r"""^\s*["']?rollout_backend["']?\s*[:=]\s*["']?(?P<name>[A-Za-z0-9_.-]+)"""
    want = re.search(every_line, text, re.M)
    assert chosen_backend(text) == (want and want.group("name"))
