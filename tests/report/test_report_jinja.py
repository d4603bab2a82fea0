"""The report room's Jinja2 environment (xaytune.report.jinja): a template compiled ahead
(``prepare``, which a run calls while its plots are drawn) is the one rendered."""

from __future__ import annotations

import jinja2
import pytest

from xaytune.report import jinja


def test_a_prepared_template_is_compiled_once_and_rendered_from_then_on(monkeypatch):
    jinja._environment.cache_clear()
    compiled = []
    real = jinja2.Environment.compile

    def compile_(self, source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", compile_)
    try:
        jinja.prepare("report.html.j2")
        assert compiled == ["report.html.j2"]
        template = jinja._environment().get_template("report.html.j2")
        assert compiled == ["report.html.j2"]  # kept, not compiled again
        assert template is jinja._environment().get_template("report.html.j2")
    finally:
        jinja._environment.cache_clear()


def test_preparing_a_missing_template_fails_loudly():
    with pytest.raises(jinja2.TemplateNotFound):
        jinja.prepare("no-such-template.j2")
