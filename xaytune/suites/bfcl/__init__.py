"""The Berkeley Function Calling Leaderboard, offline: ``bfcl-multi-turn-base`` and
``bfcl-simple-python``, built from the installed ``bfcl-eval`` wheel (the ``[bfcl]``
extra, ``bash scripts/setup-bfcl.sh``), with BFCL's environments (``bfcl-multi-turn``,
``bfcl-functions``). Their checkers are the scorers ``bfcl-multi-turn`` and
``bfcl-ast`` (``xaytune.evaluation.scorers.bfcl_multi_turn``, ``bfcl_ast``)."""

from xaytune.suites.bfcl._build import BFCL_SUITES, bfcl_suite_path, build_bfcl_suite
from xaytune.suites.bfcl._source import BFCL_VERSION, require_bfcl

__all__ = ["BFCL_SUITES", "BFCL_VERSION", "bfcl_suite_path", "build_bfcl_suite", "require_bfcl"]
