"""Names of a package loaded on first use (PEP 562), so that importing the package costs only
what its caller uses: ``__getattr__, __dir__ = lazy_names(__name__, where)`` in its
``__init__.py``, ``where`` mapping each exported name to the module that defines it (absolute,
or relative to the package when it starts with ``_``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(
    package: str, where: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` (imports the defining module, then keeps the name as a
    plain attribute) and ``__dir__``; an unknown name is an AttributeError, as for any module."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module.startswith("_"):
            module = f"{package}.{module}"
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
