"""An experiment without Hydra: config schema, parts and preflight, cost, the replicate
pipeline and the run tree (:mod:`xaytune.experiment.tree`).

Low to high (each module imports only those before it, and the run tree's):
``config`` (the schema), ``source`` (the suite), ``model_adapters`` (the model, through
the plugin registry), ``objectives``, ``cost``, ``evaluators``, ``parts`` (parts and
preflight), ``attempt_errors``, ``preflight`` (the endpoints), ``facets``, ``stops``,
``replicate`` (one replicate as named stages: prepare, reuse-or-run, assemble and
publish, evaluate, record), then what gathers and reports a run.
"""
