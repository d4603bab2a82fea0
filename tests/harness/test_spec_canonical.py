"""A spec's canonical bytes with its harness spliced in (``_spec_canonical``) are the
canonical bytes of its whole dump, encoded by ``rfc8785`` itself (the independent
encoder): for any prompts, content, config and harness, the hole's own spelling
included."""

from __future__ import annotations

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import fingerprint
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
)
from xaytune.harness.spec import _HARNESS_HOLE, _spec_canonical

# Text that canonical JSON escapes (controls, quotes, backslashes, non-BMP) and the
# splice's own hole, whole or in part.
TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from([_HARNESS_HOLE, _HARNESS_HOLE[1:-1], f'"{_HARNESS_HOLE}"', "\\u0000"]),
)


def _whole(spec: AgentExecutionSpec) -> bytes:
    dump = spec.model_dump(mode="json", by_alias=True, exclude={"output_uri", "fingerprint"})
    return rfc8785.dumps(dump)


def _spec(system: str, user: str, persona: str, name: str, extra: dict) -> AgentExecutionSpec:
    harness = Harness(
        name=name or "h",
        system_prompt=system.replace("{", "{{").replace("}", "}}") + " {content.persona}",
        user_prompt=user.replace("{", "{{").replace("}", "}}"),
        tools=(),
        max_turns=3,
    )
    context = HarnessCompilationContext(
        seed=7,
        replicate=0,
        authorized_tools=frozenset(),
        content=HarnessContent(blobs={"persona": persona}),
    )
    spec = HarnessCompiler().compile(harness, context)
    if extra:  # config values of any text (a task's input is data of the task's)
        spec = AgentExecutionSpec(
            **{**spec.model_dump(by_alias=True, exclude={"fingerprint"}), "config": extra}
        )
    return spec


@settings(max_examples=150, deadline=None)
@given(
    system=TEXT,
    user=TEXT,
    persona=TEXT,
    name=st.sampled_from(["h", "calc"]),
    extra=st.dictionaries(TEXT, TEXT, max_size=3),
)
def test_the_spliced_bytes_are_the_whole_dumps_canonical_bytes(system, user, persona, name, extra):
    spec = _spec(system, user, persona, name, extra)
    assert _spec_canonical(spec) == _whole(spec)
    assert spec.canonical == _whole(spec)
    assert spec.fingerprint == fingerprint(
        spec.model_dump(mode="json", by_alias=True, exclude={"output_uri", "fingerprint"})
    )


def test_a_field_spelling_the_hole_falls_back_to_the_whole_encoding():
    spec = _spec("s", "u", "p", "h", {_HARNESS_HOLE: _HARNESS_HOLE})
    assert _spec_canonical(spec) == _whole(spec)
    assert _spec_canonical(spec).count(rfc8785.dumps(_HARNESS_HOLE)) == 2
