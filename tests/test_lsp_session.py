"""``agent-rollout lsp``'s session: what needs no pygls is answered while pygls loads;
settings asked for once; the file's suffix before the client's language; messages
for an editor's line, completion marked for the chosen backend (issue 44: 2, 7; the
Emacs findings).

The server runs in this process over real pipes (``Session`` on a thread), fed
framed JSON written out here; each test reads what it writes as it comes.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Optional

import pytest

pytest.importorskip("pygls")

from agent_rollout.lsp._text import document_format
from support import cli_env

Message = dict[str, Any]
WAIT = 60.0


def frame(message: Message) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize(capabilities: Optional[Message] = None, ident: Any = 1) -> bytes:
    params = {"processId": None, "rootUri": None, "capabilities": capabilities or {}}
    return frame({"id": ident, "method": "initialize", "params": params})


def notify(method: str, params: Any) -> bytes:
    return frame({"method": method, "params": params})


def did_open(uri: str, text: str, language: str = "yaml", version: int = 1) -> bytes:
    item = {"uri": uri, "languageId": language, "version": version, "text": text}
    return notify("textDocument/didOpen", {"textDocument": item})


def did_change(uri: str, text: str, version: int) -> bytes:
    params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}
    return notify("textDocument/didChange", params)


def at(uri: str, line: int, character: int) -> Message:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


class Server:
    """A session on a thread over pipes; ``load`` in place of pygls's loader when given."""

    def __init__(self, load: Optional[Callable[..., Any]] = None) -> None:
        from agent_rollout.lsp import serve

        into, self._to = os.pipe()
        self._from, out = os.pipe()
        stdin, stdout = os.fdopen(into, "rb"), os.fdopen(out, "wb")
        self.input = os.fdopen(self._to, "wb")
        self.output = os.fdopen(self._from, "rb")
        self.status: Optional[int] = None
        self.messages: queue.Queue[Message] = queue.Queue()
        self.seen: list[Message] = []

        def run() -> None:
            try:
                if load is None:
                    self.status = serve(stdin, stdout)
                else:
                    from agent_rollout.lsp._session import Session

                    self.status = Session("9.9", stdout, load).run(stdin)
            finally:
                stdout.close()
                stdin.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            length = None
            while (line := self.output.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                return
            self.messages.put(json.loads(self.output.read(length)))

    def send(self, data: bytes) -> None:
        self.input.write(data)
        self.input.flush()

    def wait_for(self, wanted: Callable[[Message], bool]) -> Message:
        for message in self.seen:
            if wanted(message):
                return message
        end = time.monotonic() + WAIT
        while True:
            try:
                message = self.messages.get(timeout=max(end - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"nothing wanted came in {WAIT:.0f} s") from None
            self.seen.append(message)
            if wanted(message):
                return message

    def answer(self, ident: Any) -> Message:
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m)

    def publish(self, uri: str, version: int) -> Message:
        return self.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            )
        )["params"]

    def published(self, uri: str) -> list[Message]:
        """Every publish of ``uri`` read so far."""
        self.drain()
        return [
            m["params"]
            for m in self.seen
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
        ]

    def asked(self, method: str) -> list[Message]:
        """The requests of ``method`` the server sent so far."""
        self.drain()
        return [m for m in self.seen if m.get("method") == method and "id" in m]

    def drain(self) -> None:
        while True:
            try:
                self.seen.append(self.messages.get_nowait())
            except queue.Empty:
                return

    def end(self) -> Optional[int]:
        self.input.close()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        self.reader.join(WAIT)
        self.output.close()
        return self.status


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Servers a test starts, ended however it ends."""
    started: list[Server] = []
    yield started
    for server in started:
        if server.thread.is_alive() or not server.input.closed:
            try:
                server.end()
            except (AssertionError, OSError):
                pass


YAML = "training:\n  rollout_backend: art\n  rollout_fucn: m:f\n"
URI = "file:///nowhere/c.yaml"


# ---- item 2: no stall after start ------------------------------------------------------------


def test_everything_but_code_actions_is_answered_while_pygls_loads(
    servers: list[Server],
) -> None:
    """pygls's loader held until the end: the first diagnostics, an edit's, a hover, a
    completion, a pull and ``shutdown`` are answered meanwhile; a code action, which
    needs pygls, waits for it, and is answered (cancelled) at ``shutdown``; ``exit``
    ends the session with pygls still loading."""
    loading, release = threading.Event(), threading.Event()

    def load(*args: Any) -> Any:
        loading.set()
        release.wait(WAIT)
        raise RuntimeError("never loaded")  # released only after the session ended

    server = Server(load)
    servers.append(server)
    server.send(initialize() + notify("initialized", {}) + did_open(URI, YAML))
    server.send(did_change(URI, YAML.replace("fucn", "func"), 2))
    action = {
        "textDocument": {"uri": URI},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []},
    }
    server.send(frame({"id": "fix", "method": "textDocument/codeAction", "params": action}))
    server.send(frame({"id": "hover", "method": "textDocument/hover", "params": at(URI, 1, 4)}))
    server.send(frame({"id": "more", "method": "textDocument/completion", "params": at(URI, 2, 2)}))
    assert server.publish(URI, 2)["diagnostics"] == []  # the typo fixed (version 1 skipped)
    assert "rollout_backend" in json.dumps(server.answer("hover")["result"])
    assert server.answer("more")["result"]["items"]
    assert loading.wait(WAIT)  # pygls is loading (the code action asked for it) ...
    server.send(frame({"id": "bye", "method": "shutdown"}))
    assert server.answer("bye")["result"] is None  # ... and shutdown does not wait for it
    assert server.answer("fix")["error"]["code"] == -32800
    server.send(notify("exit", None))
    assert server.end() == 0 and not release.is_set()  # ended, pygls still loading
    release.set()


HOLD_LSPROTOCOL = """
import importlib.abc, importlib.util, os, sys, time

class Hold(importlib.abc.MetaPathFinder):
    # importing lsprotocol (pygls's base) waits until the test says so: it is found at
    # once (the server looks for it before it starts), its code runs when released
    def find_spec(self, name, path, target=None):
        if name != "lsprotocol":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        run = spec.loader.exec_module

        def held(module):
            end = time.monotonic() + 60
            while not os.path.exists(os.environ["AR_RELEASE"]) and time.monotonic() < end:
                time.sleep(0.01)
            run(module)

        spec.loader.exec_module = held
        return spec

sys.meta_path.insert(0, Hold())
from agent_rollout.cli import main
sys.exit(main(["lsp"]))
"""


def test_a_server_whose_pygls_import_hangs_answers_all_but_code_actions(
    tmp_path: Path,
) -> None:
    """``agent-rollout lsp`` as a process, its import of lsprotocol held: an edit right
    after start gets its diagnostics, a hover and ``shutdown`` their answers, ``exit``
    ends it. (Before, the server imported pygls on the thread that reads messages once
    the first diagnostics were out, and every message after waited for it.)"""
    release = tmp_path / "release"
    environment = {**cli_env(), "AR_RELEASE": str(release)}
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LSPROTOCOL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(
                initialize()
                + notify("initialized", {})
                + did_open(URI, YAML)
                + did_change(URI, YAML.replace("fucn", "func"), 2)
                + frame({"id": "hover", "method": "textDocument/hover", "params": at(URI, 1, 4)})
                + frame({"id": "bye", "method": "shutdown"})
            )
            process.stdin.flush()
            got = read_until(process.stdout, lambda m: m.get("id") == "bye", 30)
            versions = [
                m["params"]["version"]
                for m in got
                if m.get("method") == "textDocument/publishDiagnostics"
            ]
            assert versions[-1:] == [2]
            assert any(m.get("id") == "hover" and m["result"] for m in got)
            assert not release.exists()  # all of it while lsprotocol could not be imported
            process.stdin.write(notify("exit", None))
            process.stdin.close()
            assert process.wait(30) == 0
        finally:
            release.touch()
            if process.poll() is None:
                process.kill()


def read_until(stream: IO[bytes], last: Callable[[Message], bool], seconds: float) -> list[Message]:
    """The messages on ``stream`` up to the one ``last`` takes, read on a thread (a
    server that never sends it fails the test after ``seconds``)."""
    found: list[Message] = []
    done = threading.Event()

    def read() -> None:
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                return
            found.append(json.loads(stream.read(length)))
            if last(found[-1]):
                done.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(seconds), f"no answer in {seconds:.0f} s; got {found}"
    return found


def test_a_code_action_asked_while_pygls_loads_is_answered_once_it_has(
    servers: list[Server],
) -> None:
    server = Server()
    servers.append(server)
    server.send(initialize() + notify("initialized", {}) + did_open(URI, YAML))
    params = {
        "textDocument": {"uri": URI},
        "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 4}},
        "context": {"diagnostics": [], "only": ["quickfix"]},
    }
    server.send(frame({"id": "fix", "method": "textDocument/codeAction", "params": params}))
    [action] = server.answer("fix")["result"]
    assert "rollout_func" in action["title"]
    server.send(frame({"id": "bye", "method": "shutdown"}) + notify("exit", None))
    assert server.answer("bye")["result"] is None
    assert server.end() == 0


# ---- finding (b): settings asked for once, each version published once -----------------------


def test_settings_are_asked_for_once_and_each_version_published_once(
    servers: list[Server],
) -> None:
    """As eglot starts: ``initialized``, then ``didChangeConfiguration`` without our
    section, then the document. One ``workspace/configuration``; the first diagnostics
    are those of the client's settings (strict: the warning an error), published once;
    settings sent again as they are publish nothing; a change publishes once."""
    server = Server()
    servers.append(server)
    text = "training:\n  rollout_backend: art\n"  # one warning: rollout_func is not set
    server.send(initialize({"workspace": {"configuration": True}}))
    server.send(notify("initialized", {}))
    server.send(notify("workspace/didChangeConfiguration", {"settings": {}}))
    server.send(did_open(URI, text))
    ask = server.wait_for(lambda m: m.get("method") == "workspace/configuration")
    server.send(frame({"id": "sync", "method": "textDocument/hover", "params": at(URI, 0, 0)}))
    server.answer("sync")  # every message before it handled: no second ask, nothing published
    assert len(server.asked("workspace/configuration")) == 1
    assert server.published(URI) == []
    server.send(frame({"id": ask["id"], "result": [{"strict": True}]}))
    first = server.publish(URI, 1)
    assert [d["severity"] for d in first["diagnostics"]] == [1]  # strict from the start
    server.send(frame({"id": "sync1", "method": "textDocument/hover", "params": at(URI, 0, 0)}))
    server.answer("sync1")
    assert len(server.published(URI)) == 1

    same = {"settings": {"agent-rollout": {"strict": True}}}
    server.send(notify("workspace/didChangeConfiguration", same))
    server.send(frame({"id": "sync2", "method": "textDocument/hover", "params": at(URI, 0, 0)}))
    server.answer("sync2")
    time.sleep(0.2)  # a check again would have published by now
    assert len(server.published(URI)) == 1
    server.send(notify("workspace/didChangeConfiguration", {"settings": {"agent-rollout": {}}}))
    server.wait_for(
        lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and [d["severity"] for d in m["params"]["diagnostics"]] == [2]
        )
    )
    server.send(frame({"id": "bye", "method": "shutdown"}) + notify("exit", None))
    server.answer("bye")
    assert len(server.published(URI)) == 2
    assert len(server.asked("workspace/configuration")) == 1
    assert server.end() == 0


# ---- finding (a): the file's suffix before the client's language ------------------------------


def test_the_suffix_names_the_format_before_the_language_id(servers: list[Server]) -> None:
    assert document_format("file:///w/train.toml", "yaml") == "toml"
    assert document_format("file:///w/c.YML", "json") == "yaml"
    assert document_format("untitled:Untitled-1", "toml") == "toml"  # no suffix: the language
    assert document_format("file:///w/c.jsonc", "jsonc") == "json"
    assert document_format("file:///w/notes.txt", "plaintext") is None
    server = Server()
    servers.append(server)
    toml = '[training]\nrollout_backend = "art"\nrollout_fucn = "m:f"\n'
    uri = "file:///w/train.toml"
    server.send(initialize() + notify("initialized", {}) + did_open(uri, toml, "yaml"))
    assert [d["code"] for d in server.publish(uri, 1)["diagnostics"]] == ["unknown_key"]
    server.send(frame({"id": "bye", "method": "shutdown"}) + notify("exit", None))
    server.answer("bye")
    server.end()


# ---- item 7: messages for an editor's line, completion for the chosen backend ----------------

VERSIONS = "training:\n  rollout_backend: Open-Env\n  rollout_func: m:f\n  rollout_max_steps: 010\n"


def test_messages_are_short_with_the_full_text_beside(servers: list[Server]) -> None:
    server = Server()
    servers.append(server)
    capabilities = {
        "textDocument": {
            "publishDiagnostics": {"relatedInformation": True},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
        }
    }
    server.send(initialize(capabilities) + notify("initialized", {}) + did_open(URI, VERSIONS))
    found = {d["code"]: d for d in server.publish(URI, 1)["diagnostics"]}
    backend, version = found["value"], found["yaml_version"]
    assert (
        backend["message"] == "rollout_backend='Open-Env' is not supported; did you mean 'openenv'?"
    )
    assert version["message"] == (
        "'010' reads as int 8 under YAML 1.1 and as int 10 under YAML 1.2; quote it…"
    )
    [full] = version["relatedInformation"]
    assert full["location"] == {"uri": URI, "range": version["range"]}
    assert full["message"].startswith(
        "training.rollout_max_steps: '010' reads as int 8 under YAML 1.1 (yaml.safe_load, as "
    )
    assert full["message"].endswith("; quote it, or write it so that both read it alike")
    # The hover over the value: the full text (and no key's help: a value has none).
    server.send(frame({"id": "h", "method": "textDocument/hover", "params": at(URI, 3, 22)}))
    hover = server.answer("h")["result"]["contents"]["value"]
    assert hover == full["message"]
    # Over the backend's value: the full text, then the backend's help.
    server.send(frame({"id": "b", "method": "textDocument/hover", "params": at(URI, 1, 20)}))
    hover = server.answer("b")["result"]["contents"]["value"]
    assert hover.startswith("training.rollout_backend: rollout_backend='Open-Env' is not ")
    assert "valid: art, nemo_gym, openenv, ruler" in hover and "**openenv**" in hover
    # A message that fits is whole, without the key path its range shows.
    server.send(did_change(URI, VERSIONS.replace("rollout_func", "rollout_fucn"), 2))
    typo = [d for d in server.publish(URI, 2)["diagnostics"] if d["code"] == "unknown_key"]
    assert typo[0]["message"] == "unknown key 'rollout_fucn'; did you mean 'rollout_func'?"
    assert "relatedInformation" not in typo[0]
    server.send(frame({"id": "bye", "method": "shutdown"}) + notify("exit", None))
    server.answer("bye")
    server.end()


def test_short_messages_cut_where_the_sentence_breaks() -> None:
    from agent_rollout.lsp._diagnostics import short_message

    fits = "unknown key 'rollout_fucn'; did you mean 'rollout_func'?"
    assert short_message(fits) == fits
    assert (
        short_message(
            "rollout_func is not set: the built-in 'ruler' adapter needs it (a runner "
            "registered with register_rollout_runner may not)"
        )
        == "rollout_func is not set: the built-in 'ruler' adapter needs it"
    )
    words = "word " * 40
    assert short_message(words) == ("word " * 19).strip() + "…"
    assert short_message("first; " + "x" * 120 + "; last") == "first; last"  # never a list cut
    assert len(short_message("x" * 300)) == 100


def test_completion_ranks_the_keys_of_other_backends_last_and_marks_them(
    servers: list[Server],
) -> None:
    server = Server()
    servers.append(server)
    item = {"documentationFormat": ["markdown"], "tagSupport": {"valueSet": [1]}}
    capabilities = {"textDocument": {"completion": {"completionItem": item}}}
    text = "training:\n  rollout_backend: art\n  rollout_\n"
    server.send(initialize(capabilities) + notify("initialized", {}) + did_open(URI, text))
    server.send(frame({"id": "c", "method": "textDocument/completion", "params": at(URI, 2, 10)}))
    items = sorted(server.answer("c")["result"]["items"], key=lambda i: i["sortText"])
    labels = [i["label"] for i in items]
    wrong = [
        "rollout_judge_model",
        "rollout_judge_base_url",
        "rollout_gym_config",
        "rollout_gym_head_port",
    ]
    assert sorted(labels[-len(wrong) :]) == sorted(wrong)  # last, after every key art takes
    for entry in items:
        if entry["label"] in wrong:
            assert entry["tags"] == [1]  # struck through
            assert entry["detail"].startswith("not for 'art': needs rollout_backend '")
            assert entry["documentation"]["value"].startswith("**Not for `art`**")
        else:
            assert "tags" not in entry and not entry["detail"].startswith("not for")
    assert "rollout_func" in labels[: -len(wrong)]
    server.send(frame({"id": "bye", "method": "shutdown"}) + notify("exit", None))
    server.answer("bye")
    server.end()
