"""Print the adversarial tally as markdown: `cd tests && python3 -m adversarial.report [-v] [--without-validation]`.

Runs every variant once against whatever `topk_migrate` is importable (PYTHONPATH picks an
older checkout for the "before" figure) and prints, per hazard class, how many variants went
wrong, plus each wrong variant with its problems (-v: every variant with its site statuses).
"""
from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

from topk_migrate import api

from . import harness
from .generated import SAMPLE
from .variants import HAZARDS, VARIANTS


def main(argv=None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    verbose = "-v" in args
    if "--without-validation" in args:  # what the scope-validation step catches
        from topk_migrate.codemods.pass_topk_length import rule as pass_topk_length

        pass_topk_length.validate_rewrite = lambda *a, **k: None
        print("validate_rewrite disabled\n")
    with tempfile.TemporaryDirectory(prefix="topk-adversarial-") as tmp:
        outcomes = harness.run_all(VARIANTS + SAMPLE, Path(tmp))
    print(f"engine: {Path(api.__file__).parent}\n")
    print("| class | variants | wrong | sound, kernel got topk_length | sound, no topk_length (refused or guarded off) |")
    print("|---|---|---|---|---|")
    by_class = collections.defaultdict(list)
    for o in outcomes:
        by_class[o.variant.hazard].append(o)
    for hazard in [*HAZARDS, "generated", "control"]:
        group = by_class[hazard]
        wrong = sum(o.wrong for o in group)
        fixed = sum(o.fixed and not o.wrong for o in group)
        refused = sum(not o.wrong and not o.fixed for o in group)
        print(f"| {hazard} | {len(group)} | {wrong} | {fixed} | {refused} |")
    total_wrong = sum(o.wrong for o in outcomes)
    print(f"| all | {len(outcomes)} | {total_wrong} | | |\n")
    for o in outcomes:
        if o.wrong or verbose:
            print(o.describe() if o.wrong else f"variant {o.variant.name} [class {o.variant.hazard}] ok:\n"
                  + "\n".join(f"  site line {ln}: {st} \u2014 {why}" for ln, st, why in o.sites))
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
