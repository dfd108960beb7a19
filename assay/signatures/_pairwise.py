"""Signatures of the bias probes: the pairwise judge, and the programs that rewrite the judge's
own task with their validators: its inverted question (``polarity``), its paraphrases
(``prompt_paraphrase``)."""

from __future__ import annotations

import dspy


class JudgePair(dspy.Signature):
    """Compare two responses to the same request against the rubric and say which one is
    better: A or B (or tie, where allowed, when neither is better)."""

    rubric: str = dspy.InputField(desc="the grading rubric")
    request: str = dspy.InputField(desc="the prompt or user instruction both responses answer")
    response_a: str = dspy.InputField(desc="response A")
    response_b: str = dspy.InputField(desc="response B")
    verdict: str = dspy.OutputField(desc="the better response, one of the allowed values")


class InvertTask(dspy.Signature):
    """Rewrite a grading task so that it asks the opposite question: where it asks whether a
    response meets a criterion (follows the instruction, is correct, is safe), ask whether the
    response fails it (violates the instruction, is wrong, is unsafe), and the reverse. Keep
    every criterion, detail and the label names; change only the direction of the question so
    that a grader following it gives the mirrored verdict, described in ``verdicts``."""

    instruction: str = dspy.InputField(desc="the grading instruction (may be empty)")
    rubric: str = dspy.InputField(desc="the grading rubric")
    verdicts: str = dspy.InputField(desc="what each verdict means in the inverted task")
    inverted_instruction: str = dspy.OutputField(desc="the instruction asking the opposite")
    inverted_rubric: str = dspy.OutputField(desc="the rubric asking the opposite question")


class CheckInversion(dspy.Signature):
    """Decide whether the inverted grading task asks exactly the opposite question of the
    original — same criteria, direction reversed — so that the verdicts as described mirror
    the original ones and the correct answer for any response is unchanged."""

    original: str = dspy.InputField(desc="the original instruction and rubric")
    inverted: str = dspy.InputField(desc="the inverted instruction and rubric")
    verdicts: str = dspy.InputField(desc="what each verdict means in the inverted task")
    inverted_ok: bool = dspy.OutputField(desc="true if it is a faithful inversion")
    reason: str = dspy.OutputField(desc="one sentence")


class ParaphraseTask(dspy.Signature):
    """Rewrite a grading task in other words: the same criteria, details, label names and
    scale, so that a grader following it gives every response the same verdict as under the
    original; change the wording and the sentence structure. Write a rewrite unlike the
    ``earlier`` ones."""

    instruction: str = dspy.InputField(desc="the grading instruction (may be empty)")
    rubric: str = dspy.InputField(desc="the grading rubric")
    earlier: str = dspy.InputField(desc="rewrites written before, to differ from (may be empty)")
    paraphrased_instruction: str = dspy.OutputField(desc="the instruction in other words")
    paraphrased_rubric: str = dspy.OutputField(desc="the rubric in other words")


class CheckTaskParaphrase(dspy.Signature):
    """Decide whether the rewritten grading task means exactly what the original means — the
    same criteria, details, label names and scale, nothing added or dropped — so that a grader
    following either gives every response the same verdict."""

    original: str = dspy.InputField(desc="the original instruction and rubric")
    paraphrase: str = dspy.InputField(desc="the rewritten instruction and rubric")
    same_meaning: bool = dspy.OutputField(desc="true if it keeps the meaning")
    reason: str = dspy.OutputField(desc="one sentence")
