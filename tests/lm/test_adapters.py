"""assay's adapters build the system message and the JSON adapter's response format once per
signature: what reaches the wire is byte for byte what DSPy's own strict adapter sends, for a
model with structured outputs and for one in JSON mode, on both clients."""

from __future__ import annotations

import json
from typing import Literal

import dspy
import pytest

from assay.lm import StubServer, make_lm
from assay.lm._adapters import ChatAdapter, JSONAdapter
from assay.lm._outputs import StrictJSONAdapter


class Verdict(dspy.Signature):
    """Decide whether the answer is good."""

    request: str = dspy.InputField()
    response: str = dspy.InputField()
    verdict: Literal["False", "True"] = dspy.OutputField()


def _bodies(adapter: dspy.Adapter, wire_model: str, client: str) -> list[dict]:
    with StubServer() as stub:
        lm = make_lm(
            f"openai/{wire_model}", api_base=stub.base_url, client=client, cache=False, retries=0
        )
        program = dspy.Predict(Verdict)
        with dspy.context(lm=lm, adapter=adapter):
            for k in range(3):
                program(request=f"Question {k}?", response=f"Answer {k}.")
        return [json.loads(json.dumps(b)) for b in stub.requests]


@pytest.mark.parametrize("client", ["native", "litellm"])
@pytest.mark.parametrize("wire_model", ["gpt-4o-mini", "stub"])  # a schema; JSON mode
def test_what_reaches_the_wire_is_what_dspy_sends(client, wire_model):
    ours = _bodies(JSONAdapter(), wire_model, client)
    theirs = _bodies(StrictJSONAdapter(), wire_model, client)
    assert len(ours) == 3 and ours == theirs
    kinds = {b.get("response_format", {}).get("type") for b in ours}
    assert kinds == ({"json_schema"} if wire_model == "gpt-4o-mini" else {"json_object"})


def test_the_response_format_is_built_once_per_signature(monkeypatch):
    from dspy.adapters import json_adapter

    built: list[type] = []
    build = json_adapter._get_structured_outputs_response_format

    def counting(signature, *args, **kwargs):
        built.append(signature)
        return build(signature, *args, **kwargs)

    monkeypatch.setattr(json_adapter, "_get_structured_outputs_response_format", counting)
    adapter = JSONAdapter()
    lm = make_lm("openai/gpt-4o-mini", api_base="http://127.0.0.1:9", cache=False, retries=0)
    other = Verdict.with_instructions("Decide whether the answer is bad.")
    for signature in (Verdict, Verdict, other, Verdict, other):
        kwargs: dict = {}
        adapter._prepare_response_format(lm, kwargs, signature)
        assert "response_format" in kwargs
    assert built == [Verdict, other]


class Mixed(dspy.Signature):
    """Judge the transcript."""

    request: str = dspy.InputField()
    steps: list[str] = dspy.InputField()
    meta: dict = dspy.InputField()
    count: int = dspy.InputField()
    note: str = dspy.InputField()
    verdict: Literal["0", "1"] = dspy.OutputField()


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(JSONAdapter, dspy.JSONAdapter), (ChatAdapter, dspy.ChatAdapter)],
)
@pytest.mark.parametrize("main_request", [True, False])
def test_the_user_message_is_dspys(ours, theirs, main_request):
    inputs = {
        "request": "What is 2 + 2?\n\nShow   your work. ",
        "steps": ["add", "check"],
        "meta": {"source": "é", "n": [1, 2]},
        "count": 3,
        "note": "",
    }
    for given in (inputs, {k: v for k, v in inputs.items() if k != "meta"}):
        args = (Mixed, given)
        kw = {"prefix": "Here:", "suffix": "Go.", "main_request": main_request}
        assert ours().format_user_message_content(
            *args, **kw
        ) == theirs().format_user_message_content(*args, **kw)
