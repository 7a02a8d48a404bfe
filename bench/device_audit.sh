#!/usr/bin/env bash
# audit on the 16-core GPU machine (issue 12): the real benchmark tree, carried as .carry/tree.tar.xz
# (`tar cf - topk-bench-tree | xz -T2 -6 > .carry/tree.tar.xz` from /tmp, after bench/build_tree.sh), ten
# copies of it, and the synthetic trees of bench/gen_tree.py (half their calls lack topk_length: the
# engine's LibCST path). Installs the checkout and .carry/wheels/libcst into /tmp/site, bytecode compiled.
#
#   device run: bash bench/device_audit.sh [ROUNDS] [phases]   carry: .carry/wheels .carry/extra .carry/tree.tar.xz
# (.carry/extra: click and packaging wheels, `pip download --no-deps -d .carry/extra click packaging`: installed
# beside the package and compiled, as a user's install has them.)
set -euo pipefail
rounds=${1:-5}
only=${2:-all}  # "phases": only bench/audit_phases.py; "startup": what a run costs outside audit();
                # "real": the real tree and its ten copies only (no synthetic trees);
                # "timeline": bench/audit_timeline.py on the real tree (cold audit() at -j 16, three times)
site=/tmp/site
TIMEFORMAT="%R s wall, %U+%S cpu"
echo "== the image's interpreter: start, and import click (as the image has it)"
time python3 -c pass
time python3 -c "import click"
python3 -X importtime -c "import click" 2>&1 | sort -t'|' -k2 -n | tail -3
python3 -m pip install -q --no-index --no-deps --target "$site" .carry/wheels/*.whl
if ls .carry/extra/*.whl >/dev/null 2>&1; then  # click and packaging, compiled as pip installs them
  python3 -m pip install -q --no-index --no-deps --target "$site" .carry/extra/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target "$site" .
python3 -m compileall -q "$site" >/dev/null || true
export PYTHONPATH=$site
repo=$PWD
cd /tmp  # not the checkout: `python3 -m topk_migrate` there would import its uncompiled sources, not the install
python3 -c "import topk_migrate; print('== the package imported from:', *topk_migrate.__path__)"  # a namespace package: no __file__
echo "== with the installed package: start + import of the CLI and audit"
time python3 -c "import topk_migrate.cli, topk_migrate.audit"
rm -rf /tmp/r1 && mkdir -p /tmp/r1
python3 -c "import tarfile; tarfile.open('$repo/.carry/tree.tar.xz').extractall('/tmp/r1')"
real=/tmp/r1/topk-bench-tree
if [ "$only" = startup ]; then
  for i in 1 2 3; do
    echo "-- round $i"
    time python3 -c pass
    time python3 -I -c pass
    time python3 -c "import topk_migrate.cli, topk_migrate.audit"
    time python3 -m topk_migrate audit "$real" --format json -j 16 >/dev/null
    time python3 -c "import sys; from topk_migrate.audit import audit; audit([sys.argv[1]], jobs=16)" "$real"
    time python3 -c "import sys, os; from topk_migrate.audit import audit; audit([sys.argv[1]], jobs=16); os._exit(0)" "$real"
  done
  python3 -X importtime -m topk_migrate audit "$real" --format json -j 16 2>&1 >/dev/null | sort -t'|' -k2 -n | tail -12
  exit 0
fi
if [ "$only" = timeline ]; then
  for i in 1 2 3; do echo "-- -j 16, round $i"; python3 "$repo/bench/audit_timeline.py" --tree "$real" --jobs 16; done
  exit 0
fi
if [ "$only" != phases ]; then
rm -rf /tmp/r10 && mkdir -p /tmp/r10  # afresh: a warm machine keeps the last call's copies
for i in $(seq 0 9); do cp -r "$real" "/tmp/r10/copy$i"; done
trees=("$real" /tmp/r10)
if [ "$only" != real ]; then
  python3 "$repo/bench/gen_tree.py" /tmp/s1 >/dev/null
  python3 "$repo/bench/gen_tree.py" /tmp/s10 --copies 10 >/dev/null
  trees+=(/tmp/s1 /tmp/s10)
fi
# the device's copy of .git can lag the carried working tree: name the sources by their content instead
# (the same command in a local checkout says which commit that is)
echo "sources: $(cd "$repo" && find topk_migrate codemods -name '*.py' | LC_ALL=C sort | xargs cat | sha1sum | cut -c1-12)"
python3 "$repo/bench/cores_bench.py" $(printf -- '--tree %s ' "${trees[@]}") --jobs "$(nproc)" --rounds "$rounds"
for tree in "${trees[@]:0:1}" $([ "$only" != real ] && echo /tmp/s1); do
  for j in 1 2 4 8 16; do
    TIMEFORMAT="$(basename "$tree") -j $j: %R s wall %U+%S cpu"
    time python3 -m topk_migrate audit "$tree" --format json -j "$j" >/dev/null || true
  done
done
fi
for j in 1 4 16; do
  echo "== phases, -j $j"
  python3 "$repo/bench/audit_phases.py" --tree "$real" --jobs "$j" --rounds 5
done
