"""Signatures of the bias probes: the pairwise judge, and the program that writes a rubric's
inverted question (``polarity``) with its validator."""

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
