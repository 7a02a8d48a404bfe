"""results/gpu/speedup.svg is what bench/gpu_speedup_plot.py draws from results/gpu/*.json."""
import importlib.util
import subprocess
import sys
import xml.etree.ElementTree as ET

from helpers import ROOT

SCRIPT = ROOT / "bench" / "gpu_speedup_plot.py"
SVG = ROOT / "results" / "gpu" / "speedup.svg"


def plot():
    spec = importlib.util.spec_from_file_location("gpu_speedup_plot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_svg_is_the_render_of_the_records():
    p = plot()
    series = p.load(p.reference_records())
    assert SVG.read_text(encoding="utf-8") == p.render(series), "run python3 bench/gpu_speedup_plot.py"
    ET.fromstring(SVG.read_text(encoding="utf-8"))  # well-formed


def test_it_plots_the_readme_table():
    """The engine's record comes first, with the README table's figures, and the ideal curve
    reproduces each recorded ideal."""
    p = plot()
    main = p.load(p.reference_records())[0]
    assert main["name"] == "sglang-0.5.16"
    text = SVG.read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text()
    for s_q, speedup, ideal in main["ramp"]:
        assert abs(p.ramp_ideal(s_q, main["topk"]) - ideal) < 1e-9
        if s_q >= 4096:
            assert f"| s_q {s_q} | {speedup:.3f}x | {ideal:.3f}x |" in readme
        assert f"{speedup:.3f}x" in text
    assert [q for q, _, _ in main["full"]] == [8192] and "every row full" in text
    assert "results/gpu/speedup.svg" in readme


def test_check_mode(tmp_path):
    run = [sys.executable, str(SCRIPT), "--check"]
    assert subprocess.run(run, capture_output=True).returncode == 0
    stale = tmp_path / "s.svg"
    stale.write_text("<svg/>")
    r = subprocess.run(run + ["-o", str(stale)], capture_output=True, text=True)
    assert r.returncode == 1 and "bench/gpu_speedup_plot.py" in r.stderr
