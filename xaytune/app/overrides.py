"""Hydra-style overrides of the comparison settings, for ``python -m xaytune.compare``.

Hydra's override grammar lives here, in the app, so the audit room needs no Hydra:
:func:`comparison_overrides` parses ``comparison.KEY=VALUE`` lines into
:class:`~xaytune.audit.recompare.ComparisonOverride` records (plain values) that
:func:`~xaytune.audit.recompare.recompare` applies. Each refusal is ``bad-override``,
one line naming the override: a line the grammar refuses, a key outside
``comparison.``, a deletion (``~key``) or addition (``+key``), a sweep (``a,b``).
"""

from __future__ import annotations

from collections.abc import Sequence

from xaytune.audit.recompare import ComparisonOverride
from xaytune.core.errors import ConfigError

__all__ = ["comparison_overrides"]


def comparison_overrides(lines: Sequence[str]) -> tuple[ComparisonOverride, ...]:
    """The overrides ``lines`` give, in order, each with its line as given."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(lines))
    except Exception as error:  # Hydra's grammar errors span several lines
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError("bad-override", message) from None
    overrides = []
    for override in parsed:
        line = override.input_line or override.key_or_group
        if override.is_delete() or override.is_add():
            raise ConfigError(
                "bad-override", f"{line}: only comparison.* keys may change when comparing again"
            )
        if override.is_sweep_override():
            raise ConfigError(
                "bad-override",
                f"{line}: a sweep is several comparisons; compare again once per value",
            )
        overrides.append(ComparisonOverride(override.key_or_group, override.value(), line))
    return tuple(overrides)
