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
from collections.abc import Collection, Iterable
from typing import Any

from agent_rollout.backends import ROLLOUT_KEYS

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_MAX_EDITS = 2


def fold_key(key: str) -> str:
    """ASCII letters lower-cased (nothing else: the rule is ASCII-only)."""
    return key.translate(_ASCII_LOWER)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of ``a`` and ``b``, or ``limit + 1`` once it is over ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def nearest_key(key: str) -> str:
    """The valid key closest to ``key`` (ties go to the first in ROLLOUT_KEYS)."""
    folded = fold_key(key).replace("-", "_")

    def distance(valid: str) -> int:
        # A key cut short ('rollout_group') is closest to the key it starts.
        whole = edit_distance(folded, valid, 64)
        return min(whole, edit_distance(folded, valid[: len(folded)], 64) + 1)

    return min(ROLLOUT_KEYS, key=distance)


def lookalike_key(key: object, known_keys: Collection[str] = ()) -> bool:
    """Whether ``key`` is not one of ours but looks like a typo of one.

    It does when it is within two edits of one of our keys (see the module
    docstring). Keys in ``known_keys`` (the host trainer's own) never do.
    """
    if not isinstance(key, str) or key in ROLLOUT_KEYS or key in known_keys:
        return False
    if "\n" in key:
        return False
    folded = fold_key(key).replace("-", "_")
    return any(edit_distance(folded, valid, _MAX_EDITS) <= _MAX_EDITS for valid in ROLLOUT_KEYS)


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


def key_set(keys: Iterable[str]) -> frozenset[str]:
    """``known_keys`` as a set; one string is one key (not its characters)."""
    return frozenset((keys,) if isinstance(keys, str) else keys)


__all__ = [
    "LOOKALIKE_PAIRS_PATTERN",
    "edit_distance",
    "fold_key",
    "key_set",
    "lookalike_key",
    "lookalike_key_schema",
    "near_pattern",
    "nearest_key",
]
