"""The first answers, given before pygls is loaded.

pygls is built on lsprotocol, and importing ``lsprotocol.types`` (about a
thousand attrs classes) takes most of the server's start: 0.25-0.3 s of CPU
on the machines measured, more than the config layer and the first check
together. The first answers need none of it: the reply to ``initialize`` is
the same for every client but the position encoding, and the first
diagnostics are ``check``'s. So ``answer_first`` reads the first messages
itself (``_wire.receive``): it answers ``initialize``, then checks and
publishes each document opened (or answers a pull of its diagnostics),
until the first diagnostics are out or a message comes that only the full
server handles (one ``_wire`` refused among them, or a document larger
than ``INLINE_CHARS``, whose check here would hold up what follows). Then
pygls is loaded and given every message read so far, in order
(``Early.messages``): its replies to the ones answered here are not sent
again, and a document already checked for the version it is given is not
checked again.

Every part of ``initialize``'s params is read for what it must be (a
mapping, a list, a string): one of another type counts as absent, so no
client's params end the server. pygls reads them more strictly (cattrs
refuses the whole message for one wrong type); ``readable_initialize`` is
what it is given then, built from what was read here, so its server agrees
with the reply already sent.

``CAPABILITIES`` must be what pygls computes for the server's features;
``tests/test_lsp_units.py`` compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, BinaryIO, Optional, Union
from urllib.parse import urlparse

from agent_rollout.lsp._diagnostics import diagnostics
from agent_rollout.lsp._documents import (
    INLINE_CHARS,
    Checked,
    Document,
    Documents,
    client_values,
)
from agent_rollout.lsp._text import Lines, uri_path
from agent_rollout.lsp._wire import Incoming, Refused, receive, write

__all__ = [
    "CAPABILITIES",
    "ENCODINGS",
    "Early",
    "answer_first",
    "capabilities",
    "position_encoding",
    "pygls_initialize",
    "readable_initialize",
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
    offered = _get(params, "capabilities", "general", "positionEncodings")
    for name in offered if isinstance(offered, list) else ():
        if isinstance(name, str) and name in ENCODINGS:
            return name
    return "utf-16"


def capabilities(params: Any, encoding: str) -> dict[str, Any]:
    """The reply's capabilities: ``CAPABILITIES`` and the encoding; pygls says ``willSave``
    (false: the server takes no such notification) to a client that names it."""
    found = {"positionEncoding": encoding, **CAPABILITIES}
    sync = _get(params, "capabilities", "textDocument", "synchronization")
    if not isinstance(sync, dict):
        return found
    names = [name for name in ("willSave", "willSaveWaitUntil") if sync.get(name) is not None]
    if names:
        found["textDocumentSync"] = {
            **CAPABILITIES["textDocumentSync"],
            **{name: False for name in names},
        }
    return found


def _pulls(params: Any) -> bool:
    """Whether the client pulls diagnostics (``textDocument.diagnostic`` in its capabilities)."""
    return _get(params, "capabilities", "textDocument", "diagnostic") is not None


def _root(params: Any) -> Optional[str]:
    """The client's ``rootUri``, when it is a URI ``urlparse`` reads (``file://[x/`` is not)."""
    root = _get(params, "rootUri")
    if not isinstance(root, str):
        return None
    try:
        urlparse(root)
    except ValueError:
        return None
    return root


def pygls_initialize(params: Any) -> Any:
    """``initialize``'s params as pygls is given them: without ``rootPath`` (pygls turns
    it into a URI, and raises on some paths: ``//x``; the server reads only ``rootUri``)
    and with a ``rootUri`` that is not a URI made null (pygls's ``to_fs_path`` raises
    ``ValueError`` on ``file://[x/``)."""
    if not isinstance(params, dict):
        return params
    kept = {name: value for name, value in params.items() if name != "rootPath"}
    if "rootUri" in kept and kept["rootUri"] is not None and _root(params) is None:
        kept["rootUri"] = None
    return kept


def readable_initialize(params: Any) -> dict[str, Any]:
    """What the server reads of ``initialize``'s params, as params pygls can read: the
    encoding chosen, pull or push, the root, the client's settings. pygls is given
    this when it cannot read the client's own (a wrong type somewhere)."""
    caps: dict[str, Any] = {"general": {"positionEncodings": [position_encoding(params)]}}
    if _pulls(params):
        caps["textDocument"] = {"diagnostic": {}}
    readable: dict[str, Any] = {"processId": None, "capabilities": caps, "rootUri": _root(params)}
    options = _get(params, "initializationOptions")
    if options is not None:
        readable["initializationOptions"] = options
    return readable


def _get(root: Any, *path: str) -> Any:
    """The value at ``path`` in nested mappings; None where a level is not a mapping."""
    for name in path:
        if not isinstance(root, dict):
            return None
        root = root.get(name)
    return root


@dataclass
class Early:
    """What ``answer_first`` read and did: the messages (in order, as ``_wire.receive``
    gave them), the ids of the requests it answered, the documents it opened, the
    settled encoding."""

    messages: list[Incoming] = field(default_factory=list)
    answered: set[Union[int, str]] = field(default_factory=set)
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
        message = receive(stdin)
        if message is None:
            early.ended = True
            return early
        early.messages.append(message)
        if isinstance(message, Refused):
            return early  # the full server logs it, and answers it where it can
        method, params, ident = message.get("method"), message.get("params"), message.get("id")
        documents = early.documents
        if method == "initialize" and documents is None and ident is not None:
            early.encoding = position_encoding(params)
            pulls = _pulls(params)
            result = {
                "capabilities": capabilities(params, early.encoding),
                "serverInfo": {"name": "agent-rollout", "version": version},
            }
            write(stdout, {"id": ident, "result": result})
            early.answered.add(ident)
            documents = early.documents = Documents(publish, early.problems.append)
            values, problems = client_values(_get(params, "initializationOptions"))
            documents.client_values = values
            early.problems.extend(f"agent-rollout: client setting ignored: {p}" for p in problems)
            root = _root(params)
            documents.root = uri_path(root) if root is not None else None
        elif method == "initialized" and documents is not None and ident is None:
            continue
        elif method == "textDocument/didOpen" and documents is not None and ident is None:
            item = _get(params, "textDocument")
            if not (isinstance(item, dict) and _is_document(item)):
                return early
            if len(item["text"]) > INLINE_CHARS:
                return early  # checked on a worker thread, by the full server
            language = item.get("languageId")
            documents.opened(
                item["uri"],
                item["text"],
                item["version"],
                language if isinstance(language, str) else None,
            )
        elif method == "textDocument/diagnostic" and documents is not None and ident is not None:
            uri = _get(params, "textDocument", "uri")
            document = documents.open.get(uri) if isinstance(uri, str) else None
            checked = None if document is None else document.checked
            if document is None or checked is None or checked.version != document.version:
                return early
            items = diagnostics(checked, lines(checked))
            write(stdout, {"id": ident, "result": {"kind": "full", "items": items}})
            early.answered.add(ident)
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
