#!/usr/bin/env bash
# The whole GPU record in one call, on the real sgl_kernel (sglang-kernel 0.4.6):
#   1. the bundled example backend, end to end through its own top-k call (fast_topk_transform_fused);
#   2. sglang 0.5.16's dsa_backend.py: its helper fed by the emitters its top-k path uses
#      (fast_topk_v2, fast_topk_transform_fused, fast_topk_transform_ragged_fused), patched and unpatched;
#   3. the negative control: the same engine with the emitters' output broken (a valid index after the
#      count); the smoke must fail, on the contract checks;
#   4. the decode facts (bench/gpu_decode_topk.py): flash_mla_with_kvcache with sparse indices and topk_length.
# Writes 8 files to $OUT (default results/gpu). Exit 0 only if 1 and 2 pass and 3 fails as it must.
#
# DERIVED=1 records `smoke --lengths derived` (issue 39) INSTEAD of the above, on the same two files: the derived
# lengths at every kernel call (the real MIN_ROWS, batches reaching it), their indices also scattered. It writes
# 5 files of its own to $OUT, beside the record's 8 and never over them: derived-environment.txt,
# derived-example.txt/.json, derived-sglang-0.5.16.txt/.json. Exit 0 only if both pass.
#
#   bench/gpu_prepare.sh                 # once, where PyPI is reachable: fills .carry/
#   bench/gpu_smoke.sh [ENGINE_FILE]     # on the GPU machine, from the repository root
#   DERIVED=1 bench/gpu_smoke.sh         # the derived fix's record, a second call
#
# DEVICE=cpu runs the same pipeline on the torch references (a dry run; no decode facts, no kernel): CI runs
# `DEVICE=cpu bench/gpu_prepare.sh` then `DEVICE=cpu bench/gpu_smoke.sh` (tests/test_gpu_smoke.py, heavy tier).
# OUT: where the 8 files go (default results/gpu); CARRY: what gpu_prepare.sh filled (default .carry).
#
# The package the smoke runs is assembled as pip installs it (codemods/ and fixtures/ under topk_migrate/)
# and imported from there alone: python runs a launcher inside the assembly, so the source topk_migrate/
# of the checkout (which has no codemods/) is never on sys.path ahead of it; environment.txt says where it came from.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
carry=$(cd "${CARRY:-.carry}" 2>/dev/null && pwd) || carry=$repo/${CARRY:-.carry}
engine=${1:-$carry/engines/sglang-0.5.16/sglang/srt/layers/attention/dsa_backend.py}
engine=${engine#"$repo"/}  # shown relative to the checkout, as recorded
device=${DEVICE:-cuda}
out=${OUT:-results/gpu}
prefix=
[ "${DERIVED:-0}" = 1 ] && prefix=derived-  # the derived record's files
mkdir -p "$out" || exit 2

work=$(mktemp -d "${TMPDIR:-/tmp}/topk-gpu-smoke.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
pkg=$work/pkg site=$work/site
mkdir -p "$pkg" "$site"
cp -r topk_migrate "$pkg/" && cp -r codemods "$pkg/topk_migrate/codemods" && cp -r fixtures "$pkg/topk_migrate/fixtures" || exit 2
cat > "$pkg/run_module.py" <<'PY'
import os, runpy, sys
from importlib.metadata import version
here = os.path.dirname(os.path.abspath(__file__))  # sys.path[0]: the assembly, not the working directory
import topk_migrate, topk_migrate.codemods  # noqa: E401
for m in (topk_migrate, topk_migrate.codemods):
    if not os.path.abspath(m.__file__).startswith(os.path.join(here, "topk_migrate") + os.sep):
        sys.exit(f"gpu_smoke: {m.__name__} imported from {m.__file__}, not from the assembled package in {here}")
if len(sys.argv) == 1:  # where the smoke's code comes from
    print("topk_migrate", topk_migrate.__version__, "assembled (codemods/ and fixtures/ under topk_migrate/)",
          "| python", sys.version.split()[0], "| libcst", version("libcst"), "| click", version("click"))
else:
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
PY
# libcst, click, packaging: those installed, else the wheels gpu_prepare.sh fetched (for the GPU machine's Python)
if ! python3 -c "import libcst, click, packaging" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target "$site" "$carry"/wheels/*.whl || exit 2
fi
export PYTHONPATH=$carry:$site:$pkg${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
py() { python3 "$pkg/run_module.py" "$@"; }  # python3 -m MODULE, from the assembly

{
  if [ "$device" = cuda ]; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
    python3 -c "import torch, sgl_kernel; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| sgl_kernel', sgl_kernel.__version__)"
  else
    python3 -c "import torch; print('DEVICE=cpu: a dry run on the torch references (no GPU, no kernel) | torch', torch.__version__)"
  fi
  py
  [ "$device" = cuda ] && { echo "# bench/gpu_emitter_probe.py: the emitters on edge rows"; python3 bench/gpu_emitter_probe.py; }
} > "$out/${prefix}environment.txt" 2>&1
cat "$out/${prefix}environment.txt"

rc=0
smoke() { py topk_migrate.codemods.pass_topk_length.smoke "$@"; }  # the rule's proof (its INFO.proof)
if [ -n "$prefix" ]; then
  smoke --lengths derived --device "$device" --json "$out/derived-example.json" 2>&1 | tee "$out/derived-example.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  if [ -f "$engine" ]; then
    smoke "$engine" --lengths derived --device "$device" --json "$out/derived-sglang-0.5.16.json" 2>&1 \
      | tee "$out/derived-sglang-0.5.16.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  else
    echo "engine file $engine not found (bench/gpu_prepare.sh)" | tee "$out/derived-sglang-0.5.16.txt"; rc=1
  fi
  echo "gpu_smoke: exit $rc"
  exit $rc
fi
smoke --device "$device" --json "$out/example.json" 2>&1 | tee "$out/example.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
if [ -f "$engine" ]; then
  smoke "$engine" --device "$device" --json "$out/sglang-0.5.16.json" 2>&1 | tee "$out/sglang-0.5.16.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  # negative control: must exit 1, with contract.* checks failing
  smoke "$engine" --device "$device" --emitter-fault tail 2>&1 | tee "$out/negative-control.txt"
  nc=${PIPESTATUS[0]}
  if [ "$nc" -eq 1 ] && grep -q "^contract\.fast_topk.* FAIL " "$out/negative-control.txt"; then
    echo "negative control: failed as it must (exit $nc)" | tee -a "$out/negative-control.txt"
  else
    echo "negative control: DID NOT FAIL on the contract (exit $nc)" | tee -a "$out/negative-control.txt"; rc=1
  fi
else
  echo "engine file $engine not found (bench/gpu_prepare.sh)" | tee "$out/sglang-0.5.16.txt"; rc=1
fi
if [ "$device" = cuda ]; then
  python3 bench/gpu_decode_topk.py --json "$out/decode-topk.json" 2>&1 | tee "$out/decode-topk.txt"
fi
echo "gpu_smoke: exit $rc"
exit $rc
