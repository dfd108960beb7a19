"""One registry helper for every plug-in kind (reliability tests, scoring kinds, judge kinds,
runners): a name → class table filled by a decorator, whose built-in members live one per file
in a package and are imported the first time a name is looked up.

A plug-in from outside the package registers itself the same way (importing its file runs the
decorator); the registry never needs to know about it beforehand. It is imported by
:func:`load_plugins` — a Python file or a module named by a run's ``plugins:``, ``--plugin`` —
or found through the ``assay.plugins`` entry-point group, which every process loads before its
first lookup. :func:`plugin_of` names the plug-in a registered class came from, for another
process that must import it to look that class up (a Ray worker building a judge of its kind).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import CodeType
from typing import Any, Generic, TypeVar

from assay.errors import ConfigError

ENTRY_POINTS = "assay.plugins"
"""The entry-point group an installed package adds its plug-in modules to (each entry names a
module, imported for its registrations)."""

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes registered by name. ``what`` names the kind in errors ("reliability test");
    ``package`` holds the built-in members, one public module each (modules starting with ``_``
    are helpers); ``unknown`` is the error for a name nobody registered (``{name}``, ``{known}``)."""

    def __init__(
        self,
        what: str,
        package: str,
        *,
        unknown: str | None = None,
        builtin: Iterable[str] | None = None,
    ) -> None:
        self.what = what
        self.package = package
        self.unknown = unknown or f"unknown {what} '{{name}}'; known: {{known}}"
        self._builtin = tuple(builtin) if builtin is not None else None
        self._classes: dict[str, T] = {}
        self._loaded = False
        self._lock = threading.RLock()

    def builtin_names(self) -> frozenset[str]:
        """The names the built-in members own, known without importing them: ``builtin`` when
        given, else the package's public module names (one member per file, named as it)."""
        if self._builtin is None:
            pkg = importlib.import_module(self.package)
            self._builtin = tuple(
                m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")
            )
        return frozenset(self._builtin)

    def register(self, name: str) -> Callable[[T], T]:
        """The decorator: register a class under ``name`` (and set its ``name``). A plug-in
        (a class from outside the package) may not take a built-in member's name, whether or
        not that member was imported yet: the built-ins are imported lazily, so otherwise the
        plug-in would silently replace one — or fail only when it happened to be imported
        later. Nor may it take another plug-in's name. Both are a one-line
        :class:`ConfigError` naming the plug-in's file (or module) and the name."""

        def register(cls: T) -> T:
            with self._lock:
                old = self._classes.get(name)
                if not self._is_builtin(cls) and name in self.builtin_names():
                    raise ConfigError(
                        f"plugin {_where(cls)}: {self.what} '{name}' is the name of a built-in "
                        f"one; register it under another name"
                    )
                if old is not None and old is not cls and _origin(old) != _origin(cls):
                    raise ConfigError(
                        f"plugin {_where(cls)}: {self.what} '{name}' is already registered "
                        f"by {_where(old)}; register it under another name"
                    )
                cls.name = name  # type: ignore[attr-defined]
                self._classes[name] = cls
                return cls

        return register

    def _is_builtin(self, cls: type) -> bool:
        module = getattr(cls, "__module__", "") or ""
        return module == self.package or module.startswith(f"{self.package}.")

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
        the plug-ins it uses, not every plug-in's dependencies — else all of them, once. The
        installed packages' plug-ins (the ``assay.plugins`` entry points) come first."""
        _load_entry_points()
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


def _where(cls: object) -> str:
    """The plug-in a class comes from, as its user knows it: its module's file, else the
    module's name."""
    module = getattr(cls, "__module__", "")
    return getattr(sys.modules.get(module), "__file__", None) or module


def plugin_where(cls: object) -> str | None:
    """The plug-in a class (a registered test, scoring kind, judge kind) comes from, as its
    user knows it — its file, else its module's name —, for a message naming it; None for a
    class of assay's own."""
    module = getattr(cls, "__module__", "") or ""
    if module == "assay" or module.startswith("assay."):
        return None
    return _where(cls)


def _origin(cls: object) -> tuple[str, str]:
    """Where a class was defined — its module's file, else its module's name: a file imported
    twice (a test re-importing it, a plug-in file its user also imports under a name of their
    own) registers the same plug-in again, which is no conflict."""
    return (_where(cls), getattr(cls, "__qualname__", ""))


# -- plug-ins from outside the package ---------------------------------------------------------

_PLUGINS: dict[str, str] = {}  # spec → the module it was imported as, in import order
_PLUGINS_LOCK = threading.RLock()
_entry_points = "not loaded"  # "loading" (by the thread holding the lock), then "loaded"
_ENTRY_MODULES: list[str] = []  # the modules of the entry points loaded, in load order


def plugin_spec(value: str, base: Path | None) -> str:
    """A plug-in as a run records it: a Python file (a value ending in ``.py`` or holding a
    path separator) by its absolute path — a relative one is relative to ``base``, refused
    without one —, or a module by its dotted name."""
    text = str(value).strip()
    if text.endswith(".py") or "/" in text or os.sep in text:
        path = Path(text).expanduser()
        if not path.is_absolute():
            if base is None:
                raise ConfigError(
                    f"plugin {text}: a relative path; name the file by its absolute path "
                    "(a YAML config's are relative to its folder)"
                )
            path = base / path
        return str(path.resolve())
    if text and all(part.isidentifier() for part in text.split(".")):
        return text
    raise ConfigError(f"plugin {text!r}: neither a Python file (.py) nor a module name")


def load_plugins(specs: Iterable[str]) -> None:
    """Import each plug-in (:func:`plugin_spec`'s form) once per process; its decorators
    register what it adds. One that cannot be imported is a one-line :class:`ConfigError`
    naming it."""
    for spec in specs:
        if spec in _PLUGINS:
            continue
        with _PLUGINS_LOCK:
            if spec not in _PLUGINS:
                _PLUGINS[spec] = _import_plugin(spec)


def plugin_of(cls: type) -> str | None:
    """The plug-in (as :func:`load_plugins` took it) whose module defined ``cls``; None for a
    class of assay's, of an entry point's module (every process imports those) or of a module
    its user imported themselves."""
    module = getattr(cls, "__module__", None)
    return next((spec for spec, name in _PLUGINS.items() if name == module), None)


def plugin_identity(specs: Iterable[str]) -> list[list[str]]:
    """What the plug-ins contribute to a run's identity, in a stable order: a file by its
    content (as an ``@file`` text counts, not its path); a module by its name, its
    distribution's version and the content of its source — every file of its top-level
    package when it is in one (a plug-in of several files is a package, and the prompt or
    table it reads from its folder is as much of it as its code: editing any of them must
    make a new run; ``__pycache__`` and compiled ``.pyc`` files, which Python writes
    itself, do not count), else its own file."""
    out = []
    for spec in dict.fromkeys(specs):
        digest = hashlib.sha256()
        for name, path in _plugin_sources(spec):
            try:
                content = _file_digest(path)
            except OSError as exc:
                raise ConfigError(f"plugin {spec}: cannot read {path} ({exc.strerror})") from None
            digest.update(name.encode() + b"\0" + content)
        if _is_file(spec):
            out.append(["file", digest.hexdigest()])
        else:
            out.append(["module", spec, _version(spec), digest.hexdigest()])
    return sorted(out)


_DIGESTS: dict[str, tuple[tuple[int, ...], bytes]] = {}  # path → (its stat, its content's digest)
_DIGESTS_LOCK = threading.Lock()


def _file_digest(path: Path) -> bytes:
    """The SHA-256 of a file's content, read in blocks (a package's data file may be large).
    A process computes a run's plug-in identity several times (the run's key, its inputs, each
    harness test's code): a file whose size, times and inode are those it had when it was read
    last is not read again."""
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    key = str(path)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").digest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = (stamp, digest)
    return digest


def plugin_code_of(cls: type) -> list[list[str]] | None:
    """What the code of a registered class is, for the identity of what it makes (a harness
    test's probes): None for a class of assay's own; else :func:`plugin_identity` of the
    plug-in it came from — its file, or the package (every file) of its module, which
    covers an ``assay.plugins`` entry point, recorded nowhere else — or, for a class with no
    source file (defined in a notebook), its source text's digest."""
    module = getattr(cls, "__module__", "") or ""
    if module == "assay" or module.startswith("assay."):
        return None
    spec = plugin_of(cls) or module
    try:
        if _plugin_sources(spec):
            return plugin_identity([spec])
    except (ConfigError, ImportError, ValueError):  # no spec: ``__main__`` of a notebook
        pass
    import inspect

    try:
        text = inspect.getsource(cls)
    except (OSError, TypeError):
        text = f"{module}:{getattr(cls, '__qualname__', '')}"
    return [["source", hashlib.sha256(text.encode()).hexdigest()]]


def _is_file(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or "/" in spec


def _plugin_sources(spec: str) -> list[tuple[str, Path]]:
    """The source files a plug-in's code comes from, each with a name relative to its package
    (an empty list for a module with no file)."""
    if _is_file(spec):
        return [("", Path(spec))]
    top = spec.partition(".")[0]
    found = importlib.util.find_spec(top) if top not in sys.modules else None
    module = sys.modules.get(top)
    folders = list(getattr(module, "__path__", None) or [])
    if not folders and found is not None and found.submodule_search_locations:
        folders = list(found.submodule_search_locations)
    if folders:  # a package: every file in it
        return sorted(
            (f"{top}/{path.relative_to(folder).as_posix()}", path)
            for folder in map(Path, folders)
            for path in _package_files(folder)
        )
    own = _plugin_file(spec)
    return [("", own)] if own else []


def _package_files(folder: Path) -> Iterator[Path]:
    """Every regular file under a package's folder, but what Python writes there itself
    (``__pycache__`` folders, ``.pyc`` / ``.pyo`` files). A linked folder is followed, once (a
    link back up the tree is no loop)."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            path = Path(root, name)
            if not name.endswith((".pyc", ".pyo")) and path.is_file():
                yield path


def _plugin_file(spec: str) -> Path | None:
    module = sys.modules.get(spec)
    origin = getattr(module, "__file__", None)
    if origin is None:
        found = importlib.util.find_spec(spec)
        origin = found.origin if found is not None and found.has_location else None
    return Path(origin) if origin else None


def _version(module: str) -> str:
    """The version of the installed distribution that provides ``module`` ("" if none): the
    distribution of the module's top-level name when it provides that package (the usual
    case, one distribution read), else the one :func:`importlib.metadata.packages_distributions`
    names — a scan of every installed distribution's file list (0.3-1.4 s here), made once a
    process for its import path."""
    from importlib.metadata import PackageNotFoundError, distribution, version

    top = module.partition(".")[0]
    try:
        named = distribution(top)
    except PackageNotFoundError:
        named = None
    if named is not None and _provides(named, top):
        return named.version
    for dist in _distributions_of_packages().get(top, []):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return ""


def _provides(dist: Any, top: str) -> bool:
    """Whether the installed distribution ``dist`` holds the top-level package or module
    ``top``, as :func:`importlib.metadata.packages_distributions` decides it: the names its
    ``top_level.txt`` lists, else the first folder (or the module) of each ``.py`` file it
    lists."""
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return top in declared
    return any(
        (f.parts[0] if len(f.parts) > 1 else f.with_suffix("").name) == top
        for f in dist.files or []
        if f.suffix == ".py"
    )


_PACKAGES: dict[tuple[str, ...], Mapping[str, list[str]]] = {}


def _distributions_of_packages() -> Mapping[str, list[str]]:
    """:func:`importlib.metadata.packages_distributions` for this process's import path, read
    once for it."""
    from importlib.metadata import packages_distributions

    key = tuple(sys.path)
    found = _PACKAGES.get(key)
    if found is None:
        found = _PACKAGES[key] = packages_distributions()
    return found


def _import_plugin(spec: str) -> str:
    """Import one plug-in; the name of its module. A file already imported (by its user, under
    a name of their own) is not run again."""
    try:
        if not _is_file(spec):
            importlib.import_module(spec)
            return spec
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(f"plugin {spec}: no such file")
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and file.endswith(path.name) and _same_file(file, path):
                return name
        tag = hashlib.sha256(spec.encode()).hexdigest()[:8]
        stem = "".join(c if c.isalnum() else "_" for c in path.stem)
        name = f"assay_plugin_{stem}_{tag}"
        loader = _SourceLoader(name, str(path))
        loader_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module  # its classes resolve their annotations through it
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return name
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"plugin {spec} cannot be imported: {_one_line(exc)}") from None


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """A plug-in file run from its text as it is now, never from bytecode Python cached for it
    (``__pycache__``): a cached ``.pyc`` is trusted while the source's size and modification
    time, to the second, are those it was compiled from — so an edit of the same length within
    that second (``reliability_tset`` put right) ran the old code, under the hash of the new
    text that the run's identity holds."""

    def get_code(self, fullname: str) -> CodeType:
        return compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)


def _same_file(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _load_entry_points() -> None:
    """Import the modules of the ``assay.plugins`` entry points, once per process (a plug-in
    that looks a name up while it is imported does not start it again). One that cannot be
    imported is a one-line error naming it and its distribution, at every lookup."""
    global _entry_points
    if _entry_points == "loaded":
        return
    with _PLUGINS_LOCK:
        if _entry_points != "not loaded":
            return
        _entry_points = "loading"
        try:
            from importlib.metadata import entry_points

            for ep in entry_points(group=ENTRY_POINTS):
                try:
                    ep.load()
                    _ENTRY_MODULES.append(ep.module)
                except Exception as exc:
                    dist = f" of {ep.dist.name} {ep.dist.version}" if ep.dist else ""
                    raise ConfigError(
                        f"plugin entry point {ep.name} = {ep.value}{dist} cannot be imported: "
                        f"{_one_line(exc)}"
                    ) from None
        except BaseException:
            _entry_points = "not loaded"
            _ENTRY_MODULES.clear()
            raise
        _entry_points = "loaded"


def entry_point_plugins() -> list[str]:
    """The modules of the installed packages' plug-ins (the ``assay.plugins`` entry points),
    loaded first if they are not yet."""
    _load_entry_points()
    return list(_ENTRY_MODULES)
