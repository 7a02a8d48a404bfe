#!/usr/bin/env bash
# Build the audit benchmark tree: every .py file (plus dist-info METADATA and
# RECORD, which the kernel gate reads) of four real wheels from PyPI, laid out
# as pip would in site-packages. About 13k .py files, 220 MB.
#
#   bench/build_tree.sh [TREE]      (default /tmp/topk-bench-tree)
#
# Wheels are cached in $TOPK_BENCH_CACHE (default ~/.cache/topk-migrate-bench);
# a finished tree is reused while its stamp matches the pins below.
set -euo pipefail
TREE=${1:-/tmp/topk-bench-tree}
CACHE=${TOPK_BENCH_CACHE:-$HOME/.cache/topk-migrate-bench}
PY=${PYTHON:-python3}
PINS="sglang==0.5.23 vllm==0.33.0 transformers==5.24.0 torch==2.13.0"
STAMP="$TREE/.topk-bench-tree"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then
    echo "$TREE: already built ($PINS)"
    exit 0
fi
mkdir -p "$CACHE"
# torch==2.13.0 resolves to the CPU build where pip is configured with it (find-links).
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$CACHE" $PINS
rm -rf "$TREE.tmp"
mkdir -p "$TREE.tmp"
"$PY" - "$CACHE" "$TREE.tmp" $PINS <<'PYEOF'
import glob, os, sys, zipfile
cache, dest, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
for pin in pins:
    name, version = pin.split("==")
    wheels = sorted(glob.glob(os.path.join(cache, f"{name}-{version}-*.whl")) + glob.glob(os.path.join(cache, f"{name}-{version}+*.whl")))
    if not wheels:
        sys.exit(f"no wheel for {pin} in {cache}")
    with zipfile.ZipFile(wheels[-1]) as z:
        keep = [n for n in z.namelist() if n.endswith(".py") or
                (".dist-info/" in n and n.rsplit("/", 1)[-1] in ("METADATA", "RECORD"))]
        z.extractall(dest, keep)
        print(f"{os.path.basename(wheels[-1])}: {sum(n.endswith('.py') for n in keep)} .py files")
PYEOF
rm -rf "$TREE"
mv "$TREE.tmp" "$TREE"
echo "$PINS" > "$STAMP"
echo "$TREE: $(find "$TREE" -name '*.py' | wc -l) .py files, $(du -sm "$TREE" | cut -f1) MB"
