"""One replicate of the quickstart's candidate ``a`` run in process with the evidence
cache on: what the cache tests run twice to see the second reuse the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xaytune.experiment import replicate as experiment
from xaytune.experiment.config import CacheConfig, validate_config
from xaytune.experiment.parts import experiment_toolbox, resolve_candidates
from xaytune.experiment.source import load_source
from xaytune.experiment.tree.intent import intent_of, write_intent
from xaytune.experiment.tree.manifest import what_is_run

SEED = 101
# Candidate a of the quickstart is the calculator harness.
REPLICATE = Path("candidates") / "calculator" / f"seed-{SEED}"


def cache_config(quickstart: Any, cache_dir: Path) -> tuple[Any, dict[str, Any]]:
    """(the quickstart's config with a read-write cache in ``cache_dir``, its plain dict)."""
    plain = quickstart.manifest()["config"]
    cfg = resolve_candidates(validate_config(plain)).model_copy(
        update={"cache": CacheConfig(dir=str(cache_dir), mode="read-write")}
    )
    return cfg, plain


def fresh_intent(cfg: Any, plain: dict[str, Any], out: Path) -> str:
    """Make the run directory ``out`` and write its intent; the intent's digest."""
    out.mkdir()
    return write_intent(out, intent_of(cfg, what_is_run(plain), load_source(cfg)), resume=False)


def run_replicate_a(cfg: Any, plain: dict[str, Any], out: Path) -> Any:
    """Candidate a, seed SEED, run (or reused from the cache) into the new run ``out``."""
    return experiment.run_replicate(
        cfg, label="a", seed=SEED, out=out, toolbox=experiment_toolbox(cfg),
        intent=fresh_intent(cfg, plain, out),
    )  # fmt: skip


def prepared_after_a_run(quickstart: Any, tmp_path: Path) -> Any:
    """The replicate prepared (not run) in ``tmp_path/second`` after candidate a ran
    once into ``tmp_path/first`` with the cache on (its entry stored); its ``cfg`` is
    the config both use."""
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    run_replicate_a(cfg, plain, tmp_path / "first")
    out = tmp_path / "second"
    prepared = experiment.prepare_replicate(
        cfg, label="a", seed=SEED, out=out, intent=fresh_intent(cfg, plain, out)
    )
    return prepared
