"""What Hydra raises while composing, as the one line the CLI prints (exit 2).

Decided by the exception's type and its fields, never by reading Hydra's report:

- :class:`~hydra.errors.MissingConfigException` (``model=nonexistent``): Hydra's first
  line and the group's options, from the exception's ``missing_cfg_file`` and
  ``options``;
- :class:`~hydra.errors.ConfigCompositionException` caused by an OmegaConf key error
  (``samplin.count=3``): the override whose key the error's ``full_key`` lies on is named
  as a typo, or, when its key is a config group, with what to type instead
  (:func:`xaytune.app._cli_checks.group_hint`);
- the same exception raised because no default uses a group override
  (``experiment=quickstart``): the override is read from Hydra's ``Overrides`` record
  the refusal was raised from, then the same hint;
- any other Hydra refusal (grammar, sweep ambiguity, ...): its first two lines;
- a YAML syntax error in a config file (``bad-yaml``), an ``OSError`` (``bad-output``)
  and anything else (``bad-override``): the exception's type and message.
"""

from __future__ import annotations

from xaytune.app._cli_checks import config_groups, group_hint
from xaytune.core.limits import clip

__all__ = ["composition_error_line"]

# A message quotes the user's input: an override of 100 KB is named, not echoed.
_MESSAGE_CHARS = 400


def composition_error_line(error: BaseException, argv: list[str]) -> str:
    """``error: <reason>: <message>`` for ``error``, raised while Hydra composed the
    config of the command line ``argv``."""
    import yaml
    from hydra.errors import CompactHydraException

    if isinstance(error, CompactHydraException):
        return _line("bad-override", _hydra_message(error, argv))
    if isinstance(error, yaml.YAMLError):
        return _line("bad-yaml", f"{type(error).__name__}: {_joined(str(error))}")
    if isinstance(error, OSError):  # e.g. a hydra.run.dir that cannot be made
        return _line("bad-output", f"{type(error).__name__}: {_joined(str(error))}")
    return _line("bad-override", f"{type(error).__name__}: {_joined(str(error))}")


def _line(reason: str, message: str) -> str:
    return f"error: {reason}: {clip(message, _MESSAGE_CHARS)}"


def _joined(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())[:500]


def _lines(error: BaseException) -> list[str]:
    """The lines Hydra would print for ``error`` (its own, then an OmegaConf cause's)."""
    from omegaconf.errors import OmegaConfBaseException

    text = str(error)
    if isinstance(error.__cause__, OmegaConfBaseException):
        text += "\n" + str(error.__cause__)
    return [line.strip() for line in text.splitlines() if line.strip()]


def _hydra_message(error: BaseException, argv: list[str]) -> str:
    from hydra.errors import MissingConfigException, OverrideParseException

    lines = _lines(error) or [type(error).__name__]
    if isinstance(error, MissingConfigException):
        message = lines[0]
        if error.options:
            group = error.missing_cfg_file.rpartition("/")[0]
            message += f"; Available options in '{group}': {', '.join(error.options)}"
        return message
    if isinstance(error, OverrideParseException):
        return f"{error.override}: " + "; ".join(lines[:2])
    key = _refused_override_key(error, argv)
    if key is not None and key in config_groups(argv):
        return group_hint(key, argv)
    if key is not None:
        # Hydra suggests "+key=value", which only adds a key the schema then refuses:
        # for a misspelt key the fix is the spelling.
        return (
            f"{key}: no such key (a typo? `python -m xaytune +experiment=... --cfg job` "
            "prints every key)"
        )
    return "; ".join(lines[:2])


def _refused_override_key(error: BaseException, argv: list[str]) -> str | None:
    """The key of the override Hydra could not apply, or None (another refusal)."""
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    if not isinstance(error, ConfigCompositionException):
        return None
    cause = error.__cause__
    if isinstance(cause, ConfigAttributeError | ConfigKeyError):
        return _override_on_path(getattr(cause, "full_key", None), argv)
    if cause is None:
        return _unused_group_override(error)
    return None


def _override_on_path(full_key: object, argv: list[str]) -> str | None:
    """The first plain ``key=value`` override of ``argv`` that ``full_key`` (where
    OmegaConf stopped) lies on: the key itself, a parent of it (``samplin`` for
    ``samplin.count=3``), or a key inside its mapping (``model._target_`` for
    ``model={_target_: ...}``)."""
    if not isinstance(full_key, str) or not full_key:
        return None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(candidates)
    except Exception:  # a grammar error is Hydra's own refusal, raised before this one
        return None
    for override in parsed:
        if override.is_add() or override.is_delete() or override.is_force_add():
            continue
        key = override.key_or_group
        inside_mapping = isinstance(override.value(), dict) and full_key.startswith(key + ".")
        if key == full_key or key.startswith(full_key + ".") or inside_mapping:
            return str(key)
    return None


def _unused_group_override(error: BaseException) -> str | None:
    """The first group override no default used (``experiment=quickstart`` without
    ``+``). Hydra raises that refusal from ``Overrides.ensure_overrides_used`` with no
    field naming the override; the ``Overrides`` record it was raised from holds, per
    override, whether a default used it."""
    from hydra._internal.defaults_list import Overrides

    trace = error.__traceback__
    while trace is not None:
        owner = trace.tb_frame.f_locals.get("self")
        if isinstance(owner, Overrides):
            unused = [key for key, meta in owner.override_metadata.items() if not meta.used]
            return unused[0] if unused else None
        trace = trace.tb_next
    return None
