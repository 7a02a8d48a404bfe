#!/usr/bin/env bash
# The whole GPU smoke matrix in one call: the bundled example backend and a real
# engine file (sglang 0.5.16's dsa_backend.py), each patched by the codemod and
# run against the real FlashMLA kernel. Writes tables + JSON to $OUT (default
# results/gpu). Exit 0 only if both smokes pass.
#
#   bench/gpu_smoke.sh [ENGINE_FILE]     # default: .gpuin/sglang-0.5.16/dsa_backend.py
#
# Needs .carry/ (../shared/device/prepare_carry.sh): sgl_kernel + libcst wheels.
set -uo pipefail
cd "$(dirname "$0")/.."
engine=${1:-.gpuin/sglang-0.5.16/dsa_backend.py}
device=${DEVICE:-cuda}  # DEVICE=cpu: a dry run of the same pipeline on the torch reference
out=${OUT:-results/gpu}
mkdir -p "$out"

# The package as installed (codemods/ and fixtures/ live under topk_migrate/),
# without a build step: the GPU machine has no index to build from.
pkg=/tmp/topk_pkg
rm -rf "$pkg" && mkdir -p "$pkg"
cp -r topk_migrate "$pkg/" && cp -r codemods "$pkg/topk_migrate/codemods" && cp -r fixtures "$pkg/topk_migrate/fixtures"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/wheels/*.whl || exit 2
export PYTHONPATH=$PWD/.carry:/tmp/site:$pkg${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, sgl_kernel; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| sgl_kernel', sgl_kernel.__version__)"
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

rc=0
smoke() { python3 -m topk_migrate.smoke "$@"; }
smoke --device "$device" --json "$out/example.json" 2>&1 | tee "$out/example.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
if [ -f "$engine" ]; then
  smoke "$engine" --device "$device" --json "$out/sglang-0.5.16.json" 2>&1 | tee "$out/sglang-0.5.16.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
  echo "engine file $engine not found" | tee "$out/sglang-0.5.16.txt"; rc=1
fi
echo "gpu_smoke: exit $rc"
exit $rc
