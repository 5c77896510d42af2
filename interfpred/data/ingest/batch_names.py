"""Model and batch size from the name of a range that marks one batch (NVTX, PyTorch profiler).

The convention, tried in this order on the whole name (spaces at either end ignored):

* ``MODEL:BATCH`` such as ``resnet50:8``;
* ``MODEL`` then a space, comma or semicolon, then ``bs``, ``batch``, ``batch_size`` or ``batch-size``
  (any case), an optional ``=`` or ``:``, and the batch size: ``resnet50 bs=8``, ``vgg19, batch_size=4``,
  ``bert bs8``.

``MODEL`` is one or more characters other than white space and ``: = , ;``; ``BATCH`` is digits.
Names longer than :data:`~interfpred.constants.CAPTURE_NAME_MAX` characters do not parse.

A :class:`NamePattern` replaces the convention with the user's own template: literal text with
``{model}`` (one or more characters), ``{batch}`` (digits) and ``*`` (any text, possibly empty),
alternatives separated by ``|``, and ``\\`` escaping the next character. Every alternative holds
``{model}`` once and ``{batch}`` at most once (without it, every match gets the pattern's fixed
batch size). Placeholders and ``*`` take the longest text that lets the rest match, left to right,
like ``.*`` in a regular expression, but matching never backtracks exponentially: it is a dynamic
programme over (position in the pattern, position in the name), so a name costs at most
O(holes × length²) steps, with the pattern's length, alternatives and holes capped
(:data:`~interfpred.constants.CAPTURE_PATTERN_MAX` and the next two constants).

Examples
--------
>>> parse_batch_name("resnet50:8"), parse_batch_name("vgg19 bs=4"), parse_batch_name("MPI_Send")
(('resnet50', 8), ('vgg19', 4), None)
>>> p = NamePattern("infer/{model}/b{batch}|{model}-*", batch_size=1)
>>> p.match("infer/bert/b16"), p.match("yolo-warmup"), p.match("warmup")
(('bert', 16), ('yolo', 1), None)
>>> NamePattern("{model}", batch_size=1).match("saxpy")
('saxpy', 1)
"""

from __future__ import annotations

import re

from interfpred.constants import (
    CAPTURE_NAME_MAX,
    CAPTURE_PATTERN_ALTERNATIVES,
    CAPTURE_PATTERN_HOLES,
    CAPTURE_PATTERN_MAX,
    MAX_BATCH_SIZE,
)
from interfpred.errors import InterfpredError

__all__ = ["NamePattern", "parse_batch_name"]

_COLON = re.compile(r"(?P<model>[^\s:=,;]+)\s*:\s*(?P<batch>\d+)")
_KEYWORD = re.compile(r"(?P<model>[^\s:=,;]+)[\s,;]+(?:bs|batch|batch_size|batch-size)\s*[=:]?\s*(?P<batch>\d+)",
                      re.IGNORECASE)


def _batch(text: str) -> int | None:
    """A batch size from its digits, or None when it is 0 or larger than MAX_BATCH_SIZE."""
    if len(text) > len(str(MAX_BATCH_SIZE)) or not (text.isascii() and text.isdigit()):
        return None  # decimal ASCII digits only: '²' and other Unicode digits are not a batch size
    value = int(text)
    return value if 0 < value <= MAX_BATCH_SIZE else None


def parse_batch_name(name: str) -> tuple[str, int] | None:
    """``(model, batch_size)`` from a range name by the convention (module docstring), or None.

    Examples
    --------
    >>> parse_batch_name(" bert, batch_size=32 "), parse_batch_name("resnet50:0"), parse_batch_name("a:b")
    (('bert', 32), None, None)
    """
    if len(name) > CAPTURE_NAME_MAX:
        return None
    text = name.strip()
    for rx in (_COLON, _KEYWORD):
        m = rx.fullmatch(text)
        if m is not None:
            batch = _batch(m.group("batch"))
            return None if batch is None else (m.group("model"), batch)
    return None


_CACHE_SIZE = 4096  # distinct names a NamePattern remembers

# Tokens of a compiled alternative: a literal string, or one of the holes below.
_ANY, _MODEL, _BATCH = "*", "{model}", "{batch}"


def _tokens(alt: str, pattern: str) -> tuple[str | tuple[str], ...]:
    """An alternative as literals (str) and holes (1-tuples), adjacent literals joined."""
    out: list[str | tuple[str]] = []
    lit: list[str] = []
    i = 0
    while i < len(alt):
        c = alt[i]
        hole = next((h for h in (_MODEL, _BATCH) if alt.startswith(h, i)), _ANY if c == "*" else None)
        if c == "\\":
            if i + 1 == len(alt):
                raise InterfpredError(f"name pattern {pattern!r} ends with a lone backslash")
            lit.append(alt[i + 1])
            i += 2
            continue
        if hole is None:
            if c in "{}":
                raise InterfpredError(f"name pattern {pattern!r}: only {{model}} and {{batch}} are placeholders "
                                      f"(write \\{c} for a literal {c})")
            lit.append(c)
            i += 1
            continue
        if lit:
            out.append("".join(lit))
            lit = []
        out.append((hole,))
        i += len(hole)
    if lit:
        out.append("".join(lit))
    holes = [t[0] for t in out if isinstance(t, tuple)]
    if holes.count(_MODEL) != 1 or holes.count(_BATCH) > 1:
        raise InterfpredError(f"name pattern {pattern!r}: each alternative needs {{model}} once and {{batch}} at "
                              f"most once (alternative {alt!r})")
    if len(holes) > CAPTURE_PATTERN_HOLES:
        raise InterfpredError(f"name pattern {pattern!r}: alternative {alt!r} has {len(holes)} placeholders and "
                              f"wildcards, more than CAPTURE_PATTERN_HOLES={CAPTURE_PATTERN_HOLES}")
    return tuple(out)


def _split_alternatives(pattern: str) -> list[str]:
    alts, cur, i = [], [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            cur.append(pattern[i:i + 2])
            i += 2
            continue
        if pattern[i] == "|":
            alts.append("".join(cur))
            cur = []
        else:
            cur.append(pattern[i])
        i += 1
    alts.append("".join(cur))
    return alts


def _match(tokens: tuple[str | tuple[str], ...], name: str) -> dict[str, str] | None:
    """Captures of the first (greedy, left to right) match of the whole name, or None."""
    n = len(name)
    memo: dict[tuple[int, int], dict[str, str] | None] = {}

    def at(ti: int, pos: int) -> dict[str, str] | None:
        key = (ti, pos)
        if key in memo:
            return memo[key]
        result: dict[str, str] | None = None
        if ti == len(tokens):
            result = {} if pos == n else None
        else:
            tok = tokens[ti]
            if isinstance(tok, str):
                if name.startswith(tok, pos):
                    result = at(ti + 1, pos + len(tok))
            else:
                kind = tok[0]
                last = n
                if kind == _BATCH:
                    last = pos
                    while last < n and "0" <= name[last] <= "9":
                        last += 1
                lo = pos if kind == _ANY else pos + 1
                nxt = tokens[ti + 1] if ti + 1 < len(tokens) else None
                for end in range(last, lo - 1, -1):  # longest first
                    if isinstance(nxt, str) and not name.startswith(nxt, end):
                        continue
                    if nxt is None and end != n:
                        continue
                    rest = at(ti + 1, end)
                    if rest is not None:
                        result = dict(rest)
                        if kind != _ANY:
                            result[kind] = name[pos:end]
                        break
        memo[key] = result
        return result

    return at(0, 0)


class NamePattern:
    """A user's template for range names (module docstring); ``match`` gives ``(model, batch)`` or None.

    Parameters
    ----------
    pattern
        The template: literals, ``{model}``, ``{batch}``, ``*``, ``|`` between alternatives, ``\\``
        escaping the next character.
    batch_size
        Batch size of a match of an alternative without ``{batch}``; required when one has none.

    Raises
    ------
    InterfpredError
        A pattern longer than CAPTURE_PATTERN_MAX, with too many alternatives or holes, an
        alternative without ``{model}``, or one without ``{batch}`` and no ``batch_size``.

    Examples
    --------
    >>> NamePattern("{model}#{batch}").match("bert#8"), NamePattern("{model}#{batch}").match("bert#x")
    (('bert', 8), None)
    >>> NamePattern("*")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: name pattern '*': each alternative needs {model} once and {batch} at most once (alternative '*')
    """

    def __init__(self, pattern: str, *, batch_size: int | None = None) -> None:
        if len(pattern) > CAPTURE_PATTERN_MAX:
            raise InterfpredError(f"name pattern is {len(pattern)} characters long, more than "
                                  f"CAPTURE_PATTERN_MAX={CAPTURE_PATTERN_MAX}")
        alts = _split_alternatives(pattern)
        if len(alts) > CAPTURE_PATTERN_ALTERNATIVES:
            raise InterfpredError(f"name pattern {pattern!r} has {len(alts)} alternatives, more than "
                                  f"CAPTURE_PATTERN_ALTERNATIVES={CAPTURE_PATTERN_ALTERNATIVES}")
        if batch_size is not None and not 0 < batch_size <= MAX_BATCH_SIZE:
            raise InterfpredError(f"batch_size {batch_size} must be a positive integer up to {MAX_BATCH_SIZE}")
        self.pattern = pattern
        self.batch_size = batch_size
        self._alternatives = tuple(_tokens(a, pattern) for a in alts)
        if batch_size is None:
            for alt in self._alternatives:
                if (_BATCH,) not in alt:
                    raise InterfpredError(f"name pattern {pattern!r} has an alternative without {{batch}}: give a "
                                          "batch size for its matches (--batch-size)")
        self._cache: dict[str, tuple[str, int] | None] = {}  # range names repeat

    def __repr__(self) -> str:
        return f"NamePattern({self.pattern!r}, batch_size={self.batch_size!r})"

    def match(self, name: str) -> tuple[str, int] | None:
        """``(model, batch_size)`` of the first alternative that matches the whole name, or None."""
        if name not in self._cache:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[name] = self._match_uncached(name)
        return self._cache[name]

    def _match_uncached(self, name: str) -> tuple[str, int] | None:
        if len(name) > CAPTURE_NAME_MAX:
            return None
        for alt in self._alternatives:
            caps = _match(alt, name)
            if caps is None:
                continue
            if _BATCH in caps:
                batch = _batch(caps[_BATCH])
                if batch is None:
                    continue
            else:
                assert self.batch_size is not None
                batch = self.batch_size
            return caps[_MODEL], batch
        return None
