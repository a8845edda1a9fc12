"""The package version, in a module of its own so that any layer can read it without importing
the package's __init__ (and so everything above it)."""

__version__ = "0.1.0"
