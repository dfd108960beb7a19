"""Language-model backends: LiteLLM model strings, the embedded local model, the scripted test LM."""

from assay.lm._factory import check_api_key, lm_from_spec, make_lm
from assay.lm._pricing import cost_usd
from assay.lm._scripted import (
    ScriptedCall,
    ScriptedEngine,
    ScriptedFailure,
    register_script,
    scripted_engine,
)
from assay.lm._stub_server import StubServer

__all__ = [
    "ScriptedCall",
    "ScriptedEngine",
    "ScriptedFailure",
    "StubServer",
    "check_api_key",
    "cost_usd",
    "lm_from_spec",
    "make_lm",
    "register_script",
    "scripted_engine",
]
