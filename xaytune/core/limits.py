"""Limits at every boundary: how deep, how large, how long, how many digits, how far.

Everything that crosses into xaytune from outside (a model's reply and its tool-call
arguments, a suite file, a config, a tree under verification) is bounded here, before
it is parsed or used, so hostile or broken input ends in one line, never in a
traceback, a hang or unbounded memory. Each limit is a constant below (the default;
the README's "Limits" table lists them with the config key, where there is one), and
each breach is a :class:`LimitError` whose ``reason`` is one of :data:`LimitReason`:

``too-deep``         JSON nested deeper than :data:`MAX_JSON_DEPTH` (checked by an
                     iterative scan of the raw text, before any recursive parser runs)
``too-large``        a text, body or file larger than its limit (read in bounded
                     chunks: ``/dev/zero`` is refused, not read)
``line-too-long``    a line of a JSONL source longer than :data:`MAX_SUITE_LINE_BYTES`
``too-many-digits``  an integer literal of more than :data:`MAX_INT_DIGITS` digits
                     (Python's ``sys.set_int_max_str_digits`` default; a ``ValueError``
                     from int parsing is turned into this refusal)
``out-of-range``     a number outside its declared range (a float literal that
                     overflows to infinity, a latency, a timeout, a budget)
``not-text``         a string holding a lone surrogate (``"\\ud800"``): no UTF-8 text
                     holds one, so it could never be written as evidence

Each boundary reports a breach under its own reason word where it has one (a tool
call's ``bad-arguments``, a reply's ``model-error``, the auditor's ``bad-manifest``,
the config's ``bad-config``); the limit's word then starts the problem text. A message
quotes at most :data:`QUOTE_CHARS` characters of the offending value (:func:`quote`).

The size, depth and digit limits are read when used: a program may raise one before
it builds or loads (``xaytune.core.limits.MAX_TASK_INPUT_BYTES = 4_000_000``). The
numeric ranges bound config fields (pydantic ``le=``), fixed when xaytune is imported.
"""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from collections.abc import Callable, Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from xaytune.core.errors import XaytuneError

__all__ = [
    "MAX_ATTEMPTS_PER_TASK",
    "MAX_CONTEXT_WINDOW",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_JSON_FILE_BYTES",
    "MAX_LATENCY_S",
    "MAX_LOCAL_THREADS",
    "MAX_MODEL_REPLY_BYTES",
    "MAX_RETRIES",
    "MAX_SUITE_FILE_BYTES",
    "MAX_SUITE_LINE_BYTES",
    "MAX_SUITE_TASKS",
    "MAX_TASK_INPUT_BYTES",
    "MAX_TIMEOUT_S",
    "MAX_TOKEN_BUDGET",
    "MAX_TOOL_ARGUMENTS_CHARS",
    "MAX_TOOL_CALL_BUDGET",
    "MAX_TURNS",
    "QUOTE_CHARS",
    "STRICT_JSON_HOOKS",
    "LimitError",
    "LimitReason",
    "check_json_text",
    "check_range",
    "check_text",
    "clip",
    "hash_bounded",
    "iter_lines",
    "loads",
    "no_constant",
    "quote",
    "read_bounded",
    "unique_keys",
]

LimitReason = Literal[
    "too-deep", "too-large", "line-too-long", "too-many-digits", "out-of-range", "not-text"
]

# ---------------------------------------------------------------- JSON shape

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects in JSON read from outside (suite records, tool
arguments, model replies, manifests). The top-level object is level 1; real data
nests under 10."""

MAX_INT_DIGITS = 4300
"""Most digits in one JSON integer literal: Python's ``sys.set_int_max_str_digits``
default. (Fingerprinted data is further held to 2^53 by ``xaytune.core.canonical``.)"""

QUOTE_CHARS = 80
"""Most characters of an offending value a refusal message quotes."""

# ---------------------------------------------------------------- sizes

MAX_TOOL_ARGUMENTS_CHARS = 1_000_000
"""Longest arguments text of one tool call from a model (characters)."""

MAX_MODEL_REPLY_BYTES = 16_000_000
"""Largest body of one model reply (bytes, after content decoding)."""

MAX_TASK_INPUT_BYTES = 1_000_000
"""Largest task input (its canonical JSON, in bytes): refused when a suite is built
(naming the task) and when a suite on disk is loaded. Every attempt records its task's
input, so this bounds what one task adds to an output tree."""

MAX_SUITE_LINE_BYTES = 16_000_000
"""Longest line of a suite file or of a builder's JSONL source (bytes): a task's input
(up to ``MAX_TASK_INPUT_BYTES``) with its metadata and answer. Refused before parsing."""

MAX_SUITE_FILE_BYTES = 256_000_000
"""Largest suite file or builder source (bytes)."""

MAX_SUITE_TASKS = 1_000_000
"""Most tasks in one suite: a file within its size limit could still hold millions of
tiny records, each an object in memory. Checked as a source is read, and from a
manifest's count before a suite's files are read."""

MAX_JSON_FILE_BYTES = 256_000_000
"""Largest JSON file read whole: a suite's ``suite.json``, an output tree's
``manifest.json`` under verification (bytes)."""

# ---------------------------------------------------------------- numeric ranges

MAX_LATENCY_S = 3600.0
"""Largest simulated per-call latency (``model.latency_s``), seconds."""

MAX_TIMEOUT_S = 86_400.0
"""Largest timeout of a model call, a server start-up or a tool call, seconds (a day)."""

MAX_TURNS = 10_000
"""Most model turns of one attempt (``max_turns``)."""

MAX_TOKEN_BUDGET = 10**9
"""Largest total-token budget of one attempt (``token_budget``)."""

MAX_TOOL_CALL_BUDGET = 1_000_000
"""Largest tool-call budget of one attempt (``tool_call_budget``)."""

MAX_CONTEXT_WINDOW = 100_000_000
"""Largest context window or output-token limit, tokens."""

MAX_RETRIES = 100
"""Most retries of one model call (``model_retries``, a client's ``max_retries``)."""

MAX_ATTEMPTS_PER_TASK = 100
"""Most attempts at one task (``attempts_per_task``)."""

MAX_LOCAL_THREADS = 1024
"""Most threads or parallel slots of a local model server."""

_CHUNK = 1 << 20


class LimitError(XaytuneError):
    """A value broke a limit; ``reason`` is a :data:`LimitReason`.

    ``detail`` is the message without the reason, for a boundary that re-raises the
    breach under its own error type (``SuiteError(error.reason, error.detail)``).
    """

    def __init__(self, reason: LimitReason, message: str) -> None:
        super().__init__(reason, message)
        self.detail = " ".join(message.split())


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, always one line.

    A longer value says how long it was: ``'aaaa...' (100000 characters)``. Safe on
    anything: a string of any size, an integer beyond Python's digit limit, a
    structure nested too deeply for ``repr``.
    """
    if isinstance(value, str | bytes):
        kept = min(len(value), limit)
        shown = repr(value[:kept])
        while len(shown) > limit + 3:  # escapes made it longer: keep fewer characters
            kept = max(0, kept - max(1, (len(shown) - limit) // 4))
            shown = repr(value[:kept])
        if len(value) > kept:
            unit = "characters" if isinstance(value, str) else "bytes"
            shown += f"... ({len(value)} {unit})"
        return shown
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"<an integer of about {digits} digits>"
    try:
        shown = _REPR.repr(value)
    except (ValueError, RecursionError):
        shown = f"<{type(value).__name__}>"
    shown = " ".join(shown.split())
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` (a key path, a problem) as is when short, else its first ``limit``
    characters and its length: for naming, not quoting, a value in a message."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = QUOTE_CHARS
_REPR.maxother = QUOTE_CHARS
_REPR.maxlong = 40


def check_range(
    value: Any, *, name: str, low: float, high: float, limit_name: str | None = None
) -> None:
    """Refuse (``out-of-range``) a ``value`` that is not a number in [low, high]
    (NaN never is); ``limit_name`` names the constant ``high`` comes from."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (low <= value <= high)  # False for NaN
    ):
        source = f" ({limit_name})" if limit_name else ""
        raise LimitError(
            "out-of-range",
            f"{name} {quote(value)} is not a number from {_number(low)} to {_number(high)}{source}",
        )


def _number(value: float) -> str:
    if isinstance(value, int) or value.is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


# ---------------------------------------------------------------- JSON text

_STRING_S = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET_S = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_B = re.compile(rb"[^\[\]{}]+")
_UNIFY_S = str.maketrans("{}", "[]")
_UNIFY_B = bytes.maketrans(b"{}", b"[]")
_STEP_S = {"[": 1, "]": -1}
_STEP_B = {ord("["): 1, ord("]"): -1}


def _depth_exceeds(outside: str | bytes, max_depth: int) -> bool:
    """Whether the running count of openings minus closings in ``outside`` (JSON text
    with its strings emptied) passes ``max_depth``.

    Each pass of ``replace("[]", "")`` removes the innermost pairs (one level of
    balanced text) in C; pairs sum to zero, so every bracket left keeps its running
    count. What is left is then counted one bracket at a time, stopping at the first
    level past the limit: a few passes make wide-and-shallow text cheap, the early
    stop makes deep text cheap.
    """
    if isinstance(outside, bytes):
        flat: Any = _NOT_BRACKET_B.sub(b"", outside).translate(_UNIFY_B)
        pair, opening, step = b"[]", b"[", _STEP_B
    else:
        flat = _NOT_BRACKET_S.sub("", outside).translate(_UNIFY_S)
        pair, opening, step = "[]", "[", _STEP_S
    passes = 0
    while passes < 8 and pair in flat:
        flat = flat.replace(pair, opening[:0])
        passes += 1
    if passes > max_depth:
        return True
    if opening not in flat:
        return False
    levels = accumulate(map(step.__getitem__, flat))
    return next(filter((max_depth - passes).__lt__, levels), None) is not None


@functools.lru_cache(maxsize=8)
def _long_integer(digits: int, kind: type) -> re.Pattern[Any]:
    # An integer literal (no fraction, no exponent) of more than ``digits`` digits,
    # not the tail of a fraction or an exponent.
    pattern = rf"(?<![0-9.eE+\-])-?[0-9]{{{digits + 1},}}(?![.eE0-9])"
    return re.compile(pattern.encode() if kind is bytes else pattern)


def check_json_text(
    text: str | bytes,
    *,
    what: str,
    max_size: int,
    size_name: str,
    max_depth: int | None = None,
    max_int_digits: int | None = None,
) -> None:
    """Refuse JSON ``text`` that is too large, too deep or has too long an integer.

    No parsing, no recursion: the size is ``len(text)`` (characters or bytes); the
    depth is a running count of ``[``/``{`` minus ``]``/``}`` outside strings. Well-
    formedness is left to the parser that runs next. ``what`` names the text and
    ``size_name`` the constant ``max_size`` comes from; ``max_depth`` and
    ``max_int_digits`` default to the module's limits when called.
    """
    max_depth = MAX_JSON_DEPTH if max_depth is None else max_depth
    max_int_digits = MAX_INT_DIGITS if max_int_digits is None else max_int_digits
    if len(text) > max_size:
        unit = "bytes" if isinstance(text, bytes) else "characters"
        raise LimitError(
            "too-large", f"{what} has {len(text):,} {unit}; the limit is {max_size:,} ({size_name})"
        )
    raw = isinstance(text, bytes)
    opened = text.count(b"[" if raw else "[") + text.count(b"{" if raw else "{")
    long_int = _long_integer(max_int_digits, bytes if raw else str)
    if opened <= max_depth and long_int.search(text) is None:
        return  # the common case: two scans in C
    outside = (_STRING_B if raw else _STRING_S).sub(b'""' if raw else '""', text)
    if opened > max_depth and _depth_exceeds(outside, max_depth):
        raise LimitError(
            "too-deep",
            f"{what} nests deeper than {max_depth} levels of arrays and objects (MAX_JSON_DEPTH)",
        )
    found = long_int.search(outside)
    if found is not None:
        raise LimitError(
            "too-many-digits",
            f"{what} has an integer of {len(found[0].lstrip(b'-' if raw else '-'))} digits; "
            f"the limit is {max_int_digits} (MAX_INT_DIGITS)",
        )


def loads(
    text: str | bytes,
    *,
    what: str,
    max_size: int,
    size_name: str,
    max_depth: int | None = None,
    text_only: bool = True,
    **options: Any,
) -> Any:
    """``json.loads(text, **options)`` within the limits.

    Raises :class:`LimitError` for a breach (checked before parsing; a float literal
    that overflows to infinity is ``out-of-range``; with ``text_only`` a lone surrogate
    is ``not-text``) and ``ValueError`` for text that is not JSON.
    """
    check_json_text(text, what=what, max_size=max_size, size_name=size_name, max_depth=max_depth)
    if (_RISKY_FLOAT_B if isinstance(text, bytes) else _RISKY_FLOAT_S).search(text):
        # Only a long mantissa or a 3-digit exponent can overflow a double: check
        # each float then (a hook per number is slow, so not always).
        options.setdefault("parse_float", functools.partial(_finite_float, what=what))
    try:
        value = json.loads(text, **options)
    except RecursionError:  # the scan bounds depth; a lower recursion limit still ends here
        raise LimitError("too-deep", f"{what} nests too deeply to parse") from None
    except ValueError as error:
        # The scan bounds integer literals to MAX_INT_DIGITS; a process with a lower
        # sys.set_int_max_str_digits still refuses here, under the limit's word.
        if isinstance(error, json.JSONDecodeError) or "integer string" not in str(error):
            raise
        raise LimitError(
            "too-many-digits", f"{what} has an integer beyond this process's digit limit"
        ) from None
    if text_only:
        if isinstance(text, str) and _SURROGATE.search(text):  # unescaped, from Python
            raise _not_text(what)
        if ("\\u" in text) if isinstance(text, str) else (b"\\u" in text):
            check_text(value, what=what)
    return value


def check_text(value: Any, *, what: str) -> None:
    """Refuse (``not-text``) parsed JSON holding a lone surrogate in a string or key."""
    try:
        _ENCODER.encode(value).encode()
    except UnicodeEncodeError:
        raise _not_text(what) from None


def _not_text(what: str) -> LimitError:
    return LimitError(
        "not-text", f"{what} holds a lone surrogate (\\ud800-\\udfff): not UTF-8 text"
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)
_SURROGATE = re.compile("[\ud800-\udfff]")
_RISKY_FLOAT_S = re.compile(r"[0-9]{200}|[eE][+]?0*[1-9][0-9]{2}")
_RISKY_FLOAT_B = re.compile(rb"[0-9]{200}|[eE][+]?0*[1-9][0-9]{2}")


def _finite_float(literal: str, *, what: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise LimitError(
            "out-of-range", f"{what}: the number {quote(literal)} is beyond a double's range"
        )
    return number


# ---------------------------------------------------------------- files


def read_bounded(path: Path, max_bytes: int, *, size_name: str) -> bytes:
    """The bytes of ``path``, read in chunks; ``too-large`` past ``max_bytes`` (the
    value of the constant ``size_name``)."""
    return b"".join(_chunks(path, max_bytes, size_name))


def hash_bounded(path: Path, max_bytes: int, digest: Callable[[], Any], *, size_name: str) -> Any:
    """``digest()`` updated with the bytes of ``path``, read in chunks (never held
    whole); ``too-large`` past ``max_bytes``. Returns the hash object."""
    state = digest()
    for chunk in _chunks(path, max_bytes, size_name):
        state.update(chunk)
    return state


def _chunks(path: Path, max_bytes: int, size_name: str) -> Iterator[bytes]:
    """The bytes of ``path`` in chunks; ``too-large`` past ``max_bytes``.

    ``OSError`` is the caller's to word. A device that never ends (``/dev/zero``) is
    refused after ``max_bytes``, never read whole.
    """
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(min(_CHUNK, max_bytes + 1 - size)):
            size += len(chunk)
            if size > max_bytes:
                raise LimitError(
                    "too-large", f"{path}: larger than {max_bytes:,} bytes ({size_name})"
                )
            yield chunk


def iter_lines(
    path: Path,
    *,
    max_line: int | None = None,
    max_file: int | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, line) of ``path``, each read with a bounded ``readline``.

    ``line-too-long`` names the line that passes ``max_line`` bytes (its newline
    excluded; default :data:`MAX_SUITE_LINE_BYTES`), ``too-large`` the line where the
    file passes ``max_file`` bytes (default :data:`MAX_SUITE_FILE_BYTES`). ``OSError``
    is the caller's to word.
    """
    max_line = MAX_SUITE_LINE_BYTES if max_line is None else max_line
    max_file = MAX_SUITE_FILE_BYTES if max_file is None else max_file
    size = 0
    with open(path, "rb") as handle:
        number = 0
        while line := handle.readline(max_line + 2):
            number += 1
            size += len(line)
            body = len(line) - line.endswith(b"\n")
            if body > max_line:
                raise LimitError(
                    "line-too-long",
                    f"{path}: line {number}: longer than {max_line:,} bytes (MAX_SUITE_LINE_BYTES)",
                )
            if size > max_file:
                raise LimitError(
                    "too-large",
                    f"{path}: line {number}: the file passes {max_file:,} bytes "
                    "(MAX_SUITE_FILE_BYTES)",
                )
            yield number, line


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: refuse a key that appears twice."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {quote(key)} appears twice")
            seen.add(key)
    return record


def no_constant(literal: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON numbers."""
    raise ValueError(f"{literal} is not a JSON number")


# Strict JSON for files users bring: no duplicate key, no NaN or Infinity literal.
STRICT_JSON_HOOKS = {"object_pairs_hook": unique_keys, "parse_constant": no_constant}
