"""The registry and code identity: names, paths, entry points, source digests."""

from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from xaytune.core.errors import PluginError
from xaytune.harness import Harness
from xaytune.harness.parts import resolve_harness, shared_toolbox
from xaytune.plugins import (
    BUILTINS,
    PartRef,
    code_identity,
    import_target,
    lookup,
    register,
    tool,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path for modules a test writes (no bytecode left behind)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return tmp_path


def write_module(directory: Path, name: str, source: str) -> types.ModuleType:
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)


def test_part_refs_read_strings_target_and_name_mappings() -> None:
    assert PartRef.model_validate("calculator") == PartRef(ref="calculator")
    assert PartRef.model_validate({"_target_": "a.b", "k": 1}) == PartRef(
        ref="a.b", params={"k": 1}
    )
    assert PartRef.model_validate(
        {"name": "self-check", "params": {"check_prompt": "x"}}
    ) == PartRef(ref="self-check", params={"check_prompt": "x"})
    with pytest.raises(ValueError):
        PartRef.model_validate({"_target_": " "})


def test_every_builtin_name_resolves() -> None:
    for kind, names in BUILTINS.items():
        for name in names:
            assert lookup(kind, name, where="t")[0] == name


def test_lookup_refusals_name_the_key() -> None:
    with pytest.raises(PluginError) as caught:
        lookup("tool", "no-such-tool", where="candidates.a.tools[0]")
    assert caught.value.reason == "unknown-part"
    assert "candidates.a.tools[0]" in str(caught.value) and "calculator" in str(caught.value)
    with pytest.raises(PluginError) as caught:
        import_target("xaytune.harness.toolbox:NoSuchThing", where="k")
    assert caught.value.reason == "unknown-part"


def test_a_module_that_raises_on_import_is_import_failed(module_dir: Path) -> None:
    (module_dir / "raises_on_import.py").write_text("import json\nVALUE = json.loads('{')\n")
    with pytest.raises(PluginError) as caught:
        lookup("tool", "raises_on_import.VALUE", where="candidates.b.tools[1]")
    assert caught.value.reason == "import-failed"
    assert "JSONDecodeError" in str(caught.value) and "\n" not in str(caught.value)
    # A missing module *inside* the user's module is its import failing, not an unknown path.
    (module_dir / "needs_missing.py").write_text("import no_such_dependency_xyz\nX = 1\n")
    with pytest.raises(PluginError) as caught:
        import_target("needs_missing.X", where="k")
    assert caught.value.reason == "import-failed" and "no_such_dependency_xyz" in str(caught.value)


def test_colon_and_dotted_paths_find_the_same_object() -> None:
    by_dots = import_target("xaytune.harness.loops.tool_loop", where="k")
    by_colon = import_target("xaytune.harness.loops:tool_loop", where="k")
    assert by_dots is by_colon


def test_registering_a_second_object_under_a_name_is_refused() -> None:
    @tool(name="reg-test-unique", version="3")
    def first(x: int) -> str:
        return str(x)

    assert lookup("tool", "reg-test-unique", where="k") == ("reg-test-unique", first)
    assert first.__xaytune_version__ == "3"
    register("tool", "reg-test-unique", first)  # the same object again: harmless

    def second(x: int) -> str:
        return str(x)

    with pytest.raises(PluginError) as caught:
        register("tool", "reg-test-unique", second)
    assert caught.value.reason == "duplicate-part"
    with pytest.raises(PluginError) as caught:
        register("loop", "self-check", second)
    assert caught.value.reason == "duplicate-part"


def test_entry_points_of_installed_packages_register_names(module_dir: Path) -> None:
    write_module(module_dir, "ep_tools", "def ep_echo(text: str) -> str:\n    return text\n")
    dist = module_dir / "ep_tools_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-tools-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[xaytune.tools]\nep_echo = ep_tools:ep_echo\n")
    name, target = lookup("tool", "ep_echo", where="k")
    assert name == "ep_echo" and target.__module__ == "ep_tools"


def test_identity_is_the_sha256_of_the_module_source_with_lf_endings(module_dir: Path) -> None:
    source = "def f(x: int) -> str:\r\n    return str(x)\r\n"
    (module_dir / "crlf_tool.py").write_bytes(source.encode())
    module = importlib.import_module("crlf_tool")
    identity = code_identity("tool", "f", module.f)
    expected = hashlib.sha256(source.replace("\r\n", "\n").encode()).hexdigest()
    assert identity.source_sha256 == f"sha256:{expected}"
    assert (identity.target, identity.version) == ("crlf_tool.f", "0")


def test_code_without_a_source_file_cannot_be_identified() -> None:
    module = types.ModuleType("in_memory_parts")
    exec("def f(x: int) -> str:\n    return str(x)\n", module.__dict__)
    with pytest.raises(PluginError) as caught:
        code_identity("tool", "f", module.f)
    assert caught.value.reason == "no-source"


def test_changing_a_user_tool_changes_the_harness_fingerprint(module_dir: Path) -> None:
    body = (
        'def convert(value: float) -> str:\n    """Metres to feet."""\n'
        "    return str(value * {k})\n"
    )
    write_module(module_dir, "user_convert", body.format(k=3.28084))
    harness = Harness(name="h", system_prompt="s", tools=("user_convert.convert",))
    before = resolve_harness(harness).harness
    write_module(module_dir, "user_convert", body.format(k=3.281))
    after = resolve_harness(harness).harness
    assert before.tool_names == after.tool_names == ("convert",)
    assert before.fingerprint != after.fingerprint
    assert (
        harness.fingerprint
        == Harness(name="h", system_prompt="s", tools=("user_convert.convert",)).fingerprint
    )


def test_two_different_tools_of_one_name_cannot_share_a_toolbox(module_dir: Path) -> None:
    write_module(module_dir, "tools_one", "def lookup(key: str) -> str:\n    return 'one'\n")
    write_module(module_dir, "tools_two", "def lookup(key: str) -> str:\n    return 'two'\n")
    a = resolve_harness(Harness(name="a", system_prompt="s", tools=("tools_one.lookup",)))
    b = resolve_harness(Harness(name="b", system_prompt="s", tools=("tools_two.lookup",)))
    with pytest.raises(Exception) as caught:
        shared_toolbox([a, b])
    assert getattr(caught.value, "reason", None) == "duplicate-tool"
    same = resolve_harness(Harness(name="c", system_prompt="s", tools=("tools_one.lookup",)))
    assert shared_toolbox([a, same]).names == frozenset({"lookup"})


def test_the_layers_point_one_way() -> None:
    """core imports nothing above it; plugins only core; nothing below app imports it
    (checked in a fresh interpreter, by what each import loads)."""
    probe = textwrap.dedent(
        """
        import sys
        import {module}
        loaded = sorted(m for m in sys.modules if m.startswith("xaytune."))
        print("\\n".join(loaded))
        """
    )
    rules = {
        "xaytune.core.harness_comparison": ("xaytune.plugins", "xaytune.harness", "xaytune.app"),
        "xaytune.plugins": (
            "xaytune.harness",
            "xaytune.evaluation",
            "xaytune.app",
            "xaytune.models",
        ),
        "xaytune.harness.parts": ("xaytune.evaluation", "xaytune.app"),
        "xaytune.evaluation.scorers": ("xaytune.app", "hydra"),
    }
    for module, forbidden in rules.items():
        done = subprocess.run(
            [sys.executable, "-c", probe.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        loaded = done.stdout.split()
        bad = [name for name in loaded if name.startswith(forbidden)]
        assert bad == [], f"{module} loads {bad}"


# -- found in review -------------------------------------------------------------------


def test_wrapped_and_partial_callables_are_identified_by_the_code_they_run(module_dir: Path):
    source = (
        "import functools\n"
        "@functools.lru_cache\n"
        "def close(answer: str, reference: str) -> bool:\n    return answer == reference\n"
        "plain = functools.partial(close)\n"
        "bound = functools.partial(close, 'x')\n"
    )
    module = write_module(module_dir, "wrapped_parts", source)
    expected = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    for obj in (module.close, module.plain):
        identity = code_identity("scorer", "close", obj)
        assert identity.target == "wrapped_parts.close" and identity.source_sha256 == expected
    with pytest.raises(PluginError) as caught:
        code_identity("scorer", "close", module.bound)
    assert caught.value.reason == "bad-part"


def test_a_version_that_is_not_a_declared_string_is_not_read(module_dir: Path) -> None:
    module = write_module(
        module_dir,
        "versioned_parts",
        "class Scorer:\n    @property\n    def version(self):\n        return '2'\n"
        "    def score(self, answer, reference):\n        return True\n",
    )
    assert code_identity("scorer", "s", module.Scorer).version == "0"  # not '<property ...>'


def test_one_entry_point_name_from_two_packages_is_refused(module_dir: Path) -> None:
    write_module(module_dir, "ep_one", "def same(text: str) -> str:\n    return '1'\n")
    write_module(module_dir, "ep_two", "def same(text: str) -> str:\n    return '2'\n")
    for package, module in (("pkg_one", "ep_one"), ("pkg_two", "ep_two")):
        dist = module_dir / f"{package}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(f"[xaytune.tools]\nep_same = {module}:same\n")
    with pytest.raises(PluginError) as caught:
        lookup("tool", "ep_same", where="candidates.a.tools[0]")
    assert caught.value.reason == "duplicate-part" and "ep_one:same" in str(caught.value)


def test_one_tool_class_with_other_params_in_two_candidates_is_refused(module_dir: Path):
    write_module(
        module_dir,
        "scaled_tools",
        "class Scale:\n    name = 'scale'\n    description = 'Scales x.'\n    version = '1'\n"
        "    def __init__(self, factor: int) -> None:\n        self.factor = factor\n"
        "        self.parameters = {'type': 'object', 'properties': {'x': {'type': 'integer'}}}\n"
        "    def invoke(self, arguments):\n        return str(arguments['x'] * self.factor)\n",
    )

    def harness(name: str, factor: int) -> Harness:
        tools = ({"_target_": "scaled_tools.Scale", "factor": factor},)
        return Harness(name=name, system_prompt="s", tools=tools)

    a = resolve_harness(harness("a", 2))
    with pytest.raises(Exception) as caught:
        shared_toolbox([a, resolve_harness(harness("b", 3))])
    assert getattr(caught.value, "reason", None) == "duplicate-tool"
    assert shared_toolbox([a, resolve_harness(harness("c", 2))]).names == frozenset({"scale"})


def test_a_part_naming_its_other_modules_changes_with_them(module_dir: Path) -> None:
    write_module(module_dir, "helper_math", "def double(x):\n    return 2 * x\n")
    module = write_module(
        module_dir,
        "tool_with_helper",
        "import helper_math\n\nclass Doubler:\n    __xaytune_sources__ = ('helper_math',)\n",
    )
    before = code_identity("tool", "doubler", module.Doubler)
    write_module(module_dir, "helper_math", "def double(x):\n    return x + x + 0\n")
    after = code_identity("tool", "doubler", module.Doubler)
    assert before.target == after.target and before.source_sha256 != after.source_sha256


def test_the_calculator_identity_covers_its_arithmetic_module() -> None:
    from xaytune.harness import _calculator, toolbox

    identity = toolbox.Toolbox.default().identities(["calculator"])[0]
    parts = [
        "sha256:" + hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest()
        for m in (toolbox, _calculator)
    ]
    assert (
        identity.source_sha256 == "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    )


# -- built-ins register through the same decorators (issue 28) --------------------------


def test_a_builtin_name_is_taken_only_by_the_builtin_itself() -> None:
    from xaytune.harness import loops

    # Same function name and code as the built-in, but defined here: not the built-in.
    impostor = types.FunctionType(loops.tool_loop.__code__, globals(), "tool_loop")
    with pytest.raises(PluginError) as caught:
        register("loop", "tool-loop", impostor)
    assert caught.value.reason == "duplicate-part"
    assert lookup("loop", "tool-loop", where="k") == ("tool-loop", loops.tool_loop)
    assert loops.tool_loop.__xaytune_part__ == ("loop", "tool-loop")


def test_a_builtin_module_imported_again_registers_its_new_object() -> None:
    """A re-imported built-in (``importlib.reload``, a test that pops modules) gives new
    objects: the index names the module, so the new object takes the name."""
    from xaytune.evaluation.scorers import includes

    again = types.FunctionType(includes.__code__, includes.__globals__, "includes")
    assert again.__module__ == "xaytune.evaluation.scorers._includes"
    try:
        assert register("scorer", "includes", again) is again
        assert lookup("scorer", "includes", where="k")[1] is again
    finally:
        register("scorer", "includes", includes)
    assert lookup("scorer", "includes", where="k")[1] is includes


def test_every_config_model_kind_is_a_builtin_model_name() -> None:
    """R6 builds the configured model by ``lookup("model", kind)``; the HTTP adapters'
    modules are imported only when their name is looked up."""
    from typing import get_args

    from xaytune.experiment.config import ModelConfig

    kinds = set()
    for member in get_args(get_args(ModelConfig)[0]):  # Annotated[Union[Annotated[...]]]
        field = get_args(member)[0].model_fields.get("kind")
        if field is not None:  # the _target_ config has no kind
            kinds.update(get_args(field.annotation))
    assert kinds == {"simulated", "openai_compatible", "anthropic", "llama_cpp_local"}
    assert kinds <= set(BUILTINS["model"])
    probe = (
        "import sys\nfrom xaytune.plugins import lookup\n"
        "lookup('model', 'simulated', where='k')\nprint('aiohttp' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout.strip() == "False"
