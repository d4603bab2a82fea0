"""The reference scan of a release bundle (``xaytune.reference-scan/v1``).

Its secrets are every reference of the run's suites (each reference record's ``answer``
and every other string in it but its ``id``) and every answer of every attempt in the
published evidence (next to a released score, an answer gives the reference; one whose
tokens are in the candidates' own declared texts, a model echoing its prompt, is looked
for only as a whole value). Every bundled file is scanned, ``bundle.json`` and the
manifests too. Normal form: NFKC, case-folded, whitespace collapsed; a number loses
thousands separators and trailing fractional zeros (``1,000.0`` is ``1000``). Tokens are
maximal runs of letters and digits (a digit run inside a hex digest is no token), a
number with separators or a decimal point being one token. A secret is *distinctive*
when its tokens hold at least 5 characters. A leak is:

- a JSON string value whose normal form is a secret's (values of ``label``,
  ``version`` and ``revision`` excepted: identifiers set by code or config, candidate
  labels ``a``/``b`` and part versions ``1``, which a multiple-choice or numeric
  reference would otherwise match);
- a distinctive secret's token sequence in any JSON string value, in the text of any
  other file (HTML entities decoded, embedded ``data:`` images scanned as files), and
  in PNG files' bytes and compressed text chunks.

Not scanned: JSON numbers, booleans and object keys (measurements, labels, metric
names), and plot pixels (drawn from report.json's released values). A short secret
(``4``, ``12``, ``B``) is found only as a whole string value: in prose or as a number it
cannot be told from a measurement. A leak refuses the bundle (``reference-leak``,
naming the file and the task).
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
import unicodedata
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from xaytune.core.errors import XaytuneError

__all__ = [
    "DISTINCTIVE",
    "IDENTIFIER_KEYS",
    "SCAN_RULES",
    "Scanner",
    "strings_of",
    "tokens_of",
]

SCAN_RULES = "xaytune.reference-scan/v1"
DISTINCTIVE = 5  # characters in a secret's tokens for it to be looked for in text
IDENTIFIER_KEYS = frozenset({"label", "version", "revision"})

_SPACE = re.compile(r"\s+")
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_WHOLE_NUMBER = re.compile(rf"[+-]?{_NUMBER}")
_TOKEN = re.compile(rf"{_NUMBER}(?![^\W_])|[^\W_]+")
_DATA_URI = re.compile(r"data:[\w.+/-]*;base64,([A-Za-z0-9+/=\s]+)")
_PNG = b"\x89PNG\r\n\x1a\n"


def _number(text: str) -> str:
    text = text.replace(",", "")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _normal(text: str) -> str:
    text = _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return _number(text) if _WHOLE_NUMBER.fullmatch(text) else text


def tokens_of(text: str) -> list[str]:
    """The tokens of ``text`` in normal form (module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [
        _number(t) if t[0].isdigit() and _WHOLE_NUMBER.fullmatch(t) else t
        for t in _TOKEN.findall(folded)
    ]


class Scanner:
    """The secrets (references, answers) and the rules that find them (module docstring)."""

    def __init__(self) -> None:
        self.whole: dict[str, str] = {}
        self.by_first: dict[str, list[tuple[tuple[str, ...], str]]] = defaultdict(list)
        self.references = 0
        self.answers = 0

    def add_reference(self, record: dict[str, Any], task_id: str) -> None:
        """A reference record of ``task_id``: every string in it but its ``id``."""
        self.references += 1
        for text in strings_of({k: v for k, v in record.items() if k != "id"}):
            self._add(text, f"the reference of task {task_id}")

    def add_answer(self, answer: str, what: str, shown: list[list[str]]) -> None:
        """An answer; looked for only as a whole value when its tokens are in ``shown``
        (the tokens of the texts the candidates declare: a weak model echoing its
        prompt's "ANSWER: <number>" says nothing of a reference the prompt does not)."""
        self.answers += 1
        tokens = tokens_of(answer)
        copied = any(_at(line, tokens) is not None for line in shown)
        self._add(answer, what, text=not copied)

    def _add(self, secret: str, what: str, *, text: bool = True) -> None:
        normal = _normal(secret)
        if not normal:
            return
        self.whole.setdefault(normal, what)  # a reference first: it names the task
        tokens = tokens_of(secret)
        if text and sum(map(len, tokens)) >= DISTINCTIVE:
            self.by_first[tokens[0]].append((tuple(tokens), what))

    def scan(self, root: Path) -> None:
        """Refuse (``reference-leak``) the first file under ``root`` holding a secret."""
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            name = path.relative_to(root).as_posix()
            found = self._file(path.name, path.read_bytes())
            if found is not None:
                raise XaytuneError("reference-leak", f"{name} holds {found}; nothing was shared")

    def _file(self, name: str, data: bytes) -> str | None:
        if name.endswith(".json"):
            try:
                return self._json(json.loads(data), None)
            except (ValueError, RecursionError):
                pass  # not JSON after all: scanned as text
        if data.startswith(_PNG):
            return self._png(data)
        text = data.decode("utf-8", errors="replace")
        for encoded in _DATA_URI.findall(text):
            try:
                found = self._file("", base64.b64decode("".join(encoded.split())))
            except (binascii.Error, ValueError):
                found = self._text(encoded)
            if found is not None:
                return found
        return self._text(html.unescape(_DATA_URI.sub(" ", text)))

    def _json(self, value: Any, key: str | None) -> str | None:
        if isinstance(value, str):
            if key not in IDENTIFIER_KEYS and _normal(value) in self.whole:
                return self.whole[_normal(value)]
            return self._text(value)
        if isinstance(value, dict | list):
            children = value.items() if isinstance(value, dict) else enumerate(value)
            for child_key, child in children:
                found = self._json(child, child_key if isinstance(child_key, str) else key)
                if found is not None:
                    return found
        return None

    def _png(self, data: bytes) -> str | None:
        """Its bytes (uncompressed text chunks among them) and its compressed text."""
        texts = [data.decode("latin-1")]
        at = len(_PNG)
        while at + 8 <= len(data):
            length = int.from_bytes(data[at : at + 4], "big")
            kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
            at += 12 + length
            try:
                if kind == b"zTXt":
                    texts.append(zlib.decompress(body.split(b"\0", 1)[1][1:]).decode("latin-1"))
                elif kind == b"iTXt":
                    _, rest = body.split(b"\0", 1)
                    text = rest[2:].split(b"\0", 2)[2]
                    texts.append((zlib.decompress(text) if rest[0] else text).decode("utf-8"))
            except (IndexError, ValueError, zlib.error):
                continue  # a malformed chunk: its bytes are scanned with the file's
        for text in texts:
            found = self._text(text)
            if found is not None:
                return found
        return None

    def _text(self, text: str) -> str | None:
        tokens = tokens_of(text)
        for i, token in enumerate(tokens):
            for sequence, what in self.by_first.get(token, ()):
                if tuple(tokens[i : i + len(sequence)]) == sequence:
                    return what
        return None


def _at(tokens: list[str], sequence: list[str]) -> int | None:
    """Where ``sequence`` starts in ``tokens`` (None: nowhere, or it is empty)."""
    if sequence:
        for i in range(len(tokens) - len(sequence) + 1):
            if tokens[i : i + len(sequence)] == sequence:
                return i
    return None


def strings_of(value: Any) -> list[str]:
    """Every string in ``value`` (a string, or nested dicts, lists and tuples)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [text for item in value for text in strings_of(item)]
    return []
