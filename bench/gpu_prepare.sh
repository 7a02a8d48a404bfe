#!/usr/bin/env bash
# Fetches what bench/gpu_smoke.sh needs and the GPU machine may be unable to download,
# into .carry/ (git-ignored). Run it from the repository root on a machine with PyPI access:
#
#   bench/gpu_prepare.sh            # then copy or mount the checkout, .carry/ included, on the GPU machine
#
# It writes
#   .carry/sgl_kernel/            sglang-kernel 0.4.6 (PyPI), trimmed to what the smoke loads (~25 MB):
#                                 the Python package, flashmla_ops (FlashMLA) and sm90/common_ops (the
#                                 top-k emitters). The whole wheel (~370 MB) works as well: pip install it.
#   .carry/wheels/                libcst (the codemod's parser), to pip-install on the GPU machine.
#   .carry/engines/sglang-0.5.16/ sglang 0.5.16's attention package from its PyPI wheel: dsa_backend.py,
#                                 the engine file under test, and dsa/ (its top-k path and seqlens clip).
#
# DEVICE=cpu fetches only what bench/gpu_smoke.sh's CPU dry run reads: the engine (no kernel, no wheels; the dry
# run uses the libcst, click and torch installed where it runs). CARRY=DIR writes DIR instead of .carry.
#
# What the GPU machine must have: x86-64 Linux; an sm90 GPU (H100 / H200: sglang-kernel 0.4.6's FlashMLA
# sparse kernels are built for sm_90a and sm_100f, and the smoke's timings were recorded on sm90); an NVIDIA
# driver for CUDA 13.0 (>= 580); Python 3.12 with torch 2.11.0+cu130, the build sglang-kernel 0.4.6 targets;
# click and packaging (topk-migrate's other dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${CARRY:-.carry}
device=${DEVICE:-cuda}
kernel=0.4.6
engine=0.5.16
cache=${XDG_CACHE_HOME:-$HOME/.cache}/topk-migrate-gpu
mkdir -p "$cache" "$dest/wheels" "$dest/engines"
platform=(--only-binary=:all: --python-version 3.12 --implementation cp
          --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

fetch() {  # fetch NAME VERSION [platform args...]: the wheel's path, downloaded once
  local name=$1 version=$2; shift 2
  local glob="$cache/${name//-/_}-$version-*.whl"
  if ! ls $glob >/dev/null 2>&1; then
    python3 -m pip download -q --no-deps "$@" -d "$cache" "$name==$version" >&2
  fi
  ls $glob | head -n1
}

kernel_whl=none
[ "$device" = cpu ] || kernel_whl=$(fetch sglang-kernel "$kernel" "${platform[@]}")
engine_whl=$(fetch sglang "$engine" --only-binary=:all: --python-version 3.11 --implementation cp \
             --platform manylinux_2_34_x86_64)
[ "$device" = cpu ] || python3 -m pip download -q --no-deps "${platform[@]}" -d "$dest/wheels" "libcst==1.9.0"

rm -rf "$dest/engines/sglang-$engine"
[ "$device" = cpu ] || rm -rf "$dest/sgl_kernel"
python3 - "$kernel_whl" "$engine_whl" "$dest" "$engine" <<'PY'
import sys, zipfile
kernel_whl, engine_whl, dest, engine = sys.argv[1:]
left_out = ("sgl_kernel/flash_ops.", "sgl_kernel/infllm_ops", "sgl_kernel/sm100/")  # not loaded on sm90
if kernel_whl != "none":
    with zipfile.ZipFile(kernel_whl) as z:
        for name in z.namelist():
            if name.startswith("sgl_kernel/") and not name.startswith(left_out):
                z.extract(name, dest)
attention = "sglang/srt/layers/attention/"
with zipfile.ZipFile(engine_whl) as z:
    for name in z.namelist():
        if name == attention + "dsa_backend.py" or name.startswith(attention + "dsa/"):
            z.extract(name, f"{dest}/engines/sglang-{engine}")
PY
du -sh "$dest"
if [ "$device" = cpu ]; then
  echo "ready: $dest (sglang $engine's DSA backend); DEVICE=cpu bench/gpu_smoke.sh runs the dry run"
  exit 0
fi
chmod +x "$dest"/sgl_kernel/*.so "$dest"/sgl_kernel/sm90/*.so
echo "ready: $dest (sglang-kernel $kernel, libcst, sglang $engine's DSA backend); run bench/gpu_smoke.sh on the GPU machine"
