"""Resolving a harness's parts (tools, loop) before anything runs.

:func:`resolve_harness` imports, instantiates and checks every part a harness names
(schemas, parameters, name collisions) and returns the harness with ``parts``: the
code identity of each, which its fingerprint then covers. :func:`shared_toolbox`
puts the tools of several harnesses into one toolbox, so that the toolbox facet (C4)
is the same for every candidate of an experiment while each candidate is granted
only its own tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xaytune.core.errors import ExecutionError, XaytuneError
from xaytune.harness.loops import ResolvedLoop, resolve_loop
from xaytune.harness.spec import Harness
from xaytune.harness.toolbox import Tool, Toolbox, as_tool
from xaytune.plugins import PartRef, lookup, part_ref

__all__ = ["ResolvedHarness", "check_parts", "resolve_harness", "shared_toolbox"]


@dataclass(frozen=True)
class ResolvedHarness:
    """A harness whose parts are resolved: ``harness.parts`` is filled in."""

    harness: Harness
    tools: tuple[Tool, ...]
    loop: ResolvedLoop


def resolve_harness(harness: Harness, *, where: str | None = None) -> ResolvedHarness:
    """``harness`` with the code identity of every part; refusals name ``where``'s key.

    Refusals: the registry's (``unknown-part``, ``import-failed``), a part that is not
    a tool or loop or whose params do not fit (``bad-part``, ``bad-part-params``), two
    tools with one name (``duplicate-tool``), a tool schema outside the supported
    subset (``unsupported-schema``), a tool without readable source (``no-source``).
    """
    where = where or f"harness {harness.name}"
    tools: list[Tool] = []
    for index, declared in enumerate(harness.tools):
        key = f"{where}.tools[{index}]"
        ref = part_ref(declared)
        _, target = lookup("tool", ref.ref, where=key)
        tools.append(as_tool(target, ref.params or None, where=key))
    try:
        toolbox = Toolbox(tools)
    except XaytuneError as error:
        raise _named(error, f"{where}.tools") from None
    names = tuple(tool.name for tool in tools)
    loop = resolve_loop(harness.loop, where=f"{where}.loop")
    plain = harness.model_dump(mode="json")
    plain["parts"] = [
        identity.model_dump(mode="json") for identity in (*toolbox.identities(names), loop.identity)
    ]
    return ResolvedHarness(harness=Harness.model_validate(plain), tools=tuple(tools), loop=loop)


def shared_toolbox(resolved: Iterable[ResolvedHarness]) -> Toolbox:
    """One toolbox with every tool of ``resolved``; one name for two different tools
    (by code identity) is refused (``duplicate-tool``)."""
    chosen: dict[str, tuple[Tool, str, PartRef]] = {}
    for item in resolved:
        identities = {part.name: part for part in item.harness.parts if part.kind == "tool"}
        for tool, declared in zip(item.tools, item.harness.tools, strict=True):
            ref = part_ref(declared)
            held = chosen.get(tool.name)
            if held is None:
                chosen[tool.name] = (tool, item.harness.name, ref)
                continue
            mine = identities[tool.name]
            theirs = Toolbox((held[0],)).identities((tool.name,))[0]
            # The same code built with other params is another tool: one instance per
            # name can serve only one of them.
            if (
                mine != theirs
                or ref.params != held[2].params
                or Toolbox((tool,)).version != Toolbox((held[0],)).version
            ):
                raise ExecutionError(
                    "duplicate-tool",
                    f"tool {tool.name!r} of harness {item.harness.name} is not the tool of that "
                    f"name in harness {held[1]}: give one of them another name",
                )
    return Toolbox(tool for tool, _, _ in chosen.values())


def check_parts(
    harness: Harness, toolbox: Toolbox, loop: ResolvedLoop, names: Sequence[str]
) -> None:
    """Refuse (``code-mismatch``) a run whose parts are not the ones ``harness`` pins."""
    if not harness.parts:
        return
    pinned = {(part.kind, part.name): part for part in harness.parts}
    for identity in (*toolbox.identities(names), loop.identity):
        expected = pinned.get((identity.kind, identity.name))
        if expected != identity:
            raise ExecutionError(
                "code-mismatch",
                f"harness {harness.name}: {identity.kind} {identity.name!r} is not the code the "
                f"harness pins ({_digest(expected)} pinned, {identity.source_sha256} here)",
            )


def _digest(identity: object) -> str:
    return getattr(identity, "source_sha256", "nothing")


def _named(error: XaytuneError, key: str) -> XaytuneError:
    message = str(error).removeprefix(f"{error.reason}: ")
    return type(error)(error.reason, f"{key}: {message}")
