"""The Berkeley Function Calling Leaderboard, offline: one suite per BFCL category the
installed ``bfcl-eval`` wheel ships (the ``[bfcl]`` extra, ``bash
scripts/setup-bfcl.sh``), ``bfcl-<category>`` (``bfcl-simple-python``,
``bfcl-multiple``, ``bfcl-live-parallel``, ``bfcl-multi-turn-miss-func``, ...: see
:mod:`xaytune.suites.bfcl._categories` for the list and each one's checker), with
BFCL's environments (``bfcl-multi-turn``, ``bfcl-functions``). The checkers are the
scorers ``bfcl-ast``, ``bfcl-relevance`` and ``bfcl-multi-turn``
(``xaytune.evaluation.scorers.bfcl_ast``, ``bfcl_relevance``, ``bfcl_multi_turn``)."""

from xaytune.suites.bfcl._build import BFCL_SUITES, build_bfcl_suite
from xaytune.suites.bfcl._cache import bfcl_suite_path
from xaytune.suites.bfcl._categories import CATEGORIES, NOT_BUILT, Category
from xaytune.suites.bfcl._source import BFCL_VERSION, require_bfcl

__all__ = [
    "BFCL_SUITES",
    "BFCL_VERSION",
    "CATEGORIES",
    "NOT_BUILT",
    "Category",
    "bfcl_suite_path",
    "build_bfcl_suite",
    "require_bfcl",
]
