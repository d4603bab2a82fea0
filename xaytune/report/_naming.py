"""How a report page names the model its comparison ran under."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from xaytune.core.canonical import canonical_bytes

__all__ = ["model_title"]

# Keys of a model config that say how it is reached, not which model it is.
_TRANSPORT_KEYS = frozenset(
    {
        "api_key_env", "max_retries", "parallel", "preflight", "prices",
        "startup_timeout_s", "threads", "timeout_s", "total_timeout_s", "usage_details",
    }
)  # fmt: skip


def model_title(config: Mapping[str, Any]) -> str:
    """A model as a page names it, from its config with the defaults left out: its
    kind, its name (or adapter target), then what else sets it apart ("simulated
    (mental_error_base 0.04)"); a long value is shortened, never embedded whole."""
    rest = {k: v for k, v in config.items() if k not in _TRANSPORT_KEYS}
    kind = rest.pop("kind", None)
    name = rest.pop("name", None) or rest.pop("_target_", None)
    head = " ".join(str(part) for part in (kind, name) if part is not None) or "model"
    if not rest:
        return head
    shown = []
    for key, value in sorted(rest.items()):
        # Canonical JSON: a value read back from the manifest (0.0 written as 0) is named
        # as the run named it, so the auditor renders the same page.
        canonical = json.loads(canonical_bytes(value))
        text = value if isinstance(value, str) else json.dumps(canonical, sort_keys=True)
        shown.append(f"{key} {text if len(text) <= 60 else text[:57] + '…'}")
    return f"{head} ({', '.join(shown)})"
