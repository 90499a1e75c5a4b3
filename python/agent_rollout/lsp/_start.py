"""``initialize``: what the client says it can do, and the server's reply.

The reply is the same for every client but the position encoding (the
client's first choice among UTF-8, UTF-16 and UTF-32; UTF-16 when it names
none) and ``willSave``. ``Client`` is what the server reads of the params:
the encoding, pull or push diagnostics, what the client's messages and
items can carry, its root and settings.

Every part of ``initialize``'s params is read for what it must be (a
mapping, a list, a string): one of another type counts as absent, so no
client's params end the server. pygls, loaded later for what the session
leaves to it (``_server``), reads them more strictly (cattrs refuses the
whole message for one wrong type); ``readable_initialize`` is what it is
given then, built from what was read here, so its state agrees with the
reply already sent.

``CAPABILITIES`` must name only methods the server answers;
``tests/test_lsp_units.py`` checks them against the session's and pygls's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlparse

__all__ = [
    "CAPABILITIES",
    "ENCODINGS",
    "Client",
    "capabilities",
    "position_encoding",
    "pygls_initialize",
    "read_client",
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


@dataclass(frozen=True)
class Client:
    """What the server reads of ``initialize``'s params."""

    encoding: str = "utf-16"
    pulls: bool = False
    """It pulls diagnostics (``textDocument.diagnostic``): they are answered, not pushed."""
    refresh: bool = False
    """It takes ``workspace/diagnostic/refresh`` (a pulling client, told settings changed)."""
    configuration: bool = False
    """It answers ``workspace/configuration``."""
    versioned_edits: bool = False
    """Its workspace edits may name the version they were made for (``documentChanges``)."""
    related_information: bool = False
    """Its diagnostics take ``relatedInformation`` (where a cut message's full text goes)."""
    hover_formats: Optional[tuple[str, ...]] = None
    item_formats: Optional[tuple[str, ...]] = None
    item_tags: tuple[int, ...] = ()
    """The completion item tags it shows (1: deprecated, drawn struck through)."""
    root: Optional[str] = None
    """The workspace's root URI: ``rootUri``, else the first workspace folder's."""
    options: Any = None
    """``initializationOptions``, as sent."""


def read_client(params: Any) -> Client:
    """``Client`` from ``initialize``'s params, whatever their types."""

    def flag(*path: str) -> bool:
        return bool(_get(params, "capabilities", *path))

    def strings(*path: str) -> Optional[tuple[str, ...]]:
        found = _get(params, "capabilities", *path)
        if not isinstance(found, list):
            return None
        return tuple(name for name in found if isinstance(name, str))

    tags = _get(params, "capabilities", "textDocument", "completion", "completionItem")
    tags = _get(tags, "tagSupport", "valueSet")
    related = flag("textDocument", "publishDiagnostics", "relatedInformation") or flag(
        "textDocument", "diagnostic", "relatedInformation"
    )
    return Client(
        encoding=position_encoding(params),
        pulls=_pulls(params),
        refresh=flag("workspace", "diagnostics", "refreshSupport"),
        configuration=flag("workspace", "configuration"),
        versioned_edits=flag("workspace", "workspaceEdit", "documentChanges"),
        related_information=related,
        hover_formats=strings("textDocument", "hover", "contentFormat"),
        item_formats=strings("textDocument", "completion", "completionItem", "documentationFormat"),
        item_tags=tuple(
            tag for tag in (tags if isinstance(tags, list) else ()) if isinstance(tag, int)
        ),
        root=_root(params) or _first_folder(params),
        options=_get(params, "initializationOptions"),
    )


def _first_folder(params: Any) -> Optional[str]:
    folders = _get(params, "workspaceFolders")
    if not isinstance(folders, list) or not folders:
        return None
    uri = _get(folders[0], "uri")
    if not isinstance(uri, str):
        return None
    try:
        urlparse(uri)
    except ValueError:
        return None
    return uri
