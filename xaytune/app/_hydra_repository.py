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
"""

from __future__ import annotations

import copy

__all__ = ["share_config_store"]


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
