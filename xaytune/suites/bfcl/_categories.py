"""The BFCL categories the installed wheel ships, and which of them xaytune builds.

Each built category is a suite ``bfcl-<category, underscores as hyphens>``
(``simple_python`` -> ``bfcl-simple-python``) scored by one scorer:

========================================  ===========================  ==================
categories                                checker (BFCL's)             scorer
========================================  ===========================  ==================
simple_python, simple_java,               AST, one call                ``bfcl-ast``
simple_javascript, live_simple
multiple, live_multiple                   AST, the named function      ``bfcl-ast``
parallel, parallel_multiple,              AST, every call, any order   ``bfcl-ast``
live_parallel, live_parallel_multiple
irrelevance, live_irrelevance             no call                      ``bfcl-relevance``
live_relevance                            some call                    ``bfcl-relevance``
multi_turn_base, multi_turn_miss_func,    state and results per turn   ``bfcl-multi-turn``
multi_turn_miss_param,
multi_turn_long_context
========================================  ===========================  ==================

Not built (:data:`NOT_BUILT`, refused ``bfcl-unsupported`` with the reason): ``memory``
and ``web_search`` (BFCL's agentic categories: a web search backend on the network,
and memory backends with prerequisite conversations), and ``format_sensitivity`` (the
same questions re-asked under prompt formats for models that write calls as text; a
function-calling harness has no format to vary).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CATEGORIES", "NOT_BUILT", "Category", "category_of_suite"]

Kind = Literal["ast", "relevance", "multi-turn"]


@dataclass(frozen=True, slots=True)
class Category:
    """One BFCL category as xaytune builds it."""

    name: str
    kind: Kind

    @property
    def suite(self) -> str:
        """The suite name (``bfcl-simple-python``)."""
        return "bfcl-" + self.name.replace("_", "-")

    @property
    def file(self) -> str:
        """BFCL's data file (under ``data/``; its ground truth under
        ``data/possible_answer/``, except for the relevance categories)."""
        return f"BFCL_v4_{self.name}.json"

    @property
    def scorer(self) -> str:
        """The scorer that checks it."""
        return {"ast": "bfcl-ast", "relevance": "bfcl-relevance"}.get(self.kind, "bfcl-multi-turn")

    @property
    def language(self) -> str:
        """BFCL's language for the category (``is_java``, ``is_js``)."""
        if "javascript" in self.name:
            return "javascript"
        return "java" if "java" in self.name else "python"


_KINDS: dict[str, Kind] = {
    "simple_python": "ast",
    "simple_java": "ast",
    "simple_javascript": "ast",
    "multiple": "ast",
    "parallel": "ast",
    "parallel_multiple": "ast",
    "irrelevance": "relevance",
    "live_simple": "ast",
    "live_multiple": "ast",
    "live_parallel": "ast",
    "live_parallel_multiple": "ast",
    "live_irrelevance": "relevance",
    "live_relevance": "relevance",
    "multi_turn_base": "multi-turn",
    "multi_turn_miss_func": "multi-turn",
    "multi_turn_miss_param": "multi-turn",
    "multi_turn_long_context": "multi-turn",
}
CATEGORIES: dict[str, Category] = {
    category.suite: category for category in (Category(n, k) for n, k in _KINDS.items())
}
NOT_BUILT = {
    "bfcl-memory": "an agentic category: memory backends and prerequisite conversations",
    "bfcl-web-search": "an agentic category: it needs a web search backend on the network",
    "bfcl-format-sensitivity": "prompt formats for models that write calls as text; a "
    "function-calling harness has no format to vary",
}


def category_of_suite(name: str) -> Category | None:
    """The category a suite name builds, or None."""
    return CATEGORIES.get(name)
