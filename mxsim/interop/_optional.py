"""Lazy imports of the optional interop dependencies (ml_dtypes, torch, torchao)."""

from __future__ import annotations

import importlib

__all__ = ["require"]


def require(module: str, function: str, package: str | None = None):
    """Import ``module`` for the mxsim function ``function``, or raise ModuleNotFoundError naming
    the package and the pip command. ``package``: the pip name (default: the top-level module)."""
    package = package or module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"mxsim.interop.{function} needs the optional package {package!r}, which could not be imported "
            f"({exc}); install it with: pip install {package}",
            name=package,
        ) from exc
