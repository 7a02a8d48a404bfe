"""Re-extract the signature fixtures from the real releases (run from the repository root):

    python3 tests/data/bump/regenerate.py [FLASHMLA_CHECKOUT]

Each JSON is topk_migrate.bump's own reading of one release's FlashMLA wrapper; `origin` and
`sha256` name the wheel it came from. flashmla-upstream-9241ae3.json is read from a checkout of
github.com/deepseek-ai/FlashMLA at commit 9241ae3ef9bac614dd25e45e507e089f888280e0 (pass its path).
tests/test_bump_release.py (heavy tier) checks that the wheels still give these files.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from topk_migrate.bump.sources import load  # noqa: E402

HERE = Path(__file__).parent
WHEELS = {  # fixture name -> release
    "sgl-kernel-0.3.17": "sgl-kernel==0.3.17",
    "sgl-kernel-0.3.19": "sgl-kernel==0.3.19",
    "sglang-kernel-0.4.2.post2": "sglang-kernel==0.4.2.post2",
    "sglang-kernel-0.4.3": "sglang-kernel==0.4.3",
    "sglang-kernel-0.4.6": "sglang-kernel==0.4.6",
    "sgl-flash-mla-1.0.0": "sgl-flash-mla==1.0.0",
}
UPSTREAM = ("flashmla-upstream-9241ae3", "9241ae3ef9bac614dd25e45e507e089f888280e0")


def write(name: str, release) -> None:
    (HERE / f"{name}.json").write_text(json.dumps(release.to_json(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    for name, spec in WHEELS.items():
        write(name, load(spec))
    if len(sys.argv) > 1:
        r = load(sys.argv[1])
        r.dist, r.origin = "flash-mla", f"deepseek-ai/FlashMLA@{UPSTREAM[1]} flash_mla/flash_mla_interface.py"
        write(UPSTREAM[0], r)
