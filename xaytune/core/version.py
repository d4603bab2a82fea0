"""The package version, importable from every room (the package itself is a facade)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
