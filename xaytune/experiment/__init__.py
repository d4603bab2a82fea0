"""An experiment without Hydra: config schema, parts and preflight, cost, the replicate
pipeline and the run tree (:mod:`xaytune.experiment.tree`)."""
