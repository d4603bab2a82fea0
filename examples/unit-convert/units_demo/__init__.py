"""units_demo: the parts of the unit-convert example (a user project, not xaytune).

- :func:`units_demo.tools.convert`: a unit-converter tool (a typed function);
- :func:`units_demo.scorers.within_percent`: a scorer (numeric within a relative
  tolerance, reading a number followed by a unit);
- :class:`units_demo.model.UnitsModel`: a deterministic model adapter that plays the
  unit tasks (a simulator, not a language model).

Config names them by dotted path (``units_demo.tools.convert``); they are importable
because ``python -m xaytune`` is run from the example's directory.
"""
