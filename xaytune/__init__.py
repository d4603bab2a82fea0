"""xaytune: honest, local evaluation of LLM agent harnesses on pinned benchmarks."""

__all__ = ["__version__"]

__version__ = "0.1.0"
