"""The Hydra app: configs -> replicate runs -> evaluations -> comparison report."""

__all__: list[str] = []
