"""The open documents: their text and version, their settings, their last check.

Each open document is checked with ``check_bytes`` and the settings that
apply to it: ``[tool.agent-rollout]`` of the nearest ``pyproject.toml``
(``find_settings``), under what the client says (``initializationOptions``,
``workspace/configuration``). The server skips documents that are not
training configs (``skip_unrelated``) unless a setting says otherwise: a
client attaches it to every YAML, JSON and TOML file.

The server keeps each document's text itself (pygls keeps no copy): an
edit is applied with ``_text.apply_changes``, whose cost does not grow
with the length of the edited line. A document in a format ``check`` does
not read keeps no text at all, and its edits cost nothing. One larger than
``MAX_CONFIG_BYTES`` (``readable`` is false: check would find it too large,
or skip it as unrelated) is checked when opened, saved or pulled, not at
each edit, unless the edit takes it across the limit.

Where a check runs: a document of at most ``LSP_INLINE_CHARS`` characters is
checked on the thread that handles messages, once no message waits
(``deferred``: the session calls ``run_due`` when its queue is empty, so a
burst of edits costs one check, of the last): measured over stdio, as fast
as on a worker thread for 5% less CPU, and no other thread of ours wants
the interpreter meanwhile. A larger one is
checked on a worker thread (``executor``), so its check holds up no other
document and no message; it has at most one check in flight, edits
meanwhile only record the newest text, and a result for an older text
than the document's is dropped and the newest checked. Without an
executor, and unless ``deferred``, every check runs at once. ``check`` never
raises for bad text; should it raise anyway (a bug of ours), the document
gets no diagnostics and the server goes on (``on_error``).

Checks, their diagnostics and code actions are matched to the document's
own count of its texts (``Document.edits``, bumped at each open and edit),
never to the client's version alone: a client may send a version again, or
none (null), with new text, and what was computed on one text must never
be taken for another's (a fix-all applied to moved lines garbles them).

Each check is published once per text and settings (``publish``): a
check again with settings that read it alike (a ``pyproject.toml`` saved,
the client's settings sent again) publishes nothing. While ``holding`` (the
client's settings are still being asked for), results are kept, and
published by ``release``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Optional

from agent_rollout._limits import LSP_INLINE_CHARS
from agent_rollout.config import (
    MAX_CONFIG_BYTES,
    CheckResult,
    CheckSettings,
    ConfigError,
    check_bytes,
    find_settings,
    settings_values,
)
from agent_rollout.lsp._text import (
    Change,
    Lines,
    LineStarts,
    apply_changes,
    document_format,
    line_starts,
    uri_path,
)

__all__ = ["SETTINGS_SECTION", "Checked", "Document", "Documents", "client_values"]

SETTINGS_SECTION = "agent-rollout"
"""The section a client keeps our settings under (``workspace/configuration``, and
optionally in ``initializationOptions``)."""


def client_values(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Settings from a client (a mapping, or one under ``agent-rollout``), and what is wrong."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SETTINGS_SECTION), Mapping):
        raw = raw[SETTINGS_SECTION]
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"settings must be a mapping, got {type(raw).__name__}"]
    values, problems = settings_values(raw)
    return values, [f"{name}: {message}" for name, message in problems]


@dataclass(frozen=True)
class Checked:
    """One check of one text of a document: ``edit`` is the document's count of its
    texts (``Document.edits``) when it was this one, ``version`` the client's."""

    version: Optional[int]
    edit: int
    text: str
    format: str
    settings: CheckSettings
    result: CheckResult


@dataclass
class Document:
    """An open document: what the client last sent, and the last check that ended.

    ``text`` is empty for a format ``check`` does not read (``format`` None);
    ``starts`` are where its lines start (``_text.line_starts``), once needed.
    """

    uri: str
    format: Optional[str]
    text: str
    version: Optional[int]
    checked: Optional[Checked] = None
    running: bool = False
    waiters: list[asyncio.Future[Optional[Checked]]] = field(default_factory=list)
    starts: Optional[LineStarts] = None
    settings_epoch: int = 0
    """Bumped when the settings change: a check begun before is as outdated as one of an
    older version."""
    published: Optional[tuple[Any, ...]] = None
    """The text (``edits``) and settings of the last diagnostics published
    (``Documents._publish``)."""
    edits: int = 0
    """The server's count of this document's texts, bumped at each edit: what a check is
    matched to (``Checked.edit``), as the client's version may repeat or be null."""

    @property
    def readable(self) -> bool:
        """Whether ``check`` reads this document at all: a format it knows, and no
        larger than ``MAX_CONFIG_BYTES`` (in characters, each at least a byte). Hover,
        completion and fixes answer only for such a document."""
        return self.format is not None and len(self.text) <= MAX_CONFIG_BYTES


class Documents:
    """Open documents and their checks.

    ``publish(document, checked)`` is called with each check that is still
    current when it ends (``checked`` None: the check failed, the document's
    diagnostics go); ``on_error(message)`` with any problem that is not the
    document's (a bad setting, a bug of ours).
    """

    def __init__(
        self,
        publish: Callable[[Document, Optional[Checked]], None],
        on_error: Callable[[str], None],
        executor: Optional[Executor] = None,
    ) -> None:
        self.publish = publish
        self.on_error = on_error
        self.executor = executor
        self.open: dict[str, Document] = {}
        self.client_values: Mapping[str, Any] = {}
        self.root: Optional[str] = None
        self.deferred = False
        self.due: dict[str, Document] = {}
        """Documents to check on the message thread, in order, once no message waits."""
        self.holding = False

    # ---- settings

    def settings_for(self, document: Document) -> CheckSettings:
        """The settings of ``document``: its ``pyproject.toml``'s, the client's on top."""
        problems: list[str] = []
        settings = self._settings(document, problems)
        for problem in problems:
            self.on_error(problem)
        return settings

    def _settings(self, document: Document, problems: list[str]) -> CheckSettings:
        path = uri_path(document.uri)
        start = path if path is not None else (self.root or os.getcwd())
        try:
            settings = find_settings(start)
        except ConfigError as exc:
            problems.append(f"agent-rollout: settings ignored: {exc}")
            settings = CheckSettings()
        if "skip_unrelated" not in settings.explicit:
            settings = settings.merged({"skip_unrelated": True})
        return settings.merged(self.client_values)

    # ---- the documents

    def opened(self, uri: str, text: str, version: Optional[int], language: Optional[str]) -> None:
        fmt = document_format(uri, language)
        if fmt is None:
            text = ""  # never checked, never read: nothing to keep
        known = self.open.get(uri)
        if known is not None and (known.text, known.version) == (text, version):
            return  # opened again as it is: nothing to check
        document = Document(uri, fmt, text, version)
        self.open[uri] = document
        self.schedule(document)

    def changed(
        self, uri: str, changes: Iterable[Change], version: Optional[int], encoding: str
    ) -> bool:
        """Apply an edit (``didChange``) and check the new version; False for a document
        that is not open (the edit is dropped)."""
        document = self.open.get(uri)
        if document is None:
            return False
        document.edits += 1
        document.version = version
        if document.format is None:
            return True
        readable = document.readable
        document.text, document.starts = apply_changes(
            document.text, document.starts, changes, encoding
        )
        if readable or document.readable:
            self.schedule(document)
        # else too large before and after: check finds it too large (or unrelated) again,
        # so it is checked when saved (or pulled), not at each keystroke
        return True

    def closed(self, uri: str) -> None:
        document = self.open.pop(uri, None)
        self.due.pop(uri, None)
        if document is not None:
            self._wake(document, None)

    def recheck_all(self) -> None:
        """Check every open document again (the settings changed)."""
        for document in list(self.open.values()):
            document.checked = None
            document.settings_epoch += 1
            self.schedule(document)

    def lines(self, document: Document, encoding: str) -> Lines:
        """The document's current text for position conversions, its line starts kept
        for the next edit and the next question."""
        if document.starts is None:
            document.starts = LineStarts(line_starts(document.text))
        return Lines(document.text, encoding, document.format or "yaml", document.starts)

    # ---- checking

    def warm_up(self) -> None:
        """Check a two-line config, for what ``check`` loads at its first use (PyYAML's
        import and its patterns: 15-50 ms of CPU), so the first document's check, and an
        edit right behind it, do not pay for it."""
        try:
            check_bytes("training:\n  rollout_backend: art\n", format="yaml")
        except Exception:  # a bug of ours: the first document's check reports it
            pass

    def check(self, document: Document, text: str, version: Optional[int]) -> Optional[Checked]:
        """One check of ``text``, the document's current text (``version``: the client's
        for it); ``None`` for a format we do not read, or when the check itself failed."""
        checked, problems = self._check(document, text, version, document.edits)
        for problem in problems:
            self.on_error(problem)
        return checked

    def _check(
        self, document: Document, text: str, version: Optional[int], edit: int
    ) -> tuple[Optional[Checked], list[str]]:
        """``check``'s work, on any thread: what it found, and the problems to report."""
        problems: list[str] = []
        if document.format is None:
            return None, problems
        settings = self._settings(document, problems)
        source = uri_path(document.uri) or document.uri
        try:
            result = check_bytes(
                text, format=document.format, source=source, **settings.check_options()
            )
        except Exception as exc:  # a bug of ours: no diagnostics, the server goes on
            problems.append(f"agent-rollout: checking {source} failed: {type(exc).__name__}: {exc}")
            return None, problems
        return Checked(version, edit, text, document.format, settings, result), problems

    def schedule(self, document: Document) -> None:
        """Check the document's current version: on a worker thread when it is large,
        else once no message waits (``deferred``) or at once."""
        if document.running:
            return  # the check in flight looks at the newest text when it ends
        if self.executor is not None and len(document.text) > LSP_INLINE_CHARS:
            self.due.pop(document.uri, None)
            document.running = True
            text, version = document.text, document.version
            edit, epoch = document.edits, document.settings_epoch
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, self._check, document, text, version, edit)
            future.add_done_callback(lambda done: self._ended(document, (edit, epoch), done))
        elif self.deferred:
            self.due[document.uri] = document
        else:
            self._finish(document, self.check(document, document.text, document.version))

    def run_due(self) -> None:
        """Check the first document waiting for a check on this thread (``due``)."""
        if self.due:
            uri = next(iter(self.due))
            document = self.due.pop(uri)
            if self.open.get(uri) is document:
                self._finish(document, self.check(document, document.text, document.version))

    def _ended(
        self,
        document: Document,
        began: tuple[int, int],
        done: asyncio.Future[tuple[Optional[Checked], list[str]]],
    ) -> None:
        document.running = False
        checked: Optional[Checked] = None
        if not done.cancelled():
            error = done.exception()
            if error is not None:
                self.on_error(f"agent-rollout: a check failed: {type(error).__name__}: {error}")
            else:
                checked, problems = done.result()
                for problem in problems:
                    self.on_error(problem)
        if self.open.get(document.uri) is not document:
            return  # closed (or opened again) meanwhile
        if began != (document.edits, document.settings_epoch):
            self.schedule(document)  # outdated: dropped, and the newest text goes next
            return
        self._finish(document, checked)

    def _finish(self, document: Document, checked: Optional[Checked]) -> None:
        if checked is None:
            if document.format is not None:
                document.published = None
                self.publish(document, None)
            self._wake(document, None)
            return
        document.checked = checked
        if not self.holding:
            self._publish(document, checked)
        self._wake(document, checked)

    def _publish(self, document: Document, checked: Checked) -> None:
        """Publish a check unless the last one published read the same text alike."""
        key = (checked.edit, checked.settings.check_options(), checked.settings.strict)
        if document.published != key:
            document.published = key
            self.publish(document, checked)

    def release(self) -> None:
        """Stop ``holding``: publish each document's current check not yet published."""
        self.holding = False
        for document in list(self.open.values()):
            checked = document.checked
            if checked is not None and checked.edit == document.edits:
                self._publish(document, checked)

    def _wake(self, document: Document, checked: Optional[Checked]) -> None:
        waiters, document.waiters = document.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(checked)

    async def current(self, uri: str) -> Optional[Checked]:
        """The check of the document's current text, waiting for it if need be."""
        document = self.open.get(uri)
        if document is None:
            return None
        checked = document.checked
        if checked is not None and checked.edit == document.edits:
            return checked
        if self.due.get(uri) is document:  # asked for now: checked now
            del self.due[uri]
            checked = self.check(document, document.text, document.version)
            self._finish(document, checked)
            return checked
        waiter: asyncio.Future[Optional[Checked]] = asyncio.get_running_loop().create_future()
        document.waiters.append(waiter)
        if not document.running:
            self.schedule(document)
        return await waiter
