"""Language-model backends: one model spec for every role, LiteLLM model strings, the embedded
local model, the scripted test LM, and usage / cost accounting."""

from assay.lm._factory import check_api_key, configure_cache, make_adapter, make_lm
from assay.lm._family import FAMILIES, model_family
from assay.lm._ledger import CallRecord, ledger_usage, note_calls, note_usage, record_calls
from assay.lm._limits import LimitStats, RateLimiter, gate_calls, limiter_for, track_limits
from assay.lm._outputs import (
    AssayLM,
    MissingInputs,
    OffScaleOutput,
    StrictChatAdapter,
    StrictJSONAdapter,
    TruncatedOutput,
    kept_nowhere,
    without_history,
)
from assay.lm._pricing import (
    CACHED,
    UNTALLIED,
    UsageRecords,
    cost_usd,
    preload_price_map,
    usage_of_tracker,
)
from assay.lm._redact import error_text, note_key_variable, redact
from assay.lm._scripted import (
    ScriptedCall,
    ScriptedEngine,
    ScriptedFailure,
    register_script,
    registered_scripts,
    scripted_engine,
)
from assay.lm._spec import (
    NOT_IN_IDENTITY,
    ROLE_DEFAULTS,
    GeneratorSpec,
    ModelSpec,
    Price,
    Real,
    Role,
    StrictInt,
    ValidatorSpec,
)
from assay.lm._stub_server import StubServer

__all__ = [
    "CallRecord",
    "ledger_usage",
    "note_calls",
    "note_usage",
    "record_calls",
    "LimitStats",
    "RateLimiter",
    "gate_calls",
    "limiter_for",
    "track_limits",
    "kept_nowhere",
    "without_history",
    "NOT_IN_IDENTITY",
    "AssayLM",
    "MissingInputs",
    "OffScaleOutput",
    "StrictChatAdapter",
    "StrictJSONAdapter",
    "TruncatedOutput",
    "ROLE_DEFAULTS",
    "GeneratorSpec",
    "ModelSpec",
    "Price",
    "Real",
    "Role",
    "ScriptedCall",
    "ScriptedEngine",
    "ScriptedFailure",
    "StrictInt",
    "StubServer",
    "ValidatorSpec",
    "check_api_key",
    "configure_cache",
    "cost_usd",
    "preload_price_map",
    "error_text",
    "note_key_variable",
    "redact",
    "UNTALLIED",
    "CACHED",
    "make_adapter",
    "make_lm",
    "FAMILIES",
    "model_family",
    "register_script",
    "registered_scripts",
    "scripted_engine",
    "UsageRecords",
    "usage_of_tracker",
]
