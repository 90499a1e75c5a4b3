"""The first answers, given before pygls is loaded.

pygls is built on lsprotocol, and importing ``lsprotocol.types`` (about a
thousand attrs classes) takes most of the server's start: 0.25-0.3 s of CPU
on the machines measured, more than the config layer and the first check
together. The first answers need none of it: the reply to ``initialize`` is
the same for every client but the position encoding, and the first
diagnostics are ``check``'s. So ``answer_first`` reads the first messages
itself: it answers ``initialize``, then checks and publishes each document
opened (or answers a pull of its diagnostics), until the first diagnostics
are out or a message comes that only the full server handles. Then pygls is
loaded and given every message read so far, in order (``Early.messages``):
its replies to the ones answered here are not sent again, and a document
already checked for the version it is given is not checked again.

``CAPABILITIES`` must be what pygls computes for the server's features;
``tests/test_lsp_units.py`` compares them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Optional

from agent_rollout.lsp._diagnostics import diagnostics
from agent_rollout.lsp._documents import Checked, Document, Documents, client_values
from agent_rollout.lsp._text import Lines, uri_path

__all__ = [
    "CAPABILITIES",
    "ENCODINGS",
    "Early",
    "answer_first",
    "capabilities",
    "position_encoding",
    "read",
    "write",
]

CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": True},
    "completionProvider": {},
    "hoverProvider": True,
    "codeActionProvider": {
        "codeActionKinds": ["quickfix", "source.fixAll.agent-rollout"],
        "resolveProvider": False,
    },
    "executeCommandProvider": {"commands": []},
    "diagnosticProvider": {
        "interFileDependencies": False,
        "workspaceDiagnostics": False,
        "identifier": "agent-rollout",
    },
    "workspace": {
        "workspaceFolders": {"supported": True, "changeNotifications": True},
        "fileOperations": {},
    },
}
"""The server's capabilities, less ``positionEncoding`` (``position_encoding``)."""

ENCODINGS = ("utf-8", "utf-16", "utf-32")


def position_encoding(params: Any) -> str:
    """The client's first choice among the encodings pygls supports; UTF-16 when it names none."""
    general = _get(params, "capabilities", "general") or {}
    for name in general.get("positionEncodings") or ():
        if name in ENCODINGS:
            return str(name)
    return "utf-16"


def capabilities(params: Any, encoding: str) -> dict[str, Any]:
    """The reply's capabilities: ``CAPABILITIES`` and the encoding; pygls says ``willSave``
    (false: the server takes no such notification) to a client that names it."""
    found = {"positionEncoding": encoding, **CAPABILITIES}
    sync = _get(params, "capabilities", "textDocument", "synchronization") or {}
    names = [name for name in ("willSave", "willSaveWaitUntil") if sync.get(name) is not None]
    if names:
        found["textDocumentSync"] = {
            **CAPABILITIES["textDocumentSync"],
            **{name: False for name in names},
        }
    return found


def _get(root: Any, *path: str) -> Any:
    for name in path:
        if not isinstance(root, dict):
            return None
        root = root.get(name)
    return root


def read(stream: BinaryIO) -> Optional[bytes]:
    """One message's body (``Content-Length`` framing); ``None`` at the end of input."""
    length: Optional[int] = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is None:
                continue  # no length yet: not a header block
            return stream.read(length)
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = None


def write(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


@dataclass
class Early:
    """What ``answer_first`` read and did: the messages (bodies, in order), the ids of
    the requests it answered, the documents it opened, the settled encoding."""

    messages: list[bytes] = field(default_factory=list)
    answered: set[Any] = field(default_factory=set)
    documents: Optional[Documents] = None
    encoding: str = "utf-16"
    problems: list[str] = field(default_factory=list)
    """What the server is to show the client once it can (a bad setting)."""
    ended: bool = False
    """The input ended (the client went away) before the full server was needed."""


def answer_first(stdin: BinaryIO, stdout: BinaryIO, version: str) -> Early:
    """Answer the first messages (see the module's docstring) and return what was read."""
    early = Early()
    done = False
    pulls = False

    def lines(checked: Checked) -> Lines:
        return Lines(checked.text, early.encoding, checked.format)

    def publish(document: Document, checked: Optional[Checked]) -> None:
        nonlocal done
        if pulls:
            return
        found = [] if checked is None else diagnostics(checked, lines(checked))
        params = {"uri": document.uri, "diagnostics": found, "version": document.version}
        write(stdout, {"method": "textDocument/publishDiagnostics", "params": params})
        done = True

    while not done:
        body = read(stdin)
        if body is None:
            early.ended = True
            return early
        early.messages.append(body)
        try:
            message = json.loads(body)
        except ValueError:
            return early  # pygls answers it
        if not isinstance(message, dict):
            return early
        method, params = message.get("method"), message.get("params")
        documents = early.documents
        if method == "initialize" and documents is None and "id" in message:
            early.encoding = position_encoding(params)
            pulls = _get(params, "capabilities", "textDocument", "diagnostic") is not None
            result = {
                "capabilities": capabilities(params, early.encoding),
                "serverInfo": {"name": "agent-rollout", "version": version},
            }
            write(stdout, {"id": message["id"], "result": result})
            early.answered.add(message["id"])
            documents = early.documents = Documents(publish, early.problems.append)
            values, problems = client_values(_get(params, "initializationOptions"))
            documents.client_values = values
            early.problems.extend(f"agent-rollout: client setting ignored: {p}" for p in problems)
            root = _get(params, "rootUri")
            documents.root = uri_path(root) if isinstance(root, str) else None
        elif method == "initialized" and documents is not None:
            continue
        elif method == "textDocument/didOpen" and documents is not None:
            item = _get(params, "textDocument")
            if not (isinstance(item, dict) and _is_document(item)):
                return early
            documents.opened(item["uri"], item["text"], item["version"], item.get("languageId"))
        elif method == "textDocument/diagnostic" and documents is not None and "id" in message:
            uri = _get(params, "textDocument", "uri")
            document = documents.open.get(uri) if isinstance(uri, str) else None
            checked = None if document is None else document.checked
            if document is None or checked is None or checked.version != document.version:
                return early
            items = diagnostics(checked, lines(checked))
            write(stdout, {"id": message["id"], "result": {"kind": "full", "items": items}})
            early.answered.add(message["id"])
            done = True
        else:
            return early  # the full server's from here
    return early


def _is_document(item: dict[str, Any]) -> bool:
    return (
        isinstance(item.get("uri"), str)
        and isinstance(item.get("text"), str)
        and isinstance(item.get("version"), int)
        and not isinstance(item.get("version"), bool)
    )
