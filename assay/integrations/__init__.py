"""assay's judges where users run theirs: ``assay.integrations.mlflow.scorer(...)`` an MLflow
GenAI ``Scorer``, ``assay.integrations.inspect.scorer(...)`` an Inspect ``@scorer`` — each
judging with an assay judge config (or the judge of a finished run) and carrying what assay
measured of it (κ with its interval, n, the worst reliability test) as metadata.

The top layer: it imports the runners' packages; nothing in the library imports it. Each
module needs only its own tool (``assay.integrations.inspect`` no MLflow, ``.mlflow`` no
Inspect; MLflow is imported when a scorer is made).
"""

from assay.integrations._judge import JudgeSource, MeasuredJudge, WithJudge, load_judge

__all__ = ["JudgeSource", "MeasuredJudge", "WithJudge", "load_judge"]
