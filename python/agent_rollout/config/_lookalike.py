"""Look-alike keys: a key of the section that is not ours but looks like a typo of one.

A key is a look-alike when it is within two Levenshtein edits (insert, delete,
substitute one character; a swap of two neighbours counts as two) of one of
our keys, ASCII letters compared case-insensitively and ``-`` read as ``_``.
Keys holding a line break, and keys the host declares as its own (the fields
of a model ``RolloutFields`` is mixed into, ``known_keys``), never are. The
same rule, as a JSON Schema ``propertyNames``, is ``lookalike_key_schema``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Optional

from agent_rollout.backends import ROLLOUT_KEYS

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_MAX_EDITS = 2


def fold_key(key: str) -> str:
    """ASCII letters lower-cased (nothing else: the rule is ASCII-only)."""
    return key.translate(_ASCII_LOWER)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of ``a`` and ``b``, or ``limit + 1`` once it is over ``limit``.

    Only the cells within ``limit`` of the diagonal are computed (any other
    is over the limit), so the cost is ``len(a) * (2 * limit + 1)`` at most.
    """
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    over = limit + 1
    previous = [min(j, over) for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        current = [over] * (len(b) + 1)
        current[0] = min(i, over)
        best = current[0]
        for j in range(max(1, i - limit), min(len(b), i + limit) + 1):
            cell = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != b[j - 1]))
            current[j] = cell if cell < over else over
            best = min(best, current[j])
        if best > limit:
            return over
        previous = current
    return previous[-1]


def distance_upto(a: str, b: str, limit: int) -> int:
    """``min(edit_distance(a, b), limit + 1)`` for a small ``limit``, by its definition.

    Past their common start the first characters differ, and one of the three
    edits (substitute, delete, insert) must take care of them: at most
    ``3 ** limit`` steps, each a comparison of whole strings done in C.
    """
    if a == b:
        return 0
    if limit == 0 or abs(len(a) - len(b)) > limit:
        return limit + 1
    shorter = min(len(a), len(b))
    start = 0
    while start < shorter and a[start] == b[start]:
        start += 1
    if start == shorter:  # one starts the other: the rest are insertions
        return abs(len(a) - len(b))
    a, b = a[start:], b[start:]
    best = limit + 1
    for rest_a, rest_b in ((a[1:], b[1:]), (a[1:], b), (a, b[1:])):
        best = min(best, 1 + distance_upto(rest_a, rest_b, best - 2))
        if best == 1:
            break
    return best


_LENGTHS = (min(len(key) for key in ROLLOUT_KEYS), max(len(key) for key in ROLLOUT_KEYS))


_PAIR_SLICES = tuple(slice(i, i + 2) for i in range(_LENGTHS[1] + _MAX_EDITS))


def _pairs(text: str) -> frozenset[str]:
    """The letter pairs of ``text`` (``'roll'``: ``ro``, ``ol``, ``ll``); ``text`` no
    longer than our longest key and two."""
    return frozenset(map(text.__getitem__, _PAIR_SLICES[: len(text) - 1]))


# An edit changes at most two of the letter pairs of a word, so a word within
# two edits of ours lacks at most four of our key's pairs, and one within one
# substitution of a key's start lacks at most two of the start's: a cheap test,
# done in C, that rules out most of our keys before any distance is computed.
_KEY_PAIRS = tuple((index, key, _pairs(key)) for index, key in enumerate(ROLLOUT_KEYS))
_START_PAIRS = {
    (index, size): _pairs(key[:size])
    for index, key in enumerate(ROLLOUT_KEYS)
    for size in range(len(key))
}


def _meant(folded: str) -> Optional[str]:
    """The key ``folded`` (a key as ``fold_key`` reads it, ``-`` as ``_``) looks like a
    typo of: the nearest of ours within two edits, or ``None``."""
    nearest = _nearest(folded)
    return nearest[0] if nearest else None


def _nearest(folded: str) -> tuple[str, ...]:
    """Our keys nearest to ``folded`` within two edits (several on a tie), or ``()``.

    Only a key of a length within two of ours can be one, and only such keys
    are remembered (``_nearest_near``: the last few thousand, so that a key the
    model and ``check`` both ask about is worked out once).
    """
    if not _LENGTHS[0] - _MAX_EDITS <= len(folded) <= _LENGTHS[1] + _MAX_EDITS:
        return ()
    return _nearest_near(folded)


@functools.lru_cache(maxsize=4096)
def _nearest_near(folded: str) -> tuple[str, ...]:
    """``_nearest`` of a key of a length within two of ours, in ``ROLLOUT_KEYS`` order.

    The work per key is bounded and small: our keys of a length within two of
    it that keep enough of their letter pairs in it, and only those, are
    compared, each in at most nine steps (``distance_upto``). Nearest as
    ``nearest_key`` reads it: a key cut short (``rollout_group``) counts one
    more than its distance to the start of ours.
    """
    size = len(folded)
    pairs = _pairs(folded)
    found: list[tuple[int, int]] = []  # (distance, index in ROLLOUT_KEYS)
    for index, valid, valid_pairs in _KEY_PAIRS:
        if abs(len(valid) - size) > _MAX_EDITS or len(valid_pairs - pairs) > 2 * _MAX_EDITS:
            continue
        distance = distance_upto(folded, valid, _MAX_EDITS)
        if distance <= _MAX_EDITS:
            found.append((distance, index))
    if not found:
        return ()
    # The nearest is within two edits: a key cut short competes only when its
    # start is within one (equal lengths: one substitution at most).
    for index, valid, _ in _KEY_PAIRS:
        if size < len(valid) and len(_START_PAIRS[index, size] - pairs) <= 2:
            distance = distance_upto(folded, valid[:size], 1)
            if distance <= 1:
                found.append((1 + distance, index))
    best = min(distance for distance, _ in found)
    return tuple(ROLLOUT_KEYS[i] for i in sorted({i for d, i in found if d == best}))


def _folded(key: str) -> str:
    return fold_key(key).replace("-", "_")


def nearest_key(key: str) -> str:
    """The valid key closest to ``key`` (ties go to the first in ROLLOUT_KEYS)."""
    folded = _folded(key)
    meant = _meant(folded)
    if meant is not None:
        return meant

    def distance(valid: str) -> int:
        # A key cut short ('rollout_group') is closest to the key it starts.
        whole = edit_distance(folded, valid, 64)
        return min(whole, edit_distance(folded, valid[: len(folded)], 64) + 1)

    return min(ROLLOUT_KEYS, key=distance)


def meant_keys(key: object, known_keys: Collection[str] = ()) -> tuple[str, ...]:
    """The keys of ours ``key`` is nearest to when it looks like a typo of one (one key,
    or several at the same distance, in ``ROLLOUT_KEYS`` order); ``()`` when it does not
    (see ``lookalike_key``)."""
    if not isinstance(key, str) or key in ROLLOUT_KEYS or key in known_keys:
        return ()
    if "\n" in key:
        return ()
    return _nearest(_folded(key))


def meant_key(key: object, known_keys: Collection[str] = ()) -> Optional[str]:
    """The key of ours ``key`` looks like a typo of (its nearest; on a tie, the first in
    ``ROLLOUT_KEYS``), or ``None`` when it does not look like one (see ``lookalike_key``):
    both found in one pass."""
    nearest = meant_keys(key, known_keys)
    return nearest[0] if nearest else None


def read_as_meant(
    data: Mapping[Any, Any], typos: Mapping[Any, tuple[str, ...]]
) -> tuple[Mapping[Any, Any], dict[str, str], frozenset[str]]:
    """``(values, names, held)``: the section as the cross-field rules read it while it
    holds look-alikes (``typos``: each look-alike key and its ``meant_keys``).

    One mistake, one diagnostic: the look-alike's own error says what is wrong,
    so no rule may report the key it stands for as unset, nor a key that needs
    that one as lacking it. A look-alike that stands for exactly one key, which
    the section does not set spelt right (absent or null) and no other
    look-alike stands for, is read as that key: its value under our name in
    ``values``, its spelling in ``names`` (a rule it still breaks is placed at
    it and names it as written). Any other (nearest to two keys, or one of two
    look-alikes of a key) leaves the keys it may stand for ``held``: the rules
    that read them wait until it is resolved. A key set spelt right keeps its
    value, whatever look-alikes of it the section holds.
    """
    if not typos:
        return data, {}, frozenset()
    claims: dict[str, list[Any]] = {}
    for typo, meant in typos.items():
        for key in meant:
            claims.setdefault(key, []).append(typo)
    values: Optional[dict[Any, Any]] = None
    names: dict[str, str] = {}
    held: set[str] = set()
    for key, claimants in claims.items():
        if data.get(key) is not None:
            continue  # spelt right: that value counts
        typo = claimants[0]
        if len(claimants) == 1 and len(typos[typo]) == 1:
            values = dict(data) if values is None else values
            values[key] = data[typo]
            names[key] = typo
        else:
            held.add(key)
    return (data if values is None else values), names, frozenset(held)


def lookalikes(
    data: Mapping[Any, Any], known_keys: Collection[str] = ()
) -> dict[Any, tuple[str, ...]]:
    """The look-alike keys of a section, each with its ``meant_keys`` (what
    ``read_as_meant`` reads)."""
    found = {}
    for key in data:
        meant = meant_keys(key, known_keys)
        if meant:
            found[key] = meant
    return found


def lookalike_key(key: object, known_keys: Collection[str] = ()) -> bool:
    """Whether ``key`` is not one of ours but looks like a typo of one.

    It does when it is within two edits of one of our keys (see the module
    docstring). Keys in ``known_keys`` (the host trainer's own) never do.
    """
    return meant_key(key, known_keys) is not None


_ANY_CHAR = r"[\s\S]"  # one character in JavaScript, Rust regex and Python re alike


def _letter(char: str) -> str:
    """One character of a key, as the look-alike rule reads it (case-folded, '-' is '_')."""
    if "a" <= char <= "z":
        return f"[{char.upper()}{char}]"
    if char == "_":
        return "[_-]"
    return re.escape(char)


def _literal(text: str) -> str:
    return "".join(_letter(char) for char in text)


def _within(word: str, edits: int, start: int = 0) -> str:
    """A regex for the strings within ``edits`` Levenshtein edits of ``word[start:]``."""
    rest = word[start:]
    if edits == 0:
        return _literal(rest)
    if not rest:
        return f"(?:{_ANY_CHAR}){{0,{edits}}}"
    alternatives = (
        _letter(rest[0]) + _within(word, edits, start + 1),  # keep
        _ANY_CHAR + _within(word, edits - 1, start + 1),  # substitute
        _ANY_CHAR + _within(word, edits - 1, start),  # insert
        _within(word, edits - 1, start + 1),  # delete
    )
    return "(?:" + "|".join(alternatives) + ")"


_SHARED_PREFIX = "rollout_"


def _near_pattern() -> str:
    # Edit distance splits over a concatenation: d(t, P + S) is the least
    # d(A, P) + d(B, S) over t = A + B. So "within two edits of P + S" is
    # (P within 2)(S exact) | (P within 1)(S within 1) | (P exact)(S within 2),
    # with P the shared 'rollout_' prefix: a few tens of kilobytes instead of
    # the megabytes a pattern per whole key would take. '-' reads as '_'.
    assert all(key.startswith(_SHARED_PREFIX) for key in ROLLOUT_KEYS)
    suffixes = [key[len(_SHARED_PREFIX) :] for key in ROLLOUT_KEYS]
    exact = "|".join(_literal(suffix) for suffix in suffixes)
    near = "|".join(_within(suffix, 1) for suffix in suffixes)
    far = "|".join(_within(suffix, 2) for suffix in suffixes)
    return (
        f"^(?:{_within(_SHARED_PREFIX, 2)}(?:{exact})"
        f"|{_within(_SHARED_PREFIX, 1)}(?:{near})"
        f"|{_literal(_SHARED_PREFIX)}(?:{far}))$"
    )


@functools.lru_cache(maxsize=1)
def near_pattern() -> str:
    """The look-alike regex (about 70 kB), built on first use: the schema needs
    it, validation does not (it computes the distance directly)."""
    return _near_pattern()


def _bigram_pattern() -> str:
    # Each edit touches at most two of the seven letter pairs of 'rollout_', so
    # a key within two edits of ours holds at least three of them: a key that
    # holds none cannot be a look-alike. Cheap, and checked before the long
    # pattern (validators that compile patterns per use pay for its length).
    pairs = [_SHARED_PREFIX[i : i + 2] for i in range(len(_SHARED_PREFIX) - 1)]
    return "|".join(_literal(pair) for pair in pairs)


LOOKALIKE_PAIRS_PATTERN = _bigram_pattern()


def lookalike_key_schema() -> dict[str, Any]:
    """``propertyNames`` schema refusing exactly the keys ``lookalike_key`` refuses.

    The first alternatives are necessary conditions that settle most keys
    cheaply (length, letter pairs); the long pattern decides the rest.
    """
    shortest = min(len(key) for key in ROLLOUT_KEYS)
    longest = max(len(key) for key in ROLLOUT_KEYS)
    return {
        "anyOf": [
            {"enum": list(ROLLOUT_KEYS)},
            {"maxLength": shortest - _MAX_EDITS - 1},
            {"minLength": longest + _MAX_EDITS + 1},
            {"not": {"pattern": LOOKALIKE_PAIRS_PATTERN}},
            {"pattern": "\n"},
            {"not": {"pattern": near_pattern()}},
        ],
        "description": "Keys within two edits of a rollout key (typos of one) are errors.",
    }


_SHORTEST, _LONGEST = _LENGTHS[0] - _MAX_EDITS, _LENGTHS[1] + _MAX_EDITS
_KEY_TEXT = re.compile(
    # A key as the three formats write one, before its ':' or '=' (spaces between): in
    # double or single quotes, or bare (of the characters a bare key may hold, after a
    # space, '{', ',', '[', the '.' of a dotted TOML key, or the start); only as long
    # as ours or a look-alike. Matched in the text read backwards, so that the pattern
    # starts with the ':' or '=' the search looks for, and a word that is no key costs
    # nothing but the search.
    rf"""[:=][ \t]*(?:"([^"\n]{{{_SHORTEST},{_LONGEST}}})"|'([^'\n]{{{_SHORTEST},{_LONGEST}}})'"""
    rf"""|([^\s"'#:=,{{}}\[\].]{{{_SHORTEST},{_LONGEST}}})(?![^\s{{,\[.]))"""
)


# Two edits touch two of three pieces of a key at most, so a key within two edits of
# one of ours holds one of its three pieces whole: 'rol', 'lout', or '_' and the rest
# (every key of ours starts with 'rollout_': ``_near_pattern``).
_PIECES = (
    _SHARED_PREFIX[:3],
    _SHARED_PREFIX[3:7],
    *sorted({key[7:] for key in ROLLOUT_KEYS}),
)


def environment_name(key: object) -> bool:
    """Whether ``key`` is written as environment variables are: its letters all capitals
    (``ROLLOUT_BACKEND``). Such a name makes no file ours (``skip_unrelated``): a CI
    workflow's ``env:``, a compose file's, a ``launch.json``'s. A key of a file that is
    ours is still checked as any other (a look-alike there is reported)."""
    return isinstance(key, str) and key.isupper()


def names_our_key(text: str) -> bool:
    """Whether ``text`` (a config that does not parse, or a chunk of one too big to)
    holds, in the place of a key, one of our keys or a look-alike of one.

    The keys are read off the text, before each ``:`` or ``=``, as YAML, JSON
    and TOML write them; no other word counts (``training`` in a comment of a
    ``tsconfig.json`` is no key of ours), nor does a name in capitals
    (``environment_name``). A key in a comment that is written as a key counts:
    the text is ours to report on when it names our keys so. Each distinct key
    is looked at once (a data file repeats its few keys).
    """
    folded = text.lower().replace("-", "_")  # as fold_key reads ASCII, and more
    if not any(piece in folded for piece in _PIECES):
        return False  # most data files: no key is worked out at all
    for groups in set(_KEY_TEXT.findall(text[::-1])):
        key = "".join(groups)[::-1]  # one group matched, the others are empty
        if (key in ROLLOUT_KEYS or lookalike_key(key)) and not environment_name(key):
            return True
    return False


def key_set(keys: Iterable[str]) -> frozenset[str]:
    """``known_keys`` as a set; one string is one key (not its characters)."""
    return frozenset((keys,) if isinstance(keys, str) else keys)


__all__ = [
    "LOOKALIKE_PAIRS_PATTERN",
    "distance_upto",
    "edit_distance",
    "environment_name",
    "fold_key",
    "key_set",
    "lookalike_key",
    "lookalike_key_schema",
    "lookalikes",
    "meant_key",
    "meant_keys",
    "names_our_key",
    "near_pattern",
    "nearest_key",
    "read_as_meant",
]
