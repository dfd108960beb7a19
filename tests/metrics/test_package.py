"""``assay.metrics`` loads its names on first use: every exported name resolves to the object
of the module that defines it, and an unknown name is an AttributeError, as for any module."""

from __future__ import annotations

import importlib

import pytest

import assay.metrics as metrics


def test_every_exported_name_resolves_to_its_defining_module():
    for name in metrics.__all__:
        module = importlib.import_module(metrics._WHERE[name])
        assert getattr(metrics, name) is getattr(module, name), name
    assert set(metrics.__all__) <= set(dir(metrics))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'cohens_kappa'"):
        metrics.cohens_kappa  # noqa: B018
    assert not hasattr(metrics, "cohens_kappa")
