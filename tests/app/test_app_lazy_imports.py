"""What a command loads is what its step needs (issue 22, "a fast first run").

``--help`` composes the config and lists the config groups: it needs Hydra, never the
statistics (scipy), the plots (matplotlib), the HTTP clients (httpx, aiohttp), the reports
(jinja2, rich) or the config schema with the harness and model stack behind it.
Checking a config needs the schema, not scipy, matplotlib or httpx. The comparison
and report modules load scipy and matplotlib only when they compute or draw. Each
check runs in a fresh interpreter and reads its ``sys.modules``: a module-level import
added to the wrong place fails here, whatever the machine's speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# Loaded by a run when it compares, draws, reports or calls an HTTP model; never by a
# command that only composes or checks a config.
STATISTICS_AND_PLOTS = ("scipy", "matplotlib", "httpx", "aiohttp")
# --help answers from Hydra alone.
NOT_FOR_HELP = (
    *STATISTICS_AND_PLOTS,
    "numpy",
    "jinja2",
    "rich",
    "pydantic",
    "xaytune.experiment.config",
    "xaytune.harness",
    "xaytune.models",
    "xaytune.core.harness_comparison",
)

# Runs ``python -m xaytune <argv>`` as runpy does for ``-m``, then writes the names
# of the loaded modules to the file named by the first argument.
_CLI = """
import json, runpy, sys
record, argv = sys.argv[1], sys.argv[2:]
sys.argv = ["xaytune", *argv]
try:
    runpy.run_module("xaytune", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code or 0
else:
    code = 0
with open(record, "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

# Composes the quickstart, validates it and runs every pre-run check, as the task
# function does before any model call.
_CHECK_CONFIG = """
import json, sys
from hydra import compose, initialize_config_module
from xaytune.app.composition import register_resolvers
from xaytune.app.main import resolve_config
from xaytune.experiment.parts import preflight

register_resolvers()
with initialize_config_module("xaytune.conf", version_base="1.3"):
    raw = compose("config", overrides=["+experiment=quickstart"])
cfg, _ = resolve_config(raw)
preflight(cfg)
print(json.dumps(sorted(sys.modules)))
"""

_IMPORT_COMPARE_AND_REPORT = """
import json, sys
import xaytune.core.harness_comparison, xaytune.report, xaytune.experiment.tree.gather
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The names (packages or modules) of ``names`` that ``modules`` holds."""
    return [name for name in names if name in modules]


def _python(code: str, *args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout


def test_help_loads_neither_the_run_nor_the_config_schema(tmp_path, cli_env):
    record = tmp_path / "modules.json"
    out = _python(_CLI, str(record), "--help", cwd=tmp_path, env=cli_env)
    assert "experiment: " in out  # the config groups are listed
    facts = json.loads(record.read_text())
    assert facts["code"] == 0
    assert _loaded(facts["modules"], NOT_FOR_HELP) == []
    assert not (tmp_path / "experiments").exists()


def test_printing_the_composed_config_loads_no_statistics_or_plots(tmp_path, cli_env):
    record = tmp_path / "modules.json"
    out = _python(
        _CLI, str(record), "+experiment=quickstart", "--cfg", "job", cwd=tmp_path, env=cli_env
    )
    assert "name: quickstart" in out
    assert _loaded(json.loads(record.read_text())["modules"], NOT_FOR_HELP) == []


def test_checking_a_config_loads_no_statistics_plots_or_http_client(tmp_path, cli_env):
    modules = json.loads(_python(_CHECK_CONFIG, cwd=tmp_path, env=cli_env))
    assert "xaytune.experiment.config" in modules  # the schema did the checking
    assert _loaded(modules, STATISTICS_AND_PLOTS) == []


def test_comparison_and_report_modules_load_scipy_and_matplotlib_only_to_use_them(
    tmp_path, cli_env
):
    modules = json.loads(_python(_IMPORT_COMPARE_AND_REPORT, cwd=tmp_path, env=cli_env))
    assert _loaded(modules, ("scipy", "matplotlib")) == []


# _CLI on a machine with a core free (the plot worker is started: core_is_free).
_CLI_CORE_FREE = "import os; os.getloadavg = lambda: (0.0, 0.0, 0.0); os.cpu_count = lambda: 2\n"


def _quickstart_modules(tmp_path: Path, cli_env, prelude: str) -> list[str]:
    """The modules a quickstart run loaded (cache off), ``prelude`` run first; the run
    must succeed and draw its plots."""
    record = tmp_path / "modules.json"
    out_dir = tmp_path / "run"
    env = {**cli_env, "XAYTUNE_CACHE_MODE": "off"}
    _python(
        prelude + _CLI,
        str(record),
        "+experiment=quickstart",
        "progress=false",
        f"hydra.run.dir={out_dir}",
        cwd=tmp_path,
        env=env,
    )
    facts = json.loads(record.read_text())
    assert facts["code"] == 0
    assert (out_dir / "comparison" / "paired_differences.png").is_file()
    return facts["modules"]


def test_a_run_loads_the_statistics_but_not_scipy_stats_or_pyplot(tmp_path, cli_env):
    modules = _quickstart_modules(tmp_path, cli_env, _CLI_CORE_FREE)
    # Neither scipy nor matplotlib is loaded at all: the plot worker
    # (xaytune.report.plot_worker) imported them while the replicates ran, compared and
    # drew; nor is the HTTP client (the quickstart's models are simulated).
    assert _loaded(modules, ("scipy", "matplotlib", "httpx", "aiohttp")) == []


def test_a_run_without_a_worker_compares_in_its_own_process(tmp_path, cli_env):
    # No core free: no worker; the run's process imports what the comparison needs (the
    # quantiles and the power integrals), but not the distribution classes or pyplot.
    busy = "import os; os.getloadavg = lambda: (9.0, 9.0, 9.0)\n"
    modules = _quickstart_modules(tmp_path, cli_env, busy)
    assert _loaded(modules, ("scipy.special", "scipy.integrate")) == [
        "scipy.special",
        "scipy.integrate",
    ]
    assert _loaded(modules, ("scipy.stats", "matplotlib.pyplot", "httpx")) == []


def test_hydra_config_lookups_share_the_config_store():
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_store import ConfigStore

    from xaytune.app._hydra_repository import share_config_store

    share_config_store()
    share_config_store()  # idempotent
    repository = ConfigRepository(create_config_search_path("pkg://xaytune.conf"))
    copy = CachingConfigRepository(repository)
    assert copy.delegate is not repository
    assert copy.delegate.sources is not repository.sources  # still a copy to re-initialise
    # ... sharing the one ConfigStore instead of copying it.
    stores = [getattr(source, "store", None) for source in copy.delegate.sources]
    assert any(store is ConfigStore.instance() for store in stores)
    assert sorted(copy.get_group_options("experiment")) == sorted(
        repository.get_group_options("experiment")
    )


@pytest.mark.parametrize("replicates", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("ratio", [0.0, 1e-9, 0.5, 2.0, 2.9999, 7.5, 1e6])
def test_summary_p_value_is_scipy_stats_t_sf_bit_for_bit(replicates, ratio):
    # The summary across models reads t.sf from its ufunc instead of importing
    # scipy.stats: the same number.
    from scipy import stats as scipy_stats

    from xaytune.experiment.summary import _p_value

    for mean in (ratio, -ratio):
        expected = float(2 * scipy_stats.t.sf(abs(mean / 1.0), df=replicates - 1))
        assert _p_value(mean, 1.0, replicates) == expected


# Counts Hydra's compositions of the whole config in a ``python -m xaytune`` process.
_COUNT_COMPOSITIONS = """
import json, runpy, sys
from hydra._internal.hydra import Hydra
record, argv = sys.argv[1], sys.argv[2:]
composed = []
compose_config = Hydra.compose_config
def counted(self, *args, **kwargs):
    composed.append(str(kwargs.get("run_mode")))
    return compose_config(self, *args, **kwargs)
Hydra.compose_config = counted
sys.argv = ["xaytune", *argv]
try:
    runpy.run_module("xaytune", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code or 0
else:
    code = 0
with open(record, "w") as out:
    json.dump({"code": code, "composed": composed}, out)
"""


def test_a_run_composes_its_config_once(tmp_path, cli_env):
    # Hydra 1.3 composes the config once only to read hydra.mode, which nothing in the
    # packaged conf/ sets: compose_once answers None (unset) without that composition.
    from xaytune.app._hydra_repository import packaged_config_sets_mode

    assert packaged_config_sets_mode() is False
    record = tmp_path / "composed.json"
    out = _python(
        _COUNT_COMPOSITIONS,
        str(record),
        "+experiment=quickstart",
        "--dry-run",
        cwd=tmp_path,
        env=cli_env,
    )
    assert "dry run" in out
    facts = json.loads(record.read_text())
    assert facts == {"code": 0, "composed": ["RunMode.RUN"]}


def test_a_hydra_mode_override_is_still_read_by_composing(tmp_path, cli_env):
    # hydra.mode=MULTIRUN on the command line makes a sweep, exactly as without
    # compose_once: Hydra composes to read it, then runs the sweep's job.
    record = tmp_path / "composed.json"
    _python(
        _COUNT_COMPOSITIONS,
        str(record),
        "+experiment=quickstart",
        "hydra.mode=MULTIRUN",
        "seed=101",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        "--dry-run",
        cwd=tmp_path,
        env=cli_env,
    )
    facts = json.loads(record.read_text())
    assert facts["code"] == 0
    assert facts["composed"][0] == "RunMode.MULTIRUN"  # get_mode composed
    assert "RunMode.RUN" not in facts["composed"]  # ... and the run was a sweep


def test_packaged_config_setting_hydra_mode_is_found(tmp_path, monkeypatch):
    # A packaged config file that sets hydra.mode turns the shortcut off.
    import xaytune.conf
    from xaytune.app import _hydra_repository

    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "sweep.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\ncache:\n  mode: off\n"
    )
    monkeypatch.setattr(xaytune.conf, "__file__", str(conf / "__init__.py"))
    assert _hydra_repository.packaged_config_sets_mode() is True
    (conf / "experiment" / "sweep.yaml").write_text("hydra:\n  job:\n    chdir: false\n")
    assert _hydra_repository.packaged_config_sets_mode() is False


_IMPORT_PLOT_WORKER = """
import json, sys
import xaytune.report.plot_worker
print(json.dumps(sorted(sys.modules)))
"""


def test_the_plot_worker_module_loads_neither_the_pages_nor_the_comparison(tmp_path, cli_env):
    # The verify command starts the worker before its other imports: importing the
    # worker's module must not pull in xaytune.report's pages (the package resolves its
    # names on first use).
    modules = json.loads(_python(_IMPORT_PLOT_WORKER, cwd=tmp_path, env=cli_env))
    assert "xaytune.report.plot_worker" in modules
    assert _loaded(modules, ("xaytune.comparison.compare", "xaytune.report._page", "jinja2")) == []


_VERIFY = """
import json, sys
from xaytune.report import plot_worker
if sys.argv[2:] == ["helper"]:  # a core free, whatever the load
    plot_worker.core_is_free = lambda: True
from xaytune.verify import main
code = main([sys.argv[1]])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_verifying_an_unsigned_tree_without_trust_loads_no_cryptography(
    tmp_path, cli_env, quickstart
):
    facts = json.loads(
        _python(_VERIFY, str(quickstart.out), cwd=tmp_path, env=cli_env).splitlines()[-1]
    )
    assert facts["code"] == 0
    assert "xaytune.release.signing" in facts["modules"]  # it asked whether the tree is signed
    assert _loaded(facts["modules"], ("cryptography",)) == []


def test_an_audit_whose_helper_renders_the_pages_loads_no_jinja2(tmp_path, cli_env, quickstart):
    out = _python(_VERIFY, str(quickstart.out), "helper", cwd=tmp_path, env=cli_env)
    facts = json.loads(out.splitlines()[-1])
    assert facts["code"] == 0
    assert "xaytune.report._files" in facts["modules"]  # the pages were checked
    assert _loaded(facts["modules"], ("jinja2", "scipy")) == []


def test_every_public_report_name_is_its_module_s_object():
    import importlib

    import xaytune.report as report

    for name in report.__all__:
        home = importlib.import_module(f"xaytune.report.{report._HOME[name]}")
        assert getattr(report, name) is getattr(home, name), name
    with pytest.raises(AttributeError):
        report.no_such_name  # noqa: B018
