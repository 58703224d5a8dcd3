"""Modules imported when first used, not when their importer is (issue 29).

numpy takes a quarter to half a second to import, and most processes that import the
search and embeddings code never rank or embed anything (a CLI command, a pod that serves
only writes). `from strongroom.lazy import numpy as np` gives a stand-in that imports numpy
at the first attribute read and keeps each attribute it read, so later reads cost what a
module's do. The import system's own lock makes the first read safe from any thread.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for the module `name`; imports it when an attribute is first read."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_module_name"] = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(importlib.import_module(self._lazy_module_name), attribute)
        self.__dict__[attribute] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_module_name!r}>"


numpy: Any = LazyModule("numpy")
