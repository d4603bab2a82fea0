"""Usage details in an OpenAI-compatible reply: cached and reasoning tokens.

Read from the OpenAI fields ``usage.prompt_tokens_details.cached_tokens`` (prompt
tokens served from the provider's prompt cache, a part of ``prompt_tokens``) and
``usage.completion_tokens_details.reasoning_tokens`` (a part of
``completion_tokens``). A llama.cpp server reports the first there too (recent
builds), and in its ``timings``: ``cache_n`` prompt tokens reused from its cache,
``prompt_n`` evaluated. ``timings`` is used only when ``prompt_tokens_details`` says
nothing and the two add up to ``usage.prompt_tokens`` (older builds counted the
prompt differently: then it says nothing either).

A detail the reply does not give (no details object, a null one, no key, a null
value) is None: not reported, never zero. A detail that is given must be a token
count within its total, or the reply is malformed (:class:`MalformedUsage`).
"""

from __future__ import annotations

from typing import Any

from xaytune.core.canonical import MAX_SAFE_INTEGER

__all__ = ["MalformedUsage", "usage_details"]


class MalformedUsage(ValueError):
    """A usage detail that is given but is not a token count within its total."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER


def _detail(usage: dict[str, Any], group: str, key: str, total: str) -> int | None:
    details = usage.get(group)
    if details is None:
        return None
    if not isinstance(details, dict):
        raise MalformedUsage(f"the reply's usage.{group} is not an object")
    value = details.get(key)
    if value is None:
        return None
    if not _count(value) or value > usage[total]:
        raise MalformedUsage(
            f"the reply's usage.{group}.{key} ({str(value)[:40]}) is not a token count "
            f"within usage.{total} ({usage[total]})"
        )
    return value


def _llama_cache(timings: Any, prompt_tokens: int) -> int | None:
    """llama.cpp's ``timings.cache_n``, when it and ``prompt_n`` make up the prompt."""
    if not isinstance(timings, dict):
        return None
    cached, evaluated = timings.get("cache_n"), timings.get("prompt_n")
    if _count(cached) and _count(evaluated) and cached + evaluated == prompt_tokens:
        return cached
    return None


def usage_details(data: dict[str, Any]) -> tuple[int | None, int | None]:
    """(cached tokens, reasoning tokens) of a reply body whose ``usage`` holds valid
    ``prompt_tokens`` and ``completion_tokens``; None for what it does not report."""
    usage = data["usage"]
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens", "prompt_tokens")
    if cached is None:
        cached = _llama_cache(data.get("timings"), usage["prompt_tokens"])
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens", "completion_tokens")
    return cached, reasoning
