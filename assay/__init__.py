"""assay — make LLM judges trustworthy: agreement, reliability and cost, logged to MLflow."""

import os as _os

# Without these, LiteLLM fetches its price map and MLflow sends telemetry at import time, and
# an MLflow judge fetches MLflow's model catalog (its vendored copy serves): all stall on a
# machine without internet access.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
_os.environ.setdefault("MLFLOW_MODEL_CATALOG_URI", "")
_os.environ.setdefault("DSPY_DISABLE_TELEMETRY", "true")
_os.environ.setdefault("HF_DATASETS_OFFLINE", "0")
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"

_API = (  # the built-in runners, as functions (assay.api); any other registered runner too
    "evaluate",
    "calibrate",
    "conformal",
    "estimate",
    "harness",
    "toolemu",
    "optimize",
    "agreement",
    "compare",
    "rank",
    "selftest",
    "toolemu_agreement",
)


def __getattr__(name: str):
    """``assay.evaluate(...)`` and every other registered runner (:mod:`assay.api`), loaded on
    first use so that ``import assay`` stays cheap. A private name is never one: ``from assay
    import _json`` asks here first, before it imports that module, and must not load every
    runner (and the plug-ins) halfway through the import of another module."""
    if name.startswith("_"):
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    if name in ("JudgeConfig", "build_judge"):
        from assay import programs

        return getattr(programs, name)
    import importlib
    import sys

    runners = sys.modules.get("assay.runners")  # a runner registered from outside
    if name in _API or (runners is not None and name in runners.known_runners()):
        return getattr(importlib.import_module("assay.api"), name)
    raise AttributeError(f"module 'assay' has no attribute {name!r}")


__all__ = [*_API, "JudgeConfig", "build_judge", "__version__"]
