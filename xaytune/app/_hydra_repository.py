"""Hydra 1.3's config repository without a copy of the ConfigStore per lookup.

Every config-group lookup makes a ``CachingConfigRepository``, which deep-copies the
repository so that re-initialising its sources cannot touch the original. In Hydra 1.3
that copy includes the process-wide ``ConfigStore`` (the structured config source holds
it), with every structured config Hydra registers: about 7 ms each time, and
``python -m xaytune --help`` lists the config groups with 84 lookups (~0.6 s of its
~1.5 s). Hydra upstream no longer keeps the store on the source (it fetches
``ConfigStore.instance()`` on use, facebookresearch/hydra#2928, after 1.3); this does
the same for 1.3 by sharing the store in the copy. Nothing is lost: the store is never
mutated through the copy (``ConfigStore.load`` hands out a deep copy of each node), so
the composed configs and the help text are the same.

:func:`compose_once` spares a run Hydra 1.3's first composition, made only to read
``hydra.mode`` when nothing can have set it (issue 33).
"""

from __future__ import annotations

import copy

__all__ = ["compose_once", "packaged_config_sets_mode", "share_config_store"]


def share_config_store() -> None:
    """Make Hydra's ``CachingConfigRepository`` share the ConfigStore (idempotent).

    Does nothing when Hydra's internals are not the expected ones (another version):
    only a speed-up is lost.
    """
    try:
        import hydra
        from hydra._internal.config_repository import CachingConfigRepository
        from hydra.core.config_store import ConfigStore
    except ImportError:
        return
    if not hydra.__version__.startswith("1.3."):  # the replaced __init__ is 1.3's
        return
    if getattr(CachingConfigRepository.__init__, "_xaytune_shares_store", False):
        return

    def __init__(self, delegate) -> None:  # replaces Hydra 1.3.x CachingConfigRepository.__init__
        store = ConfigStore.instance()
        self.delegate = copy.deepcopy(delegate, {id(store): store})
        self.cache = {}

    __init__._xaytune_shares_store = True  # type: ignore[attr-defined]
    CachingConfigRepository.__init__ = __init__  # type: ignore[method-assign]


# Where hydra.mode could come from besides the packaged conf/: an override of it, of the
# search path, or of Hydra's own config groups (hydra=..., hydra/launcher=...).
_MODE_KEYS = ("hydra.mode", "hydra.searchpath")
# The search path of ``python -m xaytune`` without --config-dir (Hydra's defaults, then
# the packaged conf/ and the structured configs); @hydra.main(config_path="../conf")
# spells the packaged conf/ pkg://xaytune/conf, initialize_config_module pkg://xaytune.conf.
_PLAIN_SEARCH_PATHS = frozenset(
    (("hydra", "pkg://hydra.conf"), ("main", conf), ("schema", "structured://"))
    for conf in ("pkg://xaytune/conf", "pkg://xaytune.conf")
)
_packaged_mode: list[bool] = []


def compose_once() -> None:
    """Let Hydra 1.3 compose the config once per run, not twice (idempotent).

    Before a run Hydra composes the whole config only to read ``hydra.mode``
    (``Hydra.get_mode``, ~0.14 s), then composes it again for the run. ``hydra.mode``
    is unset (None, which is what ``get_mode`` then returns) unless a config or an
    override sets it: when the search path is the packaged one, no override names
    ``hydra.mode``, ``hydra.searchpath`` or Hydra's own groups, and no packaged config
    file sets it (:func:`packaged_config_sets_mode`), the answer is None without
    composing. Otherwise Hydra composes as before.
    """
    try:
        import hydra
        from hydra._internal.hydra import Hydra
    except ImportError:
        return
    if not hydra.__version__.startswith("1.3.") or getattr(
        Hydra.get_mode, "_xaytune_composes_once", False
    ):
        return
    composed_get_mode = Hydra.get_mode

    def get_mode(self, config_name, overrides):  # replaces Hydra 1.3.x Hydra.get_mode
        if _mode_is_unset(self, overrides):
            return None
        return composed_get_mode(self, config_name, overrides)

    get_mode._xaytune_composes_once = True  # type: ignore[attr-defined]
    Hydra.get_mode = get_mode  # type: ignore[method-assign]


def _mode_is_unset(hydra_app, overrides: list[str]) -> bool:
    try:
        path = hydra_app.config_loader.config_search_path.get_path()
        search = tuple((element.provider, element.path) for element in path)
    except AttributeError:  # not 1.3's loader: let Hydra compose
        return False
    if search not in _PLAIN_SEARCH_PATHS:
        return False
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("~+").strip()
        if key == "hydra" or key.startswith(("hydra/", *_MODE_KEYS)):
            return False
    if not _packaged_mode:
        _packaged_mode.append(packaged_config_sets_mode())
    return not _packaged_mode[0]


def packaged_config_sets_mode() -> bool:
    """Whether a YAML file of the packaged conf/ may set ``hydra.mode`` (a ``hydra:``
    mapping with ``mode``, or a file in Hydra's package with a ``mode`` key)."""
    from pathlib import Path

    import yaml

    import xaytune.conf

    for path in sorted(Path(xaytune.conf.__file__).parent.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if "hydra" not in text:
            continue
        if "@package hydra" in text and "mode" in text:
            return True
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:  # Hydra composes, and reports the file (bad-yaml)
            return True
        section = data.get("hydra") if isinstance(data, dict) else None
        if isinstance(section, dict) and "mode" in section:
            return True
    return False
