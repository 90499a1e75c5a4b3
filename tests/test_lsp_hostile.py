"""``agent-rollout lsp`` against a careless or hostile client, in raw framed bytes.

Malformed messages (before pygls is loaded, and after), a frame longer than
the server reads, a cursor two billion lines down, a 5 MB one-line JSON
file edited while another document waits, and the protocol's rules of
order (before ``initialize``, after ``shutdown``, unknown methods, bad
params, ``exit`` without ``shutdown``). The server must answer or log, and
go on.

Each test runs the real server: ``serve`` in this process on byte streams
(a fresh server each time, starting with the first answers given before
pygls is loaded), or ``agent-rollout lsp`` as a process over pipes where the
process itself is the point (its exit status, its memory, its time, a
pipe's reads). The framing is written out here, not taken from the package.
"""

from __future__ import annotations

import io
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Optional, Union

import pytest

pytest.importorskip("pygls")

from support import cli_argv, cli_env

Message = dict[str, Any]

YAML = "training:\n  rollout_backend: art\n  rollout_fucn: m:f\n"
"""A config with one issue (``unknown_key``, line 2, characters 2-14); a hover at line 1,
character 4 is on ``rollout_backend``."""


def frame(message: Union[Message, bytes]) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(ident: Any, method: str, params: Any = None, **extra: Any) -> bytes:
    message: Message = {"jsonrpc": "2.0", "id": ident, "method": method, **extra}
    if params is not None:
        message["params"] = params
    return frame(message)


def notify(method: str, params: Any = None) -> bytes:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def initialize(ident: Any = 1, capabilities: Any = None, **params: Any) -> bytes:
    return request(ident, "initialize", {"capabilities": capabilities or {}, **params})


def did_open(uri: str, text: str, language: str = "yaml", version: int = 1) -> bytes:
    item = {"uri": uri, "languageId": language, "version": version, "text": text}
    return notify("textDocument/didOpen", {"textDocument": item})


def at(uri: str, line: int, character: int) -> Message:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def unframe(data: bytes) -> list[Message]:
    """The messages in ``data``, a server's whole output."""
    found = []
    stream = io.BytesIO(data)
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            return found
        found.append(json.loads(stream.read(length)))


def answers(messages: Iterable[Message]) -> dict[Any, Message]:
    """The server's responses by id; each id answered once."""
    found: dict[Any, Message] = {}
    for message in messages:
        if "method" not in message and "id" in message:
            assert message["id"] not in found, f"answered twice: {message['id']!r}"
            found[message["id"]] = message
    return found


def published(messages: Iterable[Message], uri: str) -> list[Message]:
    return [
        m["params"]
        for m in messages
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    ]


def shown(messages: Iterable[Message]) -> list[str]:
    return [m["params"]["message"] for m in messages if m.get("method") == "window/showMessage"]


class Kept(io.BytesIO):
    """Standard output the server may close (on ``exit``), its bytes kept."""

    def close(self) -> None:
        pass


def serve_bytes(data: bytes) -> tuple[Optional[int], list[Message]]:
    """Run the server in this process on ``data``; its exit status and what it wrote."""
    from agent_rollout.lsp import serve

    stdout = Kept()
    status = serve(Kept(data), stdout)
    return status, unframe(stdout.getvalue())


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("agent_rollout"))


GOODBYE = request("bye", "shutdown") + notify("exit")


# ---- item 7: malformed messages before the first diagnostics ---------------------------------


EARLY = {
    "capabilities.general is a string": initialize(1, {"general": "x"}),
    "positionEncodings is a number": initialize(1, {"general": {"positionEncodings": 3}}),
    "synchronization is a string": initialize(1, {"textDocument": {"synchronization": "x"}}),
    "rootUri is no URI": initialize(1, rootUri="file://[x/"),
    "rootPath pygls cannot take": initialize(1, rootPath="//x"),
    "the id is a list": request([1], "initialize", {"capabilities": {}}),
    "the message is an array": frame(b"[1, 2]"),
    "the message is a number": frame(b"5"),
    "the message is not JSON": frame(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", '),
    "the message nests past the parser": frame(b"[" * 100_000 + b"]" * 100_000),
    "no jsonrpc": frame({"id": 1, "method": "initialize", "params": {"capabilities": {}}}),
    "the method is a number": request(1, 7),
    "Content-Length is negative": b"Content-Length: -5\r\n\r\n{}",
    "Content-Length is no number": b"Content-Length: x\r\n\r\n",
}
"""Each the first message a fresh server reads. ``initialize`` params of the wrong
type are read as far as they go (the reply says so: a result); a message that is
not a request the server can answer is logged; one whose id is known is answered."""

ANSWERED_EARLY = {
    "no jsonrpc": -32600,
    "the method is a number": -32600,
    "the message is not JSON": -32700,
}


@pytest.mark.parametrize("name", list(EARLY))
def test_a_malformed_first_message_is_answered_or_logged_and_the_server_goes_on(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    status, out = serve_bytes(EARLY[name] + initialize("next") + GOODBYE)
    replies = answers(out)
    first = replies.get(1)
    if name in ANSWERED_EARLY:
        assert first is not None and first["error"]["code"] == ANSWERED_EARLY[name]
    if first is not None and "result" in first:  # initialize read as far as it goes
        assert first["result"]["capabilities"]["positionEncoding"] == "utf-16"
        assert replies["next"]["error"]["code"] == -32600  # initialize twice
    else:
        assert "capabilities" in replies["next"]["result"]
        assert "skipped" in logged(caplog)
    assert replies["bye"]["result"] is None
    assert status == 0
    assert set(replies) <= {1, "next", "bye"}
    assert shown(out) == []


def test_a_document_whose_uri_does_not_parse_is_checked_as_an_unsaved_one() -> None:
    uri = "file://[x/a.yaml"  # an IPv6 host never closed: urlparse raises ValueError
    hover = request(2, "textDocument/hover", at(uri, 1, 4))
    status, out = serve_bytes(
        initialize(1, rootUri="file://[x/")
        + notify("initialized", {})
        + did_open(uri, YAML)
        + hover
        + GOODBYE
    )
    [diagnostics] = published(out, uri)
    assert [d["code"] for d in diagnostics["diagnostics"]] == ["unknown_key"]
    assert "rollout_backend" in json.dumps(answers(out)[2]["result"])
    assert status == 0 and shown(out) == []


def test_a_message_over_the_limit_is_skipped_unread_and_its_request_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from agent_rollout._limits import MAX_LSP_MESSAGE_BYTES

    caplog.set_level(logging.WARNING)
    filler = "x" * (MAX_LSP_MESSAGE_BYTES + 1)
    huge = {"jsonrpc": "2.0", "id": "huge", "method": "textDocument/hover", "params": filler}
    status, out = serve_bytes(
        initialize(1)
        + notify("initialized", {})
        + did_open("file:///w/c.yaml", YAML)
        + frame(huge)  # after the first diagnostics: pygls's phase
        + request(2, "textDocument/hover", at("file:///w/c.yaml", 1, 4))
        + GOODBYE
    )
    replies = answers(out)
    assert replies["huge"]["error"]["code"] == -32600
    assert str(MAX_LSP_MESSAGE_BYTES) in replies["huge"]["error"]["message"].replace(",", "")
    assert "rollout_backend" in json.dumps(replies[2]["result"])
    assert status == 0 and "skipped" in logged(caplog)


# ---- a process over pipes: what a real reader allocates --------------------------------------


_RUNNING: list[Server] = []


@pytest.fixture(autouse=True)
def _stop_servers() -> Iterator[None]:
    """Every server a test started is stopped, and its pipes closed, however it ends."""
    yield
    while _RUNNING:
        _RUNNING.pop().stop()


class Server:
    """The server over pipes, its messages read on a thread as they come."""

    def __init__(self, output: IO[bytes], input: IO[bytes]) -> None:
        self.input = input
        self.output = output
        self.messages: queue.Queue[tuple[float, Message]] = queue.Queue()
        self.seen: list[tuple[float, Message]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        _RUNNING.append(self)

    def _read(self) -> None:
        while True:
            length = None
            while (line := self.output.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                return
            self.messages.put((time.monotonic(), json.loads(self.output.read(length))))

    def send(self, data: bytes) -> None:
        self.input.write(data)
        self.input.flush()

    def wait_for(self, wanted: Callable[[Message], bool], timeout: float) -> tuple[float, Message]:
        """The first message ``wanted`` takes (seen before or still to come)."""
        for when, message in self.seen:
            if wanted(message):
                return when, message
        end = time.monotonic() + timeout
        while True:
            try:
                when, message = self.messages.get(timeout=max(end - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"nothing wanted came in {timeout:.0f} s") from None
            self.seen.append((when, message))
            if wanted(message):
                return when, message

    def answer(self, ident: Any, timeout: float = 60) -> Message:
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m, timeout)[1]

    def publish(self, uri: str, version: Optional[int] = None, timeout: float = 60) -> Message:
        def wanted(message: Message) -> bool:
            params = message.get("params") or {}
            return (
                message.get("method") == "textDocument/publishDiagnostics"
                and params.get("uri") == uri
                and (version is None or params.get("version") == version)
            )

        return self.wait_for(wanted, timeout)[1]["params"]

    def close_input(self) -> None:
        try:
            self.input.close()
        except BrokenPipeError:
            pass

    def stop(self) -> None:
        """Close our ends: the server's input (it ends), then, once it has, its output."""
        self.close_input()
        self.reader.join(10)
        self.output.close()


class Process(Server):
    """``agent-rollout lsp`` as a process of its own (``memory``: its address space, in bytes,
    where the system can limit it: a server that tried to hold what a message says fails
    at once instead of taking the machine's memory)."""

    def __init__(self, memory: Optional[int] = None) -> None:
        limit = None
        if memory is not None and sys.platform.startswith("linux"):
            import resource

            def limit() -> None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        self.proc = subprocess.Popen(
            cli_argv("lsp"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(),
            preexec_fn=limit,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdout, self.proc.stdin)

    def end(self, timeout: float = 60) -> tuple[int, str]:
        """Close standard input; the exit status and standard error."""
        assert self.proc.stderr is not None
        self.close_input()
        try:
            status = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return status, self.proc.stderr.read().decode("utf-8", "replace")

    def stop(self) -> None:
        self.close_input()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(60)
        super().stop()
        assert self.proc.stderr is not None
        self.proc.stderr.close()


class InProcess(Server):
    """``serve`` on a thread of this process, over pipes: a client that waits for answers,
    without a process's start."""

    def __init__(self) -> None:
        from agent_rollout.lsp import serve

        into, to_server = os.pipe()
        from_server, out = os.pipe()
        self.status: Optional[int] = None
        stdin, stdout = os.fdopen(into, "rb"), os.fdopen(out, "wb")

        def run() -> None:
            try:
                self.status = serve(stdin, stdout)
            finally:  # a server that ended (or failed) writes no more, and reads no more
                stdout.close()  # once its reader has seen the input end
                stdin.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        super().__init__(os.fdopen(from_server, "rb"), os.fdopen(to_server, "wb"))

    def end(self, timeout: float = 60) -> Optional[int]:
        self.close_input()
        self.thread.join(timeout)
        assert not self.thread.is_alive()
        return self.status

    def stop(self) -> None:
        self.close_input()
        self.thread.join(60)
        super().stop()


def test_a_process_reads_every_malformed_message_and_answers_after_each() -> None:
    """One stream over real pipes: what ends the first answers early, then what pygls
    would have failed on, a frame over the limit; then ``exit`` with no ``shutdown``
    while the client keeps its end open (status 1, and no abort at the end)."""
    from agent_rollout._limits import MAX_LSP_MESSAGE_BYTES

    server = Process(memory=2 * 1024**3)
    server.send(b"Content-Length: -5\r\n\r\n{}")  # skipped; reading resumes at the next header
    server.send(frame(b"[1, 2]") + frame(b"5") + request([1], "initialize", {}))
    server.send(frame({"id": "no-jsonrpc", "method": "initialize", "params": {}}))
    server.send(request("too-soon", "textDocument/hover", at("file:///w/c.yaml", 0, 0)))
    capabilities = {
        "general": "x",
        "textDocument": {"synchronization": "x", "hover": {"contentFormat": 5}},
    }
    server.send(initialize("init", capabilities, rootUri="file://[x/"))
    server.send(notify("initialized", {}) + did_open("file://[x/a.yaml", YAML))
    over = {"jsonrpc": "2.0", "id": "huge", "method": "x", "params": "y" * MAX_LSP_MESSAGE_BYTES}
    server.send(frame(over) + request("after", "textDocument/hover", at("file://[x/a.yaml", 1, 4)))
    assert server.answer("no-jsonrpc")["error"]["code"] == -32600
    assert server.answer("too-soon")["error"]["code"] == -32002
    assert "capabilities" in server.answer("init")["result"]
    diagnostics = server.publish("file://[x/a.yaml")["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["unknown_key"]
    assert server.answer("huge")["error"]["code"] == -32600
    assert "rollout_backend" in json.dumps(server.answer("after")["result"])
    server.send(notify("exit"))
    assert server.proc.wait(60) == 1  # standard input still open
    status, errors = server.end()
    assert status == 1, errors
    assert "internal error" not in errors and "Traceback" not in errors, errors
    assert "Fatal" not in errors, errors  # a reader thread holding stdin's lock at exit
    assert errors.count("skipped") == 6, errors


@pytest.mark.parametrize("phase", ["first answers", "pygls"])
def test_a_length_no_memory_holds_is_skipped_never_allocated(
    phase: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``Content-Length: 1000000000000`` on a pipe: a reader that trusts it asks for a
    terabyte at once (``MemoryError``). The server reads it in small pieces to the end
    of the input, and says so."""
    caplog.set_level(logging.WARNING)
    server = InProcess()
    if phase == "pygls":
        server.send(initialize(1) + notify("initialized", {}) + did_open("file:///w/c.yaml", YAML))
        server.publish("file:///w/c.yaml")
        server.send(request(2, "textDocument/hover", at("file:///w/c.yaml", 1, 4)))
        server.answer(2)
    server.send(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 200_000)
    assert server.end() == 0
    assert "1,000,000,000,000 bytes was skipped" in logged(caplog)


# ---- item 8: a cursor past the end ---------------------------------------------------------


def test_completion_two_billion_lines_down_is_answered_at_the_end_of_the_text() -> None:
    server = Process(memory=2 * 1024**3)  # a list per line up to the cursor would not fit
    uri = "file:///w/far.yaml"
    server.send(initialize(1) + notify("initialized", {}))
    server.send(did_open(uri, "training:\n  rollout_backend: art\n  "))
    far = 2**31 - 1
    server.send(request("complete", "textDocument/completion", at(uri, far, far)))
    server.send(request("hover", "textDocument/hover", at(uri, far, 0)))
    started = time.monotonic()
    items = server.answer("complete")["result"]["items"]
    assert time.monotonic() - started < 30
    assert "rollout_func" in [item["label"] for item in items]  # the last line's keys
    assert server.answer("hover")["result"] is None
    server.send(GOODBYE)
    status, errors = server.end()
    assert status == 0, errors


# ---- item 9: a large document edited while another waits -------------------------------------


def test_edits_to_a_large_one_line_file_hold_up_no_other_document() -> None:
    """A 5 MB minified JSON file (a ``tokenizer.json``: unrelated, over check's size
    limit), 30 keystrokes at the end of its one line, then a config opened: the
    config's diagnostics come at once. pygls's copy of the text cost about a second
    a keystroke here, on the one event loop."""
    vocab = ",".join(f'"t{i:07d}":{i}' for i in range(285_000))
    big = '{"model":{"vocab":{' + vocab + "}}}"
    assert len(big) > 5_000_000
    server = InProcess()
    server.send(initialize(1) + notify("initialized", {}) + did_open("file:///w/a.yaml", YAML))
    server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60)
    server.send(request("ready", "textDocument/hover", at("file:///w/a.yaml", 1, 4)))
    server.answer("ready")  # pygls is loaded: what follows is the full server's
    uri = "file:///w/tokenizer.json"
    server.send(did_open(uri, big, "json"))
    column = len(big) - 3
    for version in range(2, 32):
        where = {"line": 0, "character": column}
        change = {"range": {"start": where, "end": where}, "text": "x"}
        params = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [change],
        }
        server.send(notify("textDocument/didChange", params))
        column += 1
    sent = time.monotonic()
    server.send(did_open("file:///w/b.yaml", YAML))
    came, _ = server.wait_for(
        lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == "file:///w/b.yaml"
        ),
        60,
    )
    assert came - sent < 10, f"the other document waited {came - sent:.1f} s"
    server.send(GOODBYE)
    server.answer("bye")
    assert server.end() == 0


# ---- item 12: the protocol's answers --------------------------------------------------------


def test_a_request_before_initialize_is_answered_not_initialized() -> None:
    hover = request("early", "textDocument/hover", at("file:///w/c.yaml", 0, 0))
    status, out = serve_bytes(hover + notify("initialized", {}) + initialize(1) + GOODBYE)
    replies = answers(out)
    assert replies["early"]["error"]["code"] == -32002
    assert "capabilities" in replies[1]["result"]
    assert status == 0


def test_unknown_methods_and_bad_params_are_answered() -> None:
    uri = "file:///w/c.yaml"
    status, out = serve_bytes(
        initialize(1)
        + notify("initialized", {})
        + did_open(uri, YAML)
        + request("unknown", "agent-rollout/nothing")  # no params at all
        + request("unknown-with", "agent-rollout/nothing", {"a": 1})
        + frame({"jsonrpc": "2.0", "id": "null", "method": "textDocument/hover", "params": None})
        + request("none", "textDocument/hover")
        + request("wrong", "textDocument/hover", {"textDocument": 5})
        + notify("$/unknownNotification")
        + request("fine", "textDocument/hover", at(uri, 1, 4))
        + GOODBYE
    )
    replies = answers(out)
    assert replies["unknown"]["error"]["code"] == -32601
    assert replies["unknown-with"]["error"]["code"] == -32601
    assert replies["null"]["error"]["code"] == -32602
    assert replies["none"]["error"]["code"] == -32602
    assert replies["wrong"]["error"]["code"] == -32602
    assert "rollout_backend" in json.dumps(replies["fine"]["result"])
    assert status == 0 and shown(out) == []


def test_after_shutdown_a_request_is_answered_invalid_request() -> None:
    uri = "file:///w/c.yaml"
    status, out = serve_bytes(
        initialize(1)
        + notify("initialized", {})
        + did_open(uri, YAML)
        + request("bye", "shutdown")
        + request("late", "textDocument/hover", at(uri, 1, 4))
        + request("again", "shutdown")
        + notify("exit")
    )
    replies = answers(out)
    assert replies["bye"]["result"] is None
    assert replies["late"]["error"]["code"] == -32600
    assert replies["again"]["error"]["code"] == -32600
    assert status == 0


def test_an_edit_of_a_document_never_opened_is_logged_not_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    uri = "file:///w/c.yaml"
    change = {
        "textDocument": {"uri": "file:///w/never.yaml", "version": 2},
        "contentChanges": [{"text": "x"}],
    }
    status, out = serve_bytes(
        initialize(1)
        + notify("initialized", {})
        + did_open(uri, YAML)
        + notify("textDocument/didChange", change)
        + request("fine", "textDocument/hover", at(uri, 1, 4))
        + GOODBYE
    )
    assert shown(out) == []  # pygls showed "Error in server: KeyError"
    assert "rollout_backend" in json.dumps(answers(out)["fine"]["result"])
    assert "file:///w/never.yaml" in logged(caplog)
    assert status == 0


def test_exit_without_shutdown_ends_with_status_1() -> None:
    """The process's own status: ``test_a_process_reads_every_malformed_message...``."""
    opened = initialize(1) + notify("initialized", {}) + did_open("file:///w/c.yaml", YAML)
    assert serve_bytes(opened + notify("exit"))[0] == 1
    assert serve_bytes(opened + GOODBYE)[0] == 0
    assert serve_bytes(notify("exit"))[0] == 1  # before initialize too


# ---- what held before, kept (these pass on the server before these fixes too) ----------------


def test_a_thousand_edits_settle_on_the_final_text_with_no_stale_publish() -> None:
    uri = "file:///w/typed.yaml"
    final = "# 😀 é\r\ntraining:\r\n  rollout_backend: art\r\n  rollout_fucn: m:f\r\n"
    edits = b""
    version = 1
    typed = ""
    for index, char in enumerate(final):  # typed, with a slip deleted every tenth character
        rows = re.split("\r\n|\r|\n", typed)  # the client's lines: a CR alone ends one
        line = len(rows) - 1
        column = len(rows[-1].encode("utf-16-le")) // 2
        where = {"line": line, "character": column}
        chars = [char] if index % 10 else ["#", None, char]
        for typed_char in chars:
            version += 1
            if typed_char is None:  # delete the slip: one UTF-16 unit back
                start = {"line": line, "character": column}
                end = {"line": line, "character": column + 1}
                change = {"range": {"start": start, "end": end}, "text": ""}
            else:
                change = {"range": {"start": where, "end": where}, "text": typed_char}
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
            edits += notify("textDocument/didChange", params)
        typed += char
    while version < 1_000:  # and no-op edits up to a thousand
        version += 1
        where = {"line": 0, "character": 0}
        change = {"range": {"start": where, "end": where}, "text": ""}
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        edits += notify("textDocument/didChange", params)
    server = InProcess()
    server.send(initialize(1) + notify("initialized", {}) + did_open(uri, "") + edits)
    last = server.publish(uri, version)
    [issue] = last["diagnostics"]
    assert issue["code"] == "unknown_key"
    assert issue["range"] == {
        "start": {"line": 3, "character": 2},
        "end": {"line": 3, "character": 14},
    }
    server.send(request("hover", "textDocument/hover", at(uri, 2, 5)))
    assert "rollout_backend" in json.dumps(server.answer("hover")["result"])
    versions = [
        m["params"]["version"]
        for _, m in server.seen
        if m.get("method", "").endswith("Diagnostics")
    ]
    assert versions == sorted(versions), versions  # none older than one before it
    server.send(GOODBYE)
    server.answer("bye")
    server.end()


def test_four_hundred_requests_at_once_are_each_answered_once() -> None:
    uri = "file:///w/c.yaml"
    asks = b"".join(request(n, "textDocument/hover", at(uri, 1, n % 20)) for n in range(400))
    _, out = serve_bytes(
        initialize("init") + notify("initialized", {}) + did_open(uri, YAML) + asks + GOODBYE
    )
    replies = answers(out)
    assert set(range(400)) <= set(replies)
    assert all("result" in replies[n] for n in range(400))


# ---- review (lsp3) 1: results matched to the text, not to the client's version ---------------


def did_change_whole(uri: str, text: str, version: Any) -> bytes:
    params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}
    return notify("textDocument/didChange", params)


def applied(text: str, edits: list[Message]) -> str:
    """``text`` with a code action's edits applied as a client does (ASCII text: UTF-16
    units are characters), from the last to the first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: Message) -> int:
        return starts[min(position["line"], len(lines))] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        begin, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:begin] + edit["newText"] + text[end:]
    return text


MOVED = "training:\n  rollout_backend: art\n\n\n  rollout_fucn: m:f\n"
"""``YAML`` with its issue two lines further down."""


def fix_all(server: Server, ident: Any, uri: str) -> list[Message]:
    everywhere = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    context = {"diagnostics": [], "only": ["source.fixAll.agent-rollout"]}
    params = {"textDocument": {"uri": uri}, "range": everywhere, "context": context}
    server.send(request(ident, "textDocument/codeAction", params))
    [action] = server.answer(ident)["result"]
    edits: list[Message] = action["edit"]["changes"][uri]
    return edits


def test_a_version_sent_again_gets_the_diagnostics_and_fixes_of_the_new_text() -> None:
    """A client that sends version 1 again (or null) with new text: what the server
    answers is computed on the new text, and a fix-all applies to it cleanly."""
    uri = "file:///w/again.yaml"
    server = InProcess()
    server.send(initialize(1, {"textDocument": {"diagnostic": {}}}) + notify("initialized", {}))
    server.send(did_open(uri, YAML))
    pull = {"textDocument": {"uri": uri}}
    server.send(request("first", "textDocument/diagnostic", pull))
    [issue] = server.answer("first")["result"]["items"]
    assert issue["range"]["start"]["line"] == 2
    assert applied(YAML, fix_all(server, "fix-first", uri)) == YAML.replace("fucn", "func")
    server.send(did_change_whole(uri, MOVED, 1))  # the same version, other text
    server.send(request("again", "textDocument/diagnostic", pull))
    [issue] = server.answer("again")["result"]["items"]
    assert issue["range"]["start"]["line"] == 4
    assert applied(MOVED, fix_all(server, "fix-again", uri)) == MOVED.replace("fucn", "func")
    server.send(did_change_whole(uri, YAML, None))  # no version at all: applied all the same
    server.send(request("null", "textDocument/diagnostic", pull))
    [issue] = server.answer("null")["result"]["items"]
    assert issue["range"]["start"]["line"] == 2
    assert applied(YAML, fix_all(server, "fix-null", uri)) == YAML.replace("fucn", "func")
    server.send(GOODBYE)
    server.answer("bye")
    server.end()


def test_each_edit_with_a_null_version_is_published() -> None:
    uri = "file:///w/null.yaml"
    server = InProcess()
    server.send(initialize(1) + notify("initialized", {}) + did_open(uri, YAML))
    assert server.publish(uri, 1)["diagnostics"][0]["range"]["start"]["line"] == 2

    def published_line() -> int:
        server.seen.clear()  # the next publish, not one seen before
        params = server.publish(uri, timeout=10)
        assert params.get("version", 0) is not None  # an integer, or left out
        return int(params["diagnostics"][0]["range"]["start"]["line"])

    server.send(did_change_whole(uri, MOVED, None))
    assert published_line() == 4
    server.send(did_change_whole(uri, YAML, None))
    assert published_line() == 2
    server.send(did_change_whole(uri, MOVED, 1))  # a version number sent before
    assert published_line() == 4
    server.send(GOODBYE)
    server.answer("bye")
    server.end()


# ---- review (lsp3) 2: the id of a message that is not JSON is the top-level object's ----------


def test_an_id_inside_the_params_of_a_broken_message_is_never_answered() -> None:
    """A notification cut short whose params end with ``{"id": 5}``: nothing to answer
    (the request 5 that follows is answered once, by its own answer)."""
    uri = "file:///w/c.yaml"
    cut = b'{"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"x": {"id": 5}'
    data = initialize() + notify("initialized", {}) + did_open(uri, YAML) + frame(cut)
    data += request(5, "textDocument/hover", at(uri, 1, 4)) + GOODBYE
    _, out = serve_bytes(data)
    assert "rollout_backend" in json.dumps(answers(out)[5]["result"])


# ---- review (lsp3) 3: a header line at and over its bound ------------------------------------


def padded_header(
    body: bytes, line_bytes: int, ending: bytes = b"\r\n", first: bool = False
) -> bytes:
    """A frame of ``body`` with an extra header line of ``line_bytes`` bytes, its line
    break (``ending``) included; ``first``: the Content-Length line itself, padded."""
    length = b"Content-Length: %d" % len(body)
    if first:
        return length + b" " * (line_bytes - len(length) - len(ending)) + ending + b"\r\n" + body
    pad = b"X-Pad: " + b"a" * (line_bytes - 7 - len(ending)) + ending
    return length + b"\r\n" + pad + b"\r\n" + body


@pytest.mark.parametrize(
    ("line_bytes", "ending", "first", "read"),
    [
        (8191, b"\r\n", False, True),
        (8192, b"\r\n", False, True),
        (8192, b"\n", False, True),
        (8193, b"\r\n", False, False),  # 8191 bytes and CRLF: read as 8192, then a lone LF
        (8194, b"\r\n", False, False),
        (20_000, b"\r\n", False, False),
        (8192, b"\r\n", True, True),
        (8193, b"\r\n", True, False),
    ],
)
def test_a_header_line_over_its_bound_refuses_its_message_and_reading_goes_on(
    line_bytes: int, ending: bytes, first: bool, read: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A header line of at most 8 KiB (its break included) is read; a longer one is
    refused, with its message skipped whole (never its body read from a shifted start)
    and its request answered; the message after it is read as it is."""
    caplog.set_level(logging.WARNING)
    uri = "file:///w/c.yaml"
    hover = json.dumps(
        {"jsonrpc": "2.0", "id": "padded", "method": "textDocument/hover", "params": at(uri, 1, 4)}
    ).encode("utf-8")
    data = initialize() + notify("initialized", {}) + did_open(uri, YAML)
    data += padded_header(hover, line_bytes, ending, first)
    data += request("after", "textDocument/hover", at(uri, 1, 4)) + GOODBYE
    _, out = serve_bytes(data)
    replies = answers(out)
    assert "rollout_backend" in json.dumps(replies["after"]["result"])
    if read:
        assert "rollout_backend" in json.dumps(replies["padded"]["result"])
        assert "header line" not in logged(caplog)
    else:
        assert replies["padded"]["error"]["code"] == -32600
        assert "header line longer than 8,192 bytes" in replies["padded"]["error"]["message"]
        assert logged(caplog).count("header line longer") == 1


# ---- review (lsp3) 4: a malformed $/cancelRequest ---------------------------------------------


BAD_CANCELS = [None, {}, {"id": None}, {"id": [1]}, {"id": {"a": 1}}, {"id": 1.5}, [5], "x"]


@pytest.mark.parametrize("phase", ["first answers", "pygls"])
def test_a_malformed_cancel_is_logged_in_one_line_and_a_cancel_request_answered(
    phase: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    uri = "file:///w/c.yaml"
    server = InProcess()
    server.send(initialize(1) + notify("initialized", {}) + did_open(uri, YAML))
    server.publish(uri)
    if phase == "pygls":
        everywhere = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        params = {"textDocument": {"uri": uri}, "range": everywhere, "context": {"diagnostics": []}}
        server.send(request("actions", "textDocument/codeAction", params))
        server.answer("actions")
    caplog.clear()
    for params in BAD_CANCELS:
        server.send(notify("$/cancelRequest", params))
    server.send(frame({"jsonrpc": "2.0", "method": "$/cancelRequest"}))
    server.send(request("as-request", "$/cancelRequest", {"id": 3}))
    assert server.answer("as-request")["error"]["code"] == -32600
    server.send(request("hover", "textDocument/hover", at(uri, 1, 4)))
    assert "rollout_backend" in json.dumps(server.answer("hover")["result"])
    records = [r for r in caplog.records if "cancelRequest" in r.getMessage()]
    assert len(records) == len(BAD_CANCELS) + 1
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in records)
    server.send(GOODBYE)
    server.answer("bye")
    server.end()


# ---- review (lsp3) 5: completion reads the lines it needs ------------------------------------


@pytest.mark.parametrize("fmt", ["yaml", "toml", "json"])
def test_completion_far_down_reads_only_the_lines_it_needs(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Completion at line 100,000, in a section that starts two lines up: its keys are
    found by reading upwards to the section's start (JSON: the text up to the cursor),
    not by cutting every line above it."""
    from agent_rollout.lsp import _text

    body = {
        "yaml": ("a: 1\n", "training:\n  rollout_backend: art\n  rollout_"),
        "toml": ("a = 1\n", '[training]\nrollout_backend = "art"\nrollout_'),
        "json": ('"a": 1,\n', '"training": {"rollout_backend": "art",\n"rollout_'),
    }[fmt]
    text = ("{" if fmt == "json" else "") + body[0] * 100_000 + body[1]
    column = len(body[1].rsplit("\n", 1)[1])
    uri = f"file:///w/far.{fmt}"
    read: list[int] = []
    real = _text.Lines.line_text

    def counting(self: Any, line: int) -> str:
        read.append(line)
        return real(self, line)

    monkeypatch.setattr(_text.Lines, "line_text", counting)
    ask = request("complete", "textDocument/completion", at(uri, 100_002, column))
    _, out = serve_bytes(initialize() + did_open(uri, text, fmt) + ask + GOODBYE)
    items = answers(out)["complete"]["result"]["items"]
    assert "rollout_func" in [item["label"] for item in items]
    assert len(read) <= 10
