"""YAML: what a user hands in (configs, review files) read within bounds, and what assay wrote
itself (a run's ``config.yaml``) read fast.

A user's file is untrusted: an alias bomb ("billion laughs") would expand to gigabytes once
validated or hashed, a self-referencing alias to an endless structure, and a 20,000-level nested
list to a ``RecursionError`` in the parser. :func:`read_input` refuses each of them, and a key
set twice in one mapping, in one line naming the file, before anything is built from it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from assay._files import read_text
from assay.errors import AssayError, ConfigError

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_BYTES = 64 * 2**20
"""Largest YAML file read (64 MiB: a review file of a very large harness run is a few MiB)."""
MAX_DEPTH = 100
"""Deepest nesting of lists and mappings, aliases expanded (configs nest fewer than 10)."""
MAX_ALIAS_NODES = 100_000
"""Most nodes aliases may add to a document once expanded (sharing one judge's settings adds
tens; an alias bomb adds billions)."""


def load(text: str) -> Any:
    """``yaml.safe_load(text)`` with libyaml's parser where PyYAML was built with it (the same
    safe constructor; ~7x faster: a resolved config took 20 ms in pure Python, 3 ms here).
    For YAML assay wrote itself; what a user hands in goes through :func:`read_input`."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)


class DuplicateKey(yaml.YAMLError):
    """A mapping that sets one key twice (YAML itself would keep the last value silently)."""


class LimitExceeded(yaml.YAMLError):
    """A document nested too deeply, or whose aliases expand too far (or into a cycle)."""


class _InputLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` within :data:`MAX_DEPTH` and :data:`MAX_ALIAS_NODES`, refusing a key
    set twice in one mapping."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._depth = 0

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # the scanner looks far ahead inside ``[[[[...``: stop it before it does (seconds)
        if self.flow_level >= MAX_DEPTH:
            raise LimitExceeded(f"line {self.line + 1}: nested more than {MAX_DEPTH} levels")
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: Any, index: Any) -> Any:
        # the composer recurses once per level: stop before Python's recursion limit does
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise LimitExceeded(f"line {mark.line + 1}: nested more than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    raise DuplicateKey(
                        f"line {line}: duplicate key {key!r} (already set on line "
                        f"{first[key]}); YAML would silently keep the last value"
                    )
                first[key] = line
            except TypeError:  # an unhashable key: SafeLoader reports it
                break
        return super().construct_mapping(node, deep=deep)


def _construct_int(loader: _InputLoader, node: yaml.ScalarNode) -> int:
    """An integer scalar; one longer than Python converts (``sys.get_int_max_str_digits()``,
    4,300 digits) is a :class:`LimitExceeded` naming its line, not a bare ``ValueError``."""
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        limit = sys.get_int_max_str_digits()
        raise LimitExceeded(
            f"line {node.start_mark.line + 1}: a number of more than {limit:,} digits"
        ) from None


_InputLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: yaml.Node | None) -> None:
    """Count the nodes and the depth of ``root`` with every alias expanded — in time linear in
    the distinct nodes (each measured once) — and refuse a cycle, a depth over
    :data:`MAX_DEPTH` or more than :data:`MAX_ALIAS_NODES` nodes added by aliases."""
    if root is None:
        return
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            kids = [id(c) for c in _children(node)]
            size[key] = 1 + sum(size[k] for k in kids)
            depth[key] = 1 + max((depth[k] for k in kids), default=0)
            if depth[key] > MAX_DEPTH:
                raise LimitExceeded(
                    f"line {node.start_mark.line + 1}: nested more than {MAX_DEPTH} levels "
                    "once its aliases are expanded"
                )
            continue
        if key in size:
            continue
        if key in open_:
            raise LimitExceeded(
                f"line {node.start_mark.line + 1}: an alias refers to a node that contains it "
                "(an endless structure)"
            )
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)
    added = size[id(root)] - len(size)
    if added > MAX_ALIAS_NODES:
        raise LimitExceeded(
            f"aliases expand the document by {added:,} nodes (at most {MAX_ALIAS_NODES:,}): "
            "an alias bomb?"
        )


def load_input(text: str) -> Any:
    """Parse YAML a user wrote like ``yaml.safe_load``, within the bounds of this module: a key
    set twice raises :class:`DuplicateKey`, a bound exceeded :class:`LimitExceeded` (both
    ``yaml.YAMLError``s, as is malformed YAML)."""
    return yaml.load(text, Loader=_InputLoader)  # noqa: S506 (a SafeLoader subclass)


def describe(exc: yaml.YAMLError, text: str = "") -> str:
    """One line for a YAML error in ``text``: its line (and column) and what is wrong."""
    if isinstance(exc, DuplicateKey | LimitExceeded):
        return str(exc)
    if isinstance(exc, yaml.reader.ReaderError):  # a control character such as NUL
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or " ")
        line = text.count("\n", 0, exc.position) + 1
        return (
            f"line {line}: character U+{char:04X} is not allowed in YAML (a binary file, or "
            "a file saved in another encoding?)"
        )
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"malformed YAML at {where}{problem}" if where else f"malformed YAML: {problem}"


def read_input(path: str | Path, error: type[AssayError] = ConfigError, what: str = "file") -> Any:
    """Read and parse the YAML file a user named; any problem — missing, not a regular file,
    too large, not UTF-8, malformed, over a bound of this module — is
    ``error("<path>: <one line>")`` (read by :func:`assay._files.read_text`)."""
    text = read_text(path, limit=MAX_BYTES, error=error, what=what)
    try:
        return load_input(text)
    except yaml.YAMLError as exc:
        raise error(f"{path}: {describe(exc, text)}") from None


class _EditableDumper(yaml.SafeDumper):
    """Safe YAML with multi-line text as block literals (``|``), so a person can edit it."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted scalar by itself when a block cannot hold the text exactly
    # (for instance trailing spaces on a line), so the file always round-trips.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_EditableDumper.add_representer(str, _represent_str)


def dump_editable(data: Any) -> str:
    """``data`` as YAML for a person to edit (a review file): keys in order, multi-line text as
    block literals, no aliases, no line folded."""
    return yaml.dump(
        data,
        Dumper=_EditableDumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,  # never fold a long line: a person edits it as it is
    )
