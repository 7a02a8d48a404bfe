#!/usr/bin/env python3
"""One audit() (the first in this process: cold, as the CLI runs it) as a timeline: when the main
process's first levels are walked, each scanner forked, each message answered (walked parts,
classified candidates), and the end. For finding the critical path of a split walk.

    python3 bench/audit_timeline.py --tree /tmp/topk-bench-tree --jobs 16
"""
import argparse
import time

T0 = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--jobs", type=int, default=16)
    args = ap.parse_args()
    from topk_migrate import audit, discover

    events = []

    def mark(what):
        events.append((time.perf_counter(), what))

    def wrap(owner, name, label):
        real = getattr(owner, name)

        def timed(*a, **k):
            out = real(*a, **k)
            mark(label(out) if callable(label) else label)
            return out
        setattr(owner, name, timed)

    mark("imported")
    wrap(audit, "_import_for_classify", "imported what classification needs")
    wrap(audit.scan._Scanners, "__init__", "scanners forked")
    wrap(discover.SplitWalk, "plan", "split walk planned")
    real_start = discover.SplitWalk.start

    def start(self, ways):
        yield from real_start(self, ways)
        mark(f"first levels walked here ({len(self.seeds)} seeds)")
    discover.SplitWalk.start = start
    real_wait = audit.scan._Scanners.wait

    def wait(self):
        got = real_wait(self)
        mark(f"answer: {len(self.parts)} part(s), {len(got)} classified")
        return got
    audit.scan._Scanners.wait = wait
    t = time.perf_counter()
    r = audit.audit([args.tree], jobs=args.jobs)
    mark(f"audit() done: {r.summary['files']} files, {r.summary['parsed']} parsed")
    print(f"process start -> imports done: {events[0][0] - T0:.3f} s")
    for when, what in events[1:]:
        print(f"{(when - t) * 1000:7.1f} ms  {what}")


if __name__ == "__main__":
    main()
