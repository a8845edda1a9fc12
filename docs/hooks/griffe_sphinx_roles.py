"""Griffe extension for the API pages: mxsim's docstrings use Sphinx roles (:func:`encode`),
which Markdown would print literally; show the target as inline code instead."""

from __future__ import annotations

import re

from griffe import Extension

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const|paramref):`~?\.?([^`]+)`")


def _convert(obj) -> None:
    if obj.docstring is not None:
        obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)


class SphinxRoles(Extension):
    def on_object(self, *, obj, **kwargs) -> None:
        _convert(obj)

    def on_package(self, *, pkg, **kwargs) -> None:  # the top-level package is not a member
        _convert(pkg)
