"""Comparing harness candidates: the paired rule, its statistics, power and calibration.

The public modules: :mod:`.compare` (summarize, compare and the records), :mod:`.rule`,
:mod:`.stats`, :mod:`.power`, :mod:`.calibration`, :mod:`.methods`, :mod:`.family`,
:mod:`.conditions`, :mod:`.tasks`, :mod:`.report`. The spec's import
path :mod:`xaytune.core.harness_comparison` re-exports :mod:`.compare`.
"""
