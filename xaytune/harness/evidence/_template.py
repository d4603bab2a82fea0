"""A writer's line with holes, and the JSON bytes that fill them.

Verification compares stored lines with the lines its facts imply. Writing each
expected line through a JSON encoder costs more than hashing it; a
:class:`LineTemplate` is built once from the line the writer itself writes for
placeholder values, so its layout is the writer's own, and filling it is one
``%`` of bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter

from xaytune.core.canonical import canonical_bytes

__all__ = ["LineTemplate", "json_string", "placeholder"]


def placeholder(name: str) -> str:
    """A string value no fact takes (it starts with NUL), standing for ``name``."""
    return f"\x00{name}"


def json_string(text: str) -> bytes:
    """``canonical_bytes(text)``; a printable ASCII string without ``"`` or ``\\``
    (a digest, most task ids) is itself in quotes."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return b'"%s"' % text.encode()
    return canonical_bytes(text)


class LineTemplate:
    """``line`` with each ``marks[name]`` (bytes found exactly once) made a hole.

    ``fill(values)`` is ``line`` with each mark replaced by ``values[name]`` (bytes).
    """

    __slots__ = ("_format", "_values", "order")

    def __init__(self, line: bytes, marks: Mapping[str, bytes]) -> None:
        for name, mark in marks.items():
            if line.count(mark) != 1:
                raise ValueError(f"placeholder {name!r} is not in the line exactly once")
        order = sorted(marks, key=lambda name: line.index(marks[name]))
        self.order = tuple(order)
        text = line.replace(b"%", b"%%")
        for mark in marks.values():
            text = text.replace(mark, b"%s")
        self._format = text
        getter = itemgetter(*order)
        self._values = getter if len(order) > 1 else lambda values: (getter(values),)

    def fill(self, values: Mapping[str, bytes]) -> bytes:
        return self._format % self._values(values)

    def format(self, order: tuple[str, ...]) -> bytes:
        """The line as a ``%s`` format of its holes in ``order`` (which must be their
        order in the line): ``format(order) % values`` fills it from a tuple."""
        if order != self.order:
            raise ValueError(f"holes {order} are not in the line's order {self.order}")
        return self._format
