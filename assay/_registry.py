"""One registry helper for every plug-in kind (reliability tests, scoring kinds, judge kinds):
a name → class table filled by a decorator, whose built-in members live one per file in a
package and are imported the first time a name is looked up.

A plug-in from outside the package registers itself the same way (importing its file runs the
decorator); the registry never needs to know about it beforehand.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from assay.errors import ConfigError

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes registered by name. ``what`` names the kind in errors ("reliability test");
    ``package`` holds the built-in members, one public module each (modules starting with ``_``
    are helpers); ``unknown`` is the error for a name nobody registered (``{name}``, ``{known}``)."""

    def __init__(self, what: str, package: str, *, unknown: str | None = None) -> None:
        self.what = what
        self.package = package
        self.unknown = unknown or f"unknown {what} '{{name}}'; known: {{known}}"
        self._classes: dict[str, T] = {}
        self._loaded = False
        self._lock = threading.RLock()

    def register(self, name: str) -> Callable[[T], T]:
        """The decorator: register a class under ``name`` (and set its ``name``)."""

        def register(cls: T) -> T:
            old = self._classes.get(name)
            if old is not None and old is not cls and _origin(old) != _origin(cls):
                raise ValueError(f"{self.what} {name!r} is already registered")
            cls.name = name  # type: ignore[attr-defined]
            self._classes[name] = cls
            return cls

        return register

    def get(self, name: str) -> T:
        """The class registered as ``name`` (a built-in one is imported on first use); a
        :class:`ConfigError` naming the known ones when there is none."""
        if name not in self._classes:
            self.load(name)
        if name not in self._classes:
            known = ", ".join(sorted(self._classes))
            raise ConfigError(self.unknown.format(name=name, known=known))
        return self._classes[name]

    def names(self) -> list[str]:
        """Every registered name (the built-in ones included), sorted."""
        self.load()
        return sorted(self._classes)

    def classes(self) -> list[T]:
        """Every registered class in registration order (built-ins first, in file order)."""
        self.load()
        return list(self._classes.values())

    def load(self, name: str | None = None) -> None:
        """Import the built-in members: only ``name``'s file when there is one — a run loads
        the plug-ins it uses, not every plug-in's dependencies — else all of them, once."""
        with self._lock:
            if name is not None and name.isidentifier() and not self._loaded:
                if importlib.util.find_spec(f"{self.package}.{name}") is not None:
                    importlib.import_module(f"{self.package}.{name}")
                if name in self._classes:
                    return
            if self._loaded:
                return
            pkg = importlib.import_module(self.package)
            for mod in pkgutil.iter_modules(pkg.__path__):
                if not mod.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{mod.name}")
            self._loaded = True


def _origin(cls: object) -> tuple[str, str]:
    """Where a class was defined: a module imported twice (a test re-importing it) registers
    the same plug-in again, which is no conflict."""
    return (getattr(cls, "__module__", ""), getattr(cls, "__qualname__", ""))
