"""Read-only JSON data: a tool schema shared by every attempt of a run.

The toolbox offers each attempt its tools' schemas. A copy per attempt (a deep copy of
every schema's ``parameters``) kept one attempt's model from changing what the next
one is offered; a read-only copy made once does the same without the per-attempt
cost: :func:`frozen_json` gives dicts and lists that refuse every change
(``TypeError``), and are still ``dict`` and ``list`` to ``json``, to ``==`` and to
``isinstance``. Copying one (``copy.copy``, ``copy.deepcopy``, ``pickle``) gives plain,
mutable data.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn

__all__ = ["frozen_json"]


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a tool schema offered to the model is read-only ({type(self).__name__})")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A ``list`` that refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(item, memo) for item in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def frozen_json(value: Any) -> Any:
    """A read-only deep copy of JSON data: dicts and lists at every level (a tuple
    stays a tuple, of read-only items); other values are kept."""
    if isinstance(value, dict):
        return FrozenDict({key: frozen_json(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList(frozen_json(item) for item in value)
    if isinstance(value, tuple):
        return tuple(frozen_json(item) for item in value)
    return value
