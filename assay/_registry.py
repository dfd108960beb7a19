"""One small registry for every plug-in family (runners, and open to judge kinds, reliability
tests and scoring kinds): plug-ins register under a name, the built-in ones are imported on
first lookup, and an unknown name is a one-line :class:`~assay.errors.ConfigError`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from assay.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Plug-ins of one family by name, in registration order (built-ins first, in the order of
    ``builtin``, a module each, imported only when a lookup needs them)."""

    def __init__(self, family: str, builtin: tuple[str, ...] = ()):
        self.family = family
        self._builtin = builtin
        self._loaded = not builtin
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator: ``@registry.register("name")`` on the plug-in (its ``name`` is set)."""

        def add(entry: T) -> T:
            self.add(name, entry)
            return entry

        return add

    def add(self, name: str, entry: T) -> None:
        old = self._entries.get(name)
        if old is not None and old is not entry and _origin(old) != _origin(entry):
            raise ValueError(f"{self.family} {name!r} is already registered")
        if isinstance(entry, type):
            entry.name = name  # type: ignore[attr-defined]
        self._entries[name] = entry

    def get(self, name: str) -> T:
        if name not in self._entries:
            self.load()
        if name not in self._entries:
            raise ConfigError(f"unknown {self.family} '{name}'; known: {', '.join(self.names())}")
        return self._entries[name]

    def names(self) -> list[str]:
        self.load()
        return list(self._entries)

    def __iter__(self) -> Iterator[T]:
        self.load()
        return iter(list(self._entries.values()))

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def registered(self, name: str) -> bool:
        """Whether ``name`` is registered now (the built-ins not imported for it)."""
        return name in self._entries

    def load(self) -> None:
        """Import the built-in plug-ins (each registers itself), once, ahead of the others."""
        if self._loaded:
            return
        self._loaded = True
        outside = self._entries
        self._entries = {}
        for module in self._builtin:
            importlib.import_module(module)
        for name, entry in outside.items():
            self._entries.setdefault(name, entry)


def _origin(entry: object) -> tuple[str, str]:
    """Where a plug-in was defined: a module imported twice (a test re-importing it) registers
    the same plug-in again, which is no conflict."""
    return (getattr(entry, "__module__", ""), getattr(entry, "__qualname__", ""))
