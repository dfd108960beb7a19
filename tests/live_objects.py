"""Counting the objects alive in this process while other threads of it run."""

from __future__ import annotations

import gc
import sys


def live_objects(*types: type, collect: bool = True) -> list[object]:
    """Every object whose type is one of ``types`` alive in this process (after a collection
    unless ``collect`` is false).

    ``gc.get_objects()`` lists every tracked object, tuples that another thread is still
    building among them; were that thread to run while the list holds one, its resize of the
    tuple would find a second reference and fail (``SystemError: bad argument to internal
    function``, seen in a matplotlib thread beside such a count). So no other thread runs
    while the list lives: the interpreter's switch interval is raised for the count, and
    nothing in it blocks."""
    if collect:
        gc.collect()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        return [obj for obj in gc.get_objects() if type(obj) in types]
    finally:
        sys.setswitchinterval(interval)
