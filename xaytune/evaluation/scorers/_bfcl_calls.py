"""What both BFCL checkers read of an environment task's call record."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decoded_arguments"]


def decoded_arguments(call: dict[str, Any]) -> dict[str, Any] | None:
    """A recorded call's arguments as BFCL decodes a function call's: the JSON text the
    model sent, read with ``json.loads`` (``20.0`` a float, ``20`` an integer; an object
    given as such is taken as it is); None when they are not a JSON object."""
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None
