"""The package version, in a module of its own so that anything may read it without importing the package."""
__version__ = "0.1.0"
