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
#   bench/gpu_prepare.sh                 # once, where PyPI is reachable: fills .carry/
#   bench/gpu_smoke.sh [ENGINE_FILE]     # on the GPU machine, from the repository root
#
# DEVICE=cpu runs the same pipeline on the torch references (a dry run; no decode facts).
set -uo pipefail
cd "$(dirname "$0")/.."
engine=${1:-.carry/engines/sglang-0.5.16/sglang/srt/layers/attention/dsa_backend.py}
device=${DEVICE:-cuda}
out=${OUT:-results/gpu}
mkdir -p "$out"

# The package as installed (codemods/ and fixtures/ live under topk_migrate/), without a build step.
pkg=/tmp/topk_pkg
rm -rf "$pkg" && mkdir -p "$pkg"
cp -r topk_migrate "$pkg/" && cp -r codemods "$pkg/topk_migrate/codemods" && cp -r fixtures "$pkg/topk_migrate/fixtures"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/wheels/*.whl || exit 2
export PYTHONPATH=$PWD/.carry:/tmp/site:$pkg${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, sgl_kernel; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| sgl_kernel', sgl_kernel.__version__)"
  [ "$device" = cuda ] && { echo "# bench/gpu_emitter_probe.py: the emitters on edge rows"; python3 bench/gpu_emitter_probe.py; }
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

rc=0
smoke() { python3 -m topk_migrate.smoke "$@"; }
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
