"""A small stateful environment for the environment tests (named by dotted path).

``Counter(start)``: a value that ``increment`` raises and ``read`` reports; ``fail``
raises, ``slow`` blocks past any short timeout. ``INSTANCES`` counts every instance
built in this process (a fresh one per attempt).
"""

from __future__ import annotations

import time
from typing import Any

INSTANCES: list[Counter] = []


class Counter:
    """The value starts at ``start``; every instance is independent."""

    version = "1"

    def __init__(self, start: int = 0) -> None:
        self.value = start
        INSTANCES.append(self)

    def tools(self) -> dict[str, Any]:
        return {
            "increment": self.increment,
            "read": self.read,
            "fail": self.fail,
            "slow": self.slow,
        }

    def state(self) -> dict[str, Any]:
        return {"value": self.value}

    def increment(self, by: int) -> str:
        self.value += by
        return f"value is {self.value}"

    def read(self) -> dict[str, int]:
        return {"value": self.value}

    def fail(self) -> str:
        raise ValueError("the counter refuses")

    def slow(self) -> str:
        time.sleep(2)
        self.value += 1000
        return "late"


TOOLS = [
    {
        "name": "increment",
        "description": "Add `by` to the counter.",
        "parameters": {
            "type": "object",
            "properties": {"by": {"type": "integer", "enum": [1, 2]}},
            "required": ["by"],
        },
    },
    {
        "name": "read",
        "description": "Read the counter.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "fail",
        "description": "Always fails.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "slow",
        "description": "Takes two seconds.",
        "parameters": {"type": "object", "properties": {}},
    },
]


class Opaque:
    """An environment whose state is not JSON data (refused when a suite is built)."""

    def tools(self) -> dict[str, Any]:
        return {"read": lambda: "?"}

    def state(self) -> object:
        return object()
