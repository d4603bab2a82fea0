"""Two patches of Hydra 1.3's internals, each for the commands it speeds up, each
refused loudly when the installed Hydra's code is not the code it replaces.

:func:`share_config_store` (``--help``): every config-group lookup makes a
``CachingConfigRepository``, which deep-copies the repository so that re-initialising
its sources cannot touch the original. In Hydra 1.3 that copy includes the process-wide
``ConfigStore`` (the structured config source holds it), with every structured config
Hydra registers: about 7 ms each time, and ``python -m xaytune --help`` lists the config
groups with 84 lookups (~0.6 s of its ~1.5 s). Hydra upstream no longer keeps the store
on the source (it fetches ``ConfigStore.instance()`` on use, facebookresearch/hydra#2928,
after 1.3); this does the same for 1.3 by sharing the store in the copy. Nothing is
lost: the store is never mutated through the copy (``ConfigStore.load`` hands out a deep
copy of each node), so the composed configs and the help text are the same. Measured
(CPU seconds, 2 cores): ``--help`` 0.39 with it, 0.62 without; ``--cfg job`` and a dry
run make a handful of lookups and show no difference, so only help applies it.

:func:`compose_once` (a run or a sweep) spares Hydra 1.3's first composition, made
only to read ``hydra.mode`` when nothing can have set it (issue 33).

Before patching, each checks the sha256 of the source (``inspect.getsource``) of the
Hydra function it replaces or wraps (:data:`PATCHED_SOURCES`): another Hydra stops the
command with one ``hydra-unsupported`` line naming the function, instead of a patch
silently changing what Hydra does. The digests are the same in every Hydra 1.3 checked
(the 1.3.0 to 1.3.5 tags, the 1.3 branch, the 1.3.8 release).
"""

from __future__ import annotations

import copy
import hashlib
import inspect
from typing import Any

from xaytune.core.errors import XaytuneError

__all__ = [
    "PATCHED_SOURCES",
    "HydraMismatchError",
    "check_patched_source",
    "compose_once",
    "packaged_config_sets_mode",
    "share_config_store",
]

# The sha256 of inspect.getsource() of each Hydra function patched here.
PATCHED_SOURCES = {
    "hydra._internal.config_repository.CachingConfigRepository.__init__": (
        "d2b1c125731574fe7de0b14a17d17fde84fa942ce5f1f5a645cc860edbae1332"
    ),
    "hydra._internal.hydra.Hydra.get_mode": (
        "47ab05c3c05b1c64309329b03cd0533ae29807ad9487b066289c03a86dc4ed8a"
    ),
}


class HydraMismatchError(XaytuneError):
    """The installed Hydra's code is not the code a patch here was written for."""


def check_patched_source(name: str, function: Any) -> None:
    """Refuse (``hydra-unsupported``) unless ``function`` (Hydra's ``name``) has the
    source :data:`PATCHED_SOURCES` records for it."""
    import hydra

    try:
        digest = hashlib.sha256(inspect.getsource(function).encode()).hexdigest()
    except (OSError, TypeError):  # no source file to read (a build without .py files)
        digest = "unreadable"
    if digest != PATCHED_SOURCES[name]:
        raise HydraMismatchError(
            "hydra-unsupported",
            f"{name} of hydra-core {hydra.__version__} is not the code xaytune patches "
            f"(source sha256 {digest[:16]}, expected {PATCHED_SOURCES[name][:16]}); "
            "install hydra-core 1.3 (pyproject.toml: hydra-core>=1.3.2,<1.4)",
        )


def share_config_store() -> None:
    """Make Hydra's ``CachingConfigRepository`` share the ConfigStore (idempotent).

    Raises :class:`HydraMismatchError` when ``CachingConfigRepository.__init__`` is not
    Hydra 1.3's.
    """
    from hydra._internal.config_repository import CachingConfigRepository
    from hydra.core.config_store import ConfigStore

    if getattr(CachingConfigRepository.__init__, "_xaytune_shares_store", False):
        return
    check_patched_source(
        "hydra._internal.config_repository.CachingConfigRepository.__init__",
        CachingConfigRepository.__init__,
    )

    def __init__(self, delegate) -> None:  # replaces Hydra 1.3.x CachingConfigRepository.__init__
        store = ConfigStore.instance()
        self.delegate = copy.deepcopy(delegate, {id(store): store})
        self.cache = {}

    __init__._xaytune_shares_store = True  # type: ignore[attr-defined]
    __init__._xaytune_original = CachingConfigRepository.__init__  # type: ignore[attr-defined]
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
    composing. Otherwise Hydra composes as before. Raises :class:`HydraMismatchError`
    when ``Hydra.get_mode`` is not Hydra 1.3's.
    """
    from hydra._internal.hydra import Hydra

    if getattr(Hydra.get_mode, "_xaytune_composes_once", False):
        return
    check_patched_source("hydra._internal.hydra.Hydra.get_mode", Hydra.get_mode)
    composed_get_mode = Hydra.get_mode

    def get_mode(self, config_name, overrides):  # replaces Hydra 1.3.x Hydra.get_mode
        if _mode_is_unset(self, overrides):
            return None
        return composed_get_mode(self, config_name, overrides)

    get_mode._xaytune_composes_once = True  # type: ignore[attr-defined]
    get_mode._xaytune_original = composed_get_mode  # type: ignore[attr-defined]
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
