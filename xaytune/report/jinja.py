"""The one Jinja2 environment of the report room: templates in ``templates/``,
autoescaped (every value from a run is text, never markup), strict about undefined
names (a typo in a template fails, never renders empty). jinja2 is imported with the
environment: an audit whose reports its helper process renders never imports it."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

__all__ = ["prepare", "render"]


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("xaytune.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def prepare(template: str) -> None:
    """Compile ``template`` now (~40 ms for report.html.j2) and keep it for
    :func:`render`: a run does it while its plots are drawn in the other process."""
    _environment().get_template(template)


def render(template: str, **context: object) -> str:
    """``template`` (a file in ``templates/``) rendered with ``context``."""
    return _environment().get_template(template).render(**context)
