"""Re-extract the signature fixtures from the real releases (run from the repository root):

    python3 tests/data/bump/regenerate.py [FLASHMLA_CHECKOUT]

Each JSON is topk_migrate.bump's own reading of one release's FlashMLA wrapper; `origin` and
`sha256` name the wheel it came from. flashmla-upstream-<commit>.json are read from
github.com/deepseek-ai/FlashMLA at those commits (pass a clone's git directory: each commit's
flash_mla/flash_mla_interface.py is read with `git show`).
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
    "sglang-kernel-0.4.10": "sglang-kernel==0.4.10",
    "sgl-flash-mla-1.0.0": "sgl-flash-mla==1.0.0",
}
UPSTREAM = {  # fixture name -> FlashMLA commit
    "flashmla-upstream-9241ae3": "9241ae3ef9bac614dd25e45e507e089f888280e0",  # the newest stored
    "flashmla-upstream-c28eca9": "c28eca99dbc664dd2716415ed03492afe5fefade",  # get_mla_metadata renamed
    "flashmla-upstream-c28eca9-parent": "261330bb6dfacdff8ff4b67e126417863b31aa72",
}


def write(name: str, release) -> None:
    (HERE / f"{name}.json").write_text(json.dumps(release.to_json(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    for name, spec in WHEELS.items():
        write(name, load(spec))
    if len(sys.argv) > 1:
        import subprocess
        import tempfile

        for name, commit in UPSTREAM.items():
            with tempfile.TemporaryDirectory() as d:
                module = Path(d) / "flash_mla" / "flash_mla_interface.py"
                module.parent.mkdir()
                module.write_bytes(subprocess.run(
                    ["git", "--git-dir", sys.argv[1], "show", f"{commit}:flash_mla/flash_mla_interface.py"],
                    check=True, capture_output=True).stdout)
                r = load(d)
            r.dist, r.origin = "flash-mla", f"deepseek-ai/FlashMLA@{commit} flash_mla/flash_mla_interface.py"
            write(name, r)
