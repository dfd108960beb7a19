"""``assay selftest``: the harness on judges with implanted defects (scripted, offline)."""

from __future__ import annotations

import json as _json
from pathlib import Path
from typing import TYPE_CHECKING

from assay.runners._runner import Options as BaseOptions
from assay.runners._runner import Runner, lm_cache, option, runner

if TYPE_CHECKING:
    from assay.reliability import SelftestResult


@runner("selftest")
class Selftest(Runner):
    """run the harness on judges with implanted defects (scripted, offline)"""

    class Options(BaseOptions):
        tracking: bool = option(False, help="also log the run to MLflow", action="store_true")

    quiet_json = True

    def run(self, options: Options, *, workdir: Path, progress: bool) -> SelftestResult:
        from assay.reliability import run_selftest

        return run_selftest(lm_cache(workdir), progress=progress, tracking=options.tracking)

    def print(self, result: SelftestResult, options: Options, *, json: bool) -> int:
        res = result
        if json:
            judges = {
                n: j.model_dump(
                    mode="json", include={"defect", "flagged", "must_not_flag", "tests"}
                )
                for n, j in res.judges.items()
            }
            print(_json.dumps({"ok": res.ok, "judges": judges}))
        else:
            print("| judge | implanted defect | meant to be caught by | flagged by |")
            print("|---|---|---|---|")
            for n, j in res.judges.items():
                meant = ", ".join(j.meant_for) or "—"
                if j.must_not_flag:
                    meant += f" (must not be: {', '.join(j.must_not_flag)})"
                print(f"| {n} | {j.defect} | {meant} | {', '.join(j.flagged) or 'none'} |")
            print("\nself-test " + ("passed" if res.ok else "FAILED") + f" (run: {res.run_dir})")
        return 0 if res.ok else 1
