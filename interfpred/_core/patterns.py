r"""User patterns (``--kernel-filter``, ``--nvtx-filter``, a manifest's filter cells) matched at bounded cost.

A pattern is searched in a name, like :func:`re.search`.  With google-re2 installed
(``pip install 'interfpred[re2]'``) the full RE2 syntax is accepted and matched in linear time.
Without it only a safe subset of the same syntax is accepted, matched in at most
O(len(pattern) * len(name)) steps by a wildcard matcher, never by a backtracking engine:

* literal characters, and ``\`` followed by any character for that character (``\.``, ``\(``);
* ``.`` (any one character), ``.*`` (any run), ``.+`` (a run of at least one);
* ``^`` at the start and ``$`` at the end of an alternative (anchors);
* ``|`` between alternatives (at most :data:`~interfpred.constants.PATTERN_MAX_ALTERNATIVES`).

Anything else (groups, classes, other quantifiers) is refused naming the character and the
extra that accepts it.  On the subset both engines give the same answer.  Every pattern is at
most ``PATTERN_MAX_CHARS`` characters (:data:`~interfpred.constants.LIMITS`).

Examples
--------
>>> rx = compile_pattern("gemm.*relu|^conv", "kernel_filter")
>>> [bool(rx.search(s)) for s in ("sm90_gemm_bias_relu", "conv2d_fwd", "my_conv")]
[True, True, False]
>>> compile_pattern("(x+x+)+y", "kernel_filter", engine="subset")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: kernel_filter '(x+x+)+y': '(' at position 0 is outside the pattern subset ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interfpred._core.limits import check_limit
from interfpred.constants import PATTERN_MAX_ALTERNATIVES
from interfpred.errors import InterfpredError

__all__ = ["Pattern", "compile_pattern", "have_re2"]

_ANY, _STAR = object(), object()
#: Characters the subset gives no meaning to (a backslash makes them literal).
_SPECIAL = set("()[]{}*+?^$|\\.")


def have_re2() -> bool:
    """Whether google-re2 can be imported (the ``re2`` extra).

    Examples
    --------
    >>> isinstance(have_re2(), bool)
    True
    """
    try:
        import re2  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class _Alternative:
    items: tuple[object, ...]   # characters, _ANY or _STAR
    start: bool                 # anchored at the start (^)
    end: bool                   # anchored at the end ($)


def _wildcard(items: Sequence[object], text: str) -> bool:
    """Whether ``items`` (characters, _ANY, _STAR) match all of ``text``: greedy with one backtrack point, O(m n)."""
    i = j = 0
    star_i, star_j = -1, 0
    while j < len(text):
        if i < len(items) and items[i] is not _STAR and (items[i] is _ANY or items[i] == text[j]):
            i += 1
            j += 1
        elif i < len(items) and items[i] is _STAR:
            star_i, star_j = i, j
            i += 1
        elif star_i >= 0:
            i = star_i + 1
            star_j += 1
            j = star_j
        else:
            return False
    while i < len(items) and items[i] is _STAR:
        i += 1
    return i == len(items)


class Pattern:
    """A compiled user pattern: :meth:`search` says whether it occurs in a name."""

    def __init__(self, text: str, engine: str, alternatives: tuple[_Alternative, ...] = (), compiled: object = None):
        self.text = text
        self.engine = engine
        self._alternatives = alternatives
        self._compiled = compiled

    def search(self, name: str) -> bool:
        """Whether the pattern occurs in ``name`` (as :func:`re.search` would find it)."""
        if self._compiled is not None:
            return self._compiled.search(name) is not None  # type: ignore[attr-defined]
        for alt in self._alternatives:
            items = list(alt.items)
            if not alt.start:
                items.insert(0, _STAR)
            if not alt.end:
                items.append(_STAR)
            if _wildcard(items, name):
                return True
        return False

    def __repr__(self) -> str:
        return f"Pattern({self.text!r}, engine={self.engine!r})"


def _parse_subset(pattern: str, what: str) -> tuple[_Alternative, ...]:
    def refuse(ch: str, pos: int) -> InterfpredError:
        return InterfpredError(
            f"{what} {pattern!r}: {ch!r} at position {pos} is outside the pattern subset accepted without "
            "google-re2 (literals, \\-escapes, '.', '.*', '.+', '^', '$', '|'); install it for full regular "
            "expressions: pip install 'interfpred[re2]'")

    alts: list[_Alternative] = []
    items: list[object] = []
    start = end = False
    pos = 0
    at_alt_start = True
    while pos <= len(pattern):
        if pos == len(pattern) or pattern[pos] == "|":
            alts.append(_Alternative(tuple(items), start, end))
            items, start, end, at_alt_start = [], False, False, True
            pos += 1
            continue
        ch = pattern[pos]
        if end:
            raise refuse(ch, pos)  # anything after $
        if ch == "\\":
            if pos + 1 == len(pattern):
                raise InterfpredError(f"{what} {pattern!r}: a trailing backslash escapes nothing")
            items.append(pattern[pos + 1])
            pos += 2
        elif ch == "^" and at_alt_start:
            start = True
            pos += 1
        elif ch == "$" and (pos + 1 == len(pattern) or pattern[pos + 1] == "|"):
            end = True
            pos += 1
        elif ch == ".":
            nxt = pattern[pos + 1] if pos + 1 < len(pattern) else ""
            if nxt == "*":
                items.append(_STAR)
                pos += 2
            elif nxt == "+":
                items += [_ANY, _STAR]
                pos += 2
            else:
                items.append(_ANY)
                pos += 1
        elif ch in _SPECIAL:
            raise refuse(ch, pos)
        else:
            items.append(ch)
            pos += 1
        at_alt_start = False
    if len(alts) > PATTERN_MAX_ALTERNATIVES:
        raise InterfpredError(f"{what} {pattern!r} has {len(alts)} alternatives; at most "
                              f"PATTERN_MAX_ALTERNATIVES={PATTERN_MAX_ALTERNATIVES} are accepted without google-re2")
    return tuple(alts)


def compile_pattern(pattern: str, what: str, *, engine: str = "auto") -> Pattern:
    """Compile a user's pattern for :meth:`Pattern.search`; a bad or too long one is an :class:`InterfpredError`.

    ``engine``: ``"re2"`` (needs google-re2), ``"subset"`` (the safe subset, always available) or
    ``"auto"`` (re2 when installed, else the subset).
    """
    if not isinstance(pattern, str):
        raise InterfpredError(f"{what} must be text, got {type(pattern).__name__}")
    check_limit("PATTERN_MAX_CHARS", len(pattern), f"{what} of length")
    if "\x00" in pattern:
        raise InterfpredError(f"{what} {pattern!r} holds a NUL character")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as exc:  # undecodable bytes in argv arrive as lone surrogates
        raise InterfpredError(f"{what} {pattern!r} is not UTF-8 text (character {exc.start})") from None
    if engine not in ("auto", "re2", "subset"):
        raise InterfpredError(f"engine {engine!r} must be auto, re2 or subset")
    if engine == "re2" or (engine == "auto" and have_re2()):
        try:
            import re2
        except ImportError:
            raise InterfpredError(f"{what}: the re2 engine needs google-re2: pip install 'interfpred[re2]'") from None
        options = re2.Options()
        options.log_errors = False
        try:
            compiled = re2.compile(pattern, options)
        except re2.error as exc:
            raise InterfpredError(f"{what} {pattern!r} is not a valid regular expression: {exc}") from None
        return Pattern(pattern, "re2", compiled=compiled)
    return Pattern(pattern, "subset", alternatives=_parse_subset(pattern, what))
