"""The wire under the language server: framed JSON-RPC messages in and out.

``receive`` reads one ``Content-Length`` frame and parses it; ``read_into``
runs it on the reader thread, feeding the session's event loop. Nothing a
client sends ends the reader or makes it hold more than
``MAX_LSP_MESSAGE_BYTES`` of one message:

- a header line is at most ``LSP_HEADER_LINE_BYTES`` long, its line break
  included; a longer one is read to its end in pieces of that size and
  refuses its header block: the message is skipped (exactly, when its
  length is known: its request answered), else reading goes on at the next
  header; a longer line before any header is a lost body's, and a header
  at its end starts the next block;
- a frame longer than the limit is read in ``LSP_SKIP_CHUNK_BYTES`` pieces and
  dropped (its id, when its first or last bytes show one, is kept so the
  request can be answered);
- a ``Content-Length`` that is not a number (``-5``) drops its header
  block; reading goes on at the next header that names a length, even
  one that follows the lost body on the same line;
- a body that is not a JSON-RPC 2.0 message (not JSON, nested past what
  the parser takes, not an object, no ``"jsonrpc": "2.0"``, an id that is
  neither an integer nor a string, a method that is not a string) is
  ``Refused``.

A body is read as a JSON object member by member, each value by ``json``'s
own decoder (one parse, whatever its size), so one that breaks partway
still shows the id of its top-level object, when it came before the break:
never an ``"id"`` inside a param.

A ``Refused`` carries the JSON-RPC error code and, when the message was a
request whose id is known, the id to answer; the caller logs it and
answers that id (never a response of the client's, never ``id: null``,
which some clients cannot take).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import reprlib
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO, Optional, Union

from agent_rollout._limits import (
    LSP_HEADER_LINE_BYTES,
    LSP_ID_EDGE_BYTES,
    LSP_ID_SCALAR_CHARS,
    LSP_SKIP_CHUNK_BYTES,
    MAX_LSP_MESSAGE_BYTES,
)

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "REQUEST_FAILED",
    "SERVER_NOT_INITIALIZED",
    "Incoming",
    "Refused",
    "error_reply",
    "frame",
    "is_id",
    "read_into",
    "receive",
    "write",
]

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803

_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


@dataclass(frozen=True)
class Refused:
    """A message the server does not handle: why (a sentence for the log and the
    client), the JSON-RPC error ``code``, and the ``id`` of the request to answer
    (``None``: nothing to answer, or no id could be read)."""

    reason: str
    code: int
    id: Optional[Union[int, str]] = None


Incoming = Union[dict[str, Any], Refused]
"""What ``receive`` gives: a well-formed message, or why one was refused."""


def is_id(value: Any) -> bool:
    """A request id the protocol allows: an integer or a string."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def receive(stream: BinaryIO) -> Optional[Incoming]:
    """The next message on ``stream``; ``None`` when the input has ended.

    A message is a JSON object with ``"jsonrpc": "2.0"``, an ``id`` (if any)
    that ``is_id`` accepts and a string ``method`` (if any), holding one of
    the two. Its ``params`` are not looked at: that is the handler's work.
    """
    header = _header(stream)
    if header is None or isinstance(header, Refused):
        return header
    if header > MAX_LSP_MESSAGE_BYTES:
        head, tail, ended = _skip(stream, header)
        return Refused(
            f"a message of {header:,} bytes was skipped: the longest read is "
            f"{MAX_LSP_MESSAGE_BYTES:,} bytes (MAX_LSP_MESSAGE_BYTES)"
            + (" (the input ended inside it)" if ended else ""),
            INVALID_REQUEST,
            None if ended else _find_id(head, tail),
        )
    body = _read(stream, header)
    if body is None:
        return None
    return _parse(body)


def error_reply(id: Union[int, str], code: int, message: str) -> dict[str, Any]:
    """The response that answers request ``id`` with an error."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def frame(message: dict[str, Any]) -> bytes:
    """One message as sent: the ``Content-Length`` header, then the JSON."""
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def write(stream: BinaryIO, message: dict[str, Any]) -> None:
    """Send one message, framed, and flush it."""
    stream.write(frame(message))
    stream.flush()


def _header(stream: BinaryIO) -> Union[int, Refused, None]:
    """The length a header block names; a ``Refused`` for a block whose length is
    not a number, or with a line over ``LSP_HEADER_LINE_BYTES``; ``None`` at the end of
    input. Lines before a header are skipped."""
    length: Optional[int] = None
    bad: Optional[bytes] = None
    over = False
    while True:
        line = stream.readline(LSP_HEADER_LINE_BYTES)
        if not line:
            return None
        if len(line) == LSP_HEADER_LINE_BYTES and not line.endswith(b"\n"):
            long = _long_line(stream, line)
            if long is None:
                return None
            head, tail, rest_blank = long
            found = _LENGTH.search(tail)  # never the line's start: the line is longer
            if not head.strip() and rest_blank:
                line = b"\n"  # only blanks: a blank line
            elif length is None and bad is None and found is not None:
                line = tail[found.start() :]  # a header after a lost body, on its line
            elif rest_blank:
                over, line = True, head  # a header padded past the bound: its length kept
            else:
                over = True
                continue
        if not line.strip():
            if bad is not None:
                shown = bad[:40].decode("ascii", "replace")
                return Refused(
                    f"a message whose Content-Length is not a length ({shown!r}) was skipped",
                    INVALID_REQUEST,
                )
            if over:
                return _over_long(stream, length)
            if length is not None:
                return length
            continue  # no header yet: a blank line between messages
        found = _LENGTH.search(line)
        if found is not None:
            value = found.group(1).strip()
            if value.isdigit() and len(value) <= 20:
                length, bad = int(value), None
            else:
                length, bad = None, value


def _long_line(stream: BinaryIO, first: bytes) -> Optional[tuple[bytes, bytes, bool]]:
    """The rest of a line longer than ``LSP_HEADER_LINE_BYTES`` read and dropped: its first
    piece, its last ``LSP_HEADER_LINE_BYTES`` bytes, and whether all after its first piece
    is blank; ``None`` when the input ends first."""
    tail = first
    rest_blank = True
    while True:
        piece = stream.readline(LSP_HEADER_LINE_BYTES)
        if not piece:
            return None
        rest_blank = rest_blank and not piece.strip()
        tail = (tail + piece)[-LSP_HEADER_LINE_BYTES:]
        if piece.endswith(b"\n"):
            return first, tail, rest_blank


def _over_long(stream: BinaryIO, length: Optional[int]) -> Optional[Refused]:
    """A header block with a line over ``LSP_HEADER_LINE_BYTES``, refused: its message
    skipped when its length is known (the request answered, when its id shows), else
    reading goes on at the next header; ``None`` when the input ends inside it."""
    reason = (
        f"a message with a header line longer than {LSP_HEADER_LINE_BYTES:,} bytes "
        "(LSP_HEADER_LINE_BYTES) was skipped"
    )
    if length is None:
        return Refused(reason + "; reading goes on at the next Content-Length", INVALID_REQUEST)
    head, tail, ended = _skip(stream, length)
    if ended:
        return None
    return Refused(reason, INVALID_REQUEST, _find_id(head, tail))


def _read(stream: BinaryIO, length: int) -> Optional[bytes]:
    """Exactly ``length`` bytes; ``None`` when the input ends first."""
    body = stream.read(length)
    if len(body) == length:
        return body
    parts = [body]
    got = len(body)
    while got < length:
        more = stream.read(length - got)
        if not more:
            return None
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _skip(stream: BinaryIO, length: int) -> tuple[bytes, bytes, bool]:
    """Read ``length`` bytes in pieces, keeping only the first and last ``LSP_ID_EDGE_BYTES``;
    whether the input ended first."""
    head = b""
    tail = b""
    left = length
    while left:
        chunk = stream.read(min(LSP_SKIP_CHUNK_BYTES, left))
        if not chunk:
            return head, tail, True
        left -= len(chunk)
        if len(head) < LSP_ID_EDGE_BYTES:
            head += chunk[: LSP_ID_EDGE_BYTES - len(head)]
        tail = (tail + chunk)[-LSP_ID_EDGE_BYTES:]
    return head, tail, False


def _find_id(head: bytes, tail: bytes) -> Optional[Union[int, str]]:
    """The id of a request whose body was not read whole: a member of the top-level
    object among its first members (read in order from ``head``, its first bytes) or
    among its last (read backwards from ``tail``, its last bytes: a message longer than
    what is read is taken to be well-formed, so its last ``}`` closes the object). Never
    an ``"id"`` inside a param, nor one of a response (no ``method``)."""
    first = _members(head.decode("utf-8", "replace"))[0] or {}
    last = _last_members(tail.decode("utf-8", "replace"))
    return _request_id({**last, **first})


def _request_id(members: dict[str, Any]) -> Optional[Union[int, str]]:
    """The id to answer, of a message whose top-level ``members`` are known: a request's
    (one with a method), when it is one the protocol allows."""
    if "method" not in members:
        return None  # a response of the client's, or nothing to tell: never answered
    value = members.get("id")
    return value if is_id(value) else None


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _members(text: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """The members of the JSON object ``text`` holds, and why reading stopped short of its
    end (``None``: the whole object was read, and nothing follows it); ``(None, None)``
    when ``text`` does not start with an object.

    Each member's value is read by ``json``'s own decoder, once: the text costs one
    parse, however large, and the members read before an error are the top-level
    object's own (an ``"id"`` in a param or a string is never taken for its id).
    """
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", at):
        return None, None
    members: dict[str, Any] = {}
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    try:
        if text.startswith("}", at):
            at += 1
        else:
            while True:
                if not text.startswith('"', at):
                    return members, f"a member name expected at character {at}"
                key, at = _DECODER.raw_decode(text, at)  # a string: it starts with a quote
                at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
                if not text.startswith(":", at):
                    return members, f"':' expected at character {at}"
                at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                members[key], at = _DECODER.raw_decode(text, at)
                at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
                if text.startswith(",", at):
                    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                    continue
                if text.startswith("}", at):
                    at += 1
                    break
                return members, f"',' or '}}' expected at character {at}"
    except RecursionError:
        return members, "nested too deeply"
    except ValueError as exc:
        return members, str(exc)
    if _SPACE.match(text, at).end() != len(text):  # type: ignore[union-attr]
        return members, f"more after the message at character {at}"
    return members, None


_SCALAR_END = re.compile(r"(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)\Z")


def _last_members(text: str) -> dict[str, Any]:
    """The last members of the JSON object whose last bytes ``text`` holds, read
    backwards while their values are strings or scalars (an object or an array, or
    the start of ``text``, stops the reading). A quote is a string's own when an even
    number of backslashes comes before it (one inside a string has an odd number)."""
    found: dict[str, Any] = {}
    end = _back(text, len(text))
    if not text.endswith("}", 0, end):
        return found
    end -= 1
    while True:
        end = _back(text, end)
        if text.endswith('"', 0, end):
            start = _string_start(text, end - 1)
        else:
            scalar = _SCALAR_END.search(text[max(end - LSP_ID_SCALAR_CHARS, 0) : end])
            start = None if scalar is None else end - len(scalar.group())
        if start is None:
            return found
        colon = _back(text, start)
        key_end = _back(text, colon - 1)
        if not text.endswith(":", 0, colon) or not text.endswith('"', 0, key_end):
            return found
        key_start = _string_start(text, key_end - 1)
        if key_start is None:
            return found
        try:
            key, value = json.loads(text[key_start:key_end]), json.loads(text[start:end])
        except ValueError:
            return found
        found.setdefault(key, value)  # read backwards: the last of a name is the one kept
        before = _back(text, key_start)
        if not text.endswith(",", 0, before):
            return found  # the object's "{", or where the text starts
        end = before - 1


def _back(text: str, end: int) -> int:
    """``end`` moved back over JSON whitespace."""
    while end > 0 and text[end - 1] in " \t\n\r":
        end -= 1
    return end


def _string_start(text: str, close: int) -> Optional[int]:
    """Where the string that the quote at ``close`` ends starts (its opening quote);
    ``None`` when that is not in ``text`` (or cannot be told: a run of backslashes
    from the start of ``text``)."""
    at = close
    while True:
        at = text.rfind('"', 0, at)
        if at < 0:
            return None
        run = 0
        while run < at and text[at - run - 1] == "\\":
            run += 1
        if run == at and run:
            return None  # the backslashes run on before the text
        if run % 2 == 0:
            return at


def _parse(body: bytes) -> Incoming:
    try:
        text = body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        first = _members(body.decode("utf-8", "replace"))[0] or {}
        return Refused(
            f"a message that is not JSON was skipped (not UTF-8: {exc.reason} at byte {exc.start})",
            PARSE_ERROR,
            _request_id(first),
        )
    text = text[1:] if text.startswith("\ufeff") else text
    found, error = _members(text)
    if found is None:
        return _not_an_object(text)
    if error is not None:
        return Refused(
            f"a message that is not JSON was skipped ({error})", PARSE_ERROR, _request_id(found)
        )
    message = found
    request = "method" in message
    if "id" in message and not is_id(message["id"]):
        return Refused(
            f"a message whose id is not an integer or a string ({_shown(message['id'])}) "
            "was skipped",
            INVALID_REQUEST,
        )
    answer = message.get("id") if request else None
    if message.get("jsonrpc") != "2.0":
        return Refused(
            'a message without "jsonrpc": "2.0" was skipped'
            + (f" (method {_shown(message.get('method'))})" if request else ""),
            INVALID_REQUEST,
            answer,
        )
    if request and not isinstance(message["method"], str):
        return Refused(
            f"a message whose method is not a string ({_shown(message['method'])}) was skipped",
            INVALID_REQUEST,
            answer,
        )
    if not request and "id" not in message:
        return Refused("a message with neither a method nor an id was skipped", INVALID_REQUEST)
    return message


def _not_an_object(text: str) -> Refused:
    """Why a message that is not a JSON object was skipped (it has no id to answer)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return Refused(f"a message that is not JSON was skipped ({reason})", PARSE_ERROR)
    kind = (
        "an array (a batch, which LSP does not use)"
        if isinstance(value, list)
        else f"a JSON {type(value).__name__}"
    )
    return Refused(f"a message that is {kind}, not an object, was skipped", INVALID_REQUEST)


def _shown(value: Any) -> str:
    return reprlib.repr(value)  # bounded, whatever the value holds


def read_into(
    stdin: BinaryIO,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[Optional[Incoming]],
    room: threading.Semaphore,
) -> None:
    """The reader thread's work: each message ``receive`` gives, onto ``queue`` of the
    event loop ``loop`` (while it has ``room``: a semaphore the loop releases as it takes
    each one), then ``None`` at the end of input. Run it on a daemon thread: one waiting
    on a client that keeps its end open does not keep the process alive."""
    while True:
        try:
            item = receive(stdin)
        except Exception as exc:  # the input failed (or a bug of ours): as if it ended
            logger.error("agent-rollout lsp: reading the input failed: %s", exc)
            item = None
        while not room.acquire(timeout=0.5):
            if loop.is_closed():
                return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:
            return  # the loop has ended
        if item is None:
            return
