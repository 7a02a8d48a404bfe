"""What a fork controls cannot crash, hang, exhaust or steer a run (docs/threat-model.md).

One test per hole of the third review (shared/security3/REPORT.md) that is not bump's
(tests/test_trust_bump.py) or `audit --rev`'s (tests/test_trust_rev.py); each failed before its fix.
Memory is measured on the child (ru_maxrss), work by counting calls, never by timing.
"""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from helpers import KERNEL, ROOT
from topk_migrate import guard, kernels, project
from topk_migrate.model import InputError

HEADER = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n"
BACKEND = HEADER + '''

class Backend:
    def _forward(self, q, kv, idx, scale):
        return flash_mla_sparse_fwd(q, kv, idx, scale)

    def forward(self, q, kv, idx, scale, metadata):
        return self._forward(q, kv, idx, scale)

# uses metadata.nsa_cache_seqlens_int32
'''
OLD_PIN = "sglang-kernel==0.4.2.post2\n"  # topk_length raises TypeError there


def cli(*args, cwd=None, env=None, timeout=120):
    """The tool in a child, with its peak memory (MB). Measured through a small intermediate process:
    Linux carries the peak of the memory a process was forked from across exec (and a vfork'd child's
    is its parent's, here the whole pytest worker's), so the tool's own peak is only right under a
    parent that is itself small."""
    wrap = ("import resource, subprocess, sys\n"
            "r = subprocess.run([sys.executable, '-m', 'topk_migrate', *sys.argv[1:]])\n"
            "sys.stderr.write('MAXRSS=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, "-c", wrap, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, **(env or {})}, timeout=timeout)
    lines = r.stderr.splitlines()
    r.maxrss_mb = int(lines.pop()[len("MAXRSS="):]) // 1024 if lines and lines[-1].startswith("MAXRSS=") else -1
    r.stderr = "\n".join(lines) + ("\n" if lines else "")
    return r


def one_error_line(r, name: str) -> bool:
    out = r.stdout + r.stderr  # audit's table holds its errors on stdout
    errors = [ln for ln in out.splitlines() if "error: " in ln or "ERROR" in ln]
    return len(errors) == 1 and name in errors[0] and "Traceback" not in out


# -- hooks: file names are never options (finding 4) ---------------------------------------------


def hook_entries():
    """{id: entry} from .pre-commit-hooks.yaml, read as the flat file it is."""
    entries, hook = {}, None
    for line in (ROOT / ".pre-commit-hooks.yaml").read_text().splitlines():
        if line.startswith("- id:"):
            hook = line.split(":", 1)[1].strip()
        elif line.strip().startswith("entry:"):
            entries[hook] = line.split(":", 1)[1].strip()
    return entries


def test_hook_entries_end_with_double_dash_so_a_file_named_like_an_option_stays_a_file(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "requirements.txt").write_text(OLD_PIN)
    evil = "--kernel=sglang-kernel>=0.4.6,===.py"
    (tmp_path / evil).write_text("")
    entries = hook_entries()
    assert set(entries) == {"topk-migrate-check", "topk-migrate-fix"}
    for entry in entries.values():
        argv = shlex.split(entry)
        assert argv[0] == "topk-migrate" and argv[-1] == "--", entry
        # as pre-commit calls it: the entry, then every staged file name
        r = cli(*argv[1:], "backend.py", evil, cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert "manual" in r.stdout + r.stderr and "kernel too old" in r.stdout + r.stderr
    assert "topk_length" not in (tmp_path / "backend.py").read_text()  # the fix hook rewrote nothing


def test_an_option_after_double_dash_is_named_as_such():
    r = cli("check", "--", "--kernel=sglang-kernel==0.4.6")
    assert r.returncode == 2 and "after `--` every word is a path" in r.stderr and "Traceback" not in r.stderr


def test_arbitrary_equality_with_no_version_allows_nothing_not_everything():
    # `===.py` matched every version in the gate: with `>=0.4.6` beside it the site was "fixable"
    assert kernels.decide(">=0.4.6,===.py", "0.4.3") is None
    assert kernels.decide("===0.4.6", "0.4.3") is True


HUGE = "1" * 5000  # int() refuses a string of more than 4,300 digits: packaging's Version() a plain ValueError


@pytest.mark.parametrize("spec", [
    "==" + HUGE, "===" + HUGE, "!=" + HUGE, ">=" + HUGE, "==1." + HUGE + ".*",
    "~=1." + "9" * 4300 + ".0", "==" + "9" * 4300 + ".*",  # parse, but their next prefix has 4,301 digits
], ids=["eq", "arbitrary", "ne", "ge", "prefix", "compatible-bumped", "prefix-bumped"])
def test_a_version_packaging_cannot_read_decides_nothing(spec):
    # security4 #11: every file of the project was `internal error: ValueError: Exceeds the limit`
    assert kernels.decide(spec, "0.4.3") is None
    # beside other clauses: every version (a superset), or for === none (nothing decided either)
    assert kernels.decide(spec + ",<0.4", "0.4.3") is (None if spec.startswith("===") else False)
    pin = kernels._requirement("sglang-kernel" + spec, "requirements.txt")
    assert pin is None or kernels.decide(pin.spec, "0.4.3") is None
    assert kernels.decide("==0.4.6 and so on", "0.4.3") is None  # no specifier set at all (a METADATA Version)


@pytest.mark.parametrize("where", ["requirements.txt", "pyproject.toml", "--kernel"])
def test_a_5000_digit_version_in_a_pin_is_a_manual_site_not_an_internal_error(tmp_path, where):
    (tmp_path / "backend.py").write_text(BACKEND)
    pin = "sglang-kernel==" + HUGE
    args = ["--kernel", pin] if where == "--kernel" else []
    if where == "requirements.txt":
        (tmp_path / where).write_text(pin + "\n")
    elif where == "pyproject.toml":
        (tmp_path / where).write_text(f'[tool.topk-migrate]\nkernel = "{pin}"\n')
    r = cli("check", *args, "backend.py", cwd=tmp_path)
    assert r.returncode == 1 and "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[:500]
    assert re.match(r"backend\.py:\d+:\d+ manual .*kernel capability unknown", r.stdout), r.stdout[:500]


# -- parsers: what CPython keeps flat, LibCST nests (finding 7) -------------------------------------


@pytest.mark.parametrize("body", [
    "import " + ".".join(["a"] * 6000) + "\n",
    "from " + ".".join(["a"] * 6000) + " import b\n",
    "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s)" + " and a" * 8000 + "\n",
    "def f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s)" + " or a" * 8000 + "\n",
    "X = (" + " ".join(['"a"'] * 3000) + ")\n",
], ids=["import", "from-import", "and", "or", "joined-strings"])
def test_flat_chains_are_one_error_line_and_the_next_file_is_still_fixed(tmp_path, body):
    (tmp_path / "chain.py").write_text(HEADER + body)
    (tmp_path / "good.py").write_text(BACKEND)
    r = cli("apply", "--kernel", KERNEL, tmp_path / "chain.py", tmp_path / "good.py")
    assert r.returncode == 2 and one_error_line(r, "chain.py") and "nesting too deep" in r.stderr, r.stderr
    assert "topk_length" in (tmp_path / "good.py").read_text()


def test_the_nesting_measure_counts_what_libcst_nests():
    import ast

    text = "x = a" + " and a" * 300 + "\nimport " + ".".join("b" * 10) + "\ny = (" + " ".join(['"s"'] * 100) + ")\n"
    tree = ast.parse(text)
    assert guard.nesting(tree, text) >= 300  # the and-chain's 300 levels
    with pytest.raises(InputError):
        guard.measured(tree, text)
    joined = "y = (" + " ".join(['"s"'] * 250) + ")\n"
    assert guard.nesting(ast.parse(joined), joined) >= 250
    plain = 'y = "a docstring with many \\"quotes\\" ' + "'x' " * 100 + '"\n'
    assert guard.nesting(ast.parse(plain), plain) < 10  # one literal, however many quotes it holds


# -- pins: bounded work (findings 8, 19) -----------------------------------------------------------


def _meets_for(tmp_path, n: int, monkeypatch) -> int:
    d = tmp_path / str(n)
    d.mkdir()
    (d / "backend.py").write_text(BACKEND)
    (d / "requirements.txt").write_text("".join(f"sglang-kernel!=0.0.{i}\n" for i in range(n)))
    calls = [0]
    real = kernels._meet

    def counted(a, b):
        calls[0] += 1
        return real(a, b)

    monkeypatch.setattr(kernels, "_meet", counted)
    kernels.project_decision(str(d / "backend.py"), ("sglang-kernel", "sgl-kernel"), {"sglang-kernel": "0.4.3"})
    return calls[0]


def test_pin_arithmetic_does_not_grow_with_what_a_fork_writes(tmp_path, monkeypatch):
    # each `!=` split every interval held: 4,000 lines (95 KB) took 40 s per process
    small, big = _meets_for(tmp_path, 500, monkeypatch), _meets_for(tmp_path, 4000, monkeypatch)
    assert big <= small + 10, (small, big)
    few = _meets_for(tmp_path, 3, monkeypatch)
    assert few > 0  # a real handful is still weighed


def test_thousands_of_clauses_are_undecided_in_one_short_reason(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "requirements.txt").write_text("".join(f"sglang-kernel!=0.0.{i}\n" for i in range(4000)))
    r = cli("check", tmp_path / "backend.py", timeout=60)
    assert r.returncode == 1 and "manual" in r.stdout and len(r.stdout) < 2000, r.stdout[:500]


def test_a_long_requirements_chain_is_no_internal_error(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "requirements.txt").write_text(OLD_PIN + "-r r0.txt\n")
    for i in range(1200):
        (tmp_path / f"r{i}.txt").write_text(f"-r r{i + 1}.txt\n")
    r = cli("check", tmp_path / "backend.py")
    assert r.returncode == 1 and "kernel too old" in r.stdout and "internal error" not in r.stderr, r.stderr


# -- project files: bounded in size and memory (findings 10, 11, 13) -------------------------------


def test_a_big_setup_py_is_not_parsed_outside_the_memory_bound(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "setup.py").write_text("X = [" + "0," * 2_000_000 + "]\n")  # 4 MB: 2 GB in ast.parse
    r = cli("check", tmp_path / "backend.py", env={"TOPK_MIGRATE_MAX_MEMORY": "256"})
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.maxrss_mb < 400, r.maxrss_mb


def test_a_vendored_interface_too_big_to_read_for_facts_decides_nothing(tmp_path):
    pkg = tmp_path / "sgl_kernel"
    pkg.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "flash_mla.py").write_text("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, topk_length=None):\n"
                                      "    pass\n" + "Y = [" + "0," * 700_000 + "]\n")
    assert kernels.read_interface(str(pkg / "flash_mla.py"), "flash_mla_sparse_fwd") is None


@pytest.mark.parametrize("cmd", [("check", "."), ("apply", "--diff", "."), ("audit", "."),
                                 ("audit", ".", "--format", "sarif", "-o", "report.sarif")])
def test_a_deeply_nested_pyproject_is_one_error_line_and_exit_2(tmp_path, cmd):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "pyproject.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    r = cli(*cmd, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nested too deep" in r.stderr, r.stderr
    if "-o" in cmd:  # the code scan still gets a report, holding the error
        doc = json.loads((tmp_path / "report.sarif").read_text())
        assert "nested too deep" in json.dumps(doc)


def test_a_sparse_candidate_is_refused_before_it_is_read(tmp_path):
    f = tmp_path / "a.py"
    with open(f, "wb") as out:
        out.write(HEADER.encode())
        out.truncate(2 << 30)  # 2 GiB, a few KB on disk
    (tmp_path / "b.py").write_bytes(b"x = 1\n")
    with open(tmp_path / "b.py", "r+b") as out:
        out.truncate(1 << 30)  # 1 GiB with no kernel name: nothing to do, scanned in windows
    for cmd in (("check", f, tmp_path / "b.py"), ("audit", tmp_path)):
        r = cli(*cmd, env={"TOPK_MIGRATE_MAX_MEMORY": "256"})
        assert r.returncode == 2 and one_error_line(r, "a.py") and "file too large" in r.stdout + r.stderr, r.stdout
        assert r.maxrss_mb < 300, (cmd, r.maxrss_mb)


def test_limits_from_the_environment_take_ascii_digits_only(tmp_path):
    (tmp_path / "a.py").write_text(BACKEND)
    r = cli("check", tmp_path / "a.py", env={"TOPK_MIGRATE_MAX_BYTES": "\u0663", "TOPK_MIGRATE_MAX_MEMORY": "lots"})
    assert r.returncode == 1, r.stderr  # `٣` once meant 3 bytes: every file "too large"
    assert "TOPK_MIGRATE_MAX_BYTES=\u0663 is not a whole number" in r.stderr and "TOPK_MIGRATE_MAX_MEMORY" in r.stderr


# -- configuration: where a project ends (finding 12) ----------------------------------------------


@pytest.fixture
def shared_dir(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)  # as /tmp is
    return d


@pytest.mark.parametrize("planted", ['disable = ["pass-topk-length"]', f'kernel = "{KERNEL}"'])
def test_a_pyproject_planted_in_a_shared_parent_governs_nothing(shared_dir, planted):
    (shared_dir / "pyproject.toml").write_text(f"[tool.topk-migrate]\n{planted}\n")
    alice = shared_dir / "alice"
    alice.mkdir()
    (alice / "backend.py").write_text(BACKEND)
    (alice / "requirements.txt").write_text(OLD_PIN)
    r = cli("check", alice / "backend.py")
    assert r.returncode == 1 and "kernel too old" in r.stdout, r.stdout + r.stderr
    bob = shared_dir / "bob"  # no marker file at all: the climb stops below the shared directory
    bob.mkdir()
    (bob / "backend.py").write_text(BACKEND)
    r = cli("check", bob / "backend.py")
    assert r.returncode == 1 and "kernel capability unknown" in r.stdout, r.stdout + r.stderr


def test_a_folders_own_requirements_file_bounds_its_project(tmp_path):
    # outside any repository, alice's requirements.txt is hers: a parent's pyproject.toml is not
    (tmp_path / "pyproject.toml").write_text(f'[tool.topk-migrate]\nkernel = "{KERNEL}"\n')
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / "backend.py").write_text(BACKEND)
    (alice / "requirements.txt").write_text(OLD_PIN)
    assert project.project_root(str(alice / "backend.py")) == str(alice)
    r = cli("check", alice / "backend.py")
    assert r.returncode == 1 and "kernel too old" in r.stdout, r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a file of another user needs root (CI runs as root)")
def test_another_users_file_beside_yours_in_a_shared_directory_is_not_read(shared_dir):
    (shared_dir / "backend.py").write_text(BACKEND)
    (shared_dir / "pyproject.toml").write_text('[tool.topk-migrate]\ndisable = ["pass-topk-length"]\n')
    (shared_dir / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    for name in ("pyproject.toml", "requirements.txt"):
        os.chown(shared_dir / name, 54321, 54321)
    r = cli("check", "-v", shared_dir / "backend.py")
    assert r.returncode == 1 and "kernel capability unknown" in r.stdout, r.stdout + r.stderr
    assert "[tool.topk-migrate] read from" not in r.stderr


def test_verbose_names_the_pyproject_used(tmp_path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.topk-migrate]\nkernel = "{KERNEL}"\n')
    (tmp_path / "backend.py").write_text(BACKEND)
    r = cli("check", "-v", tmp_path / "backend.py")
    assert f"[tool.topk-migrate] read from {tmp_path / 'pyproject.toml'}" in r.stderr, r.stderr


# -- output: escaped where a terminal shows it (finding 20) ----------------------------------------


def test_diff_bodies_are_escaped_on_a_terminal_and_exact_in_a_pipe(tmp_path):
    from topk_migrate import api
    from topk_migrate import cli as tool

    evil = "\x1b]0;owned\x07\x1b[1A\x1b[2K"
    src = BACKEND.replace("def _forward(self, q, kv, idx, scale):", f"def _forward(self, q, kv, idx, scale):  # {evil}")
    (tmp_path / "backend.py").write_text(src)
    (f,) = api.run([str(tmp_path / "backend.py")], kernel=KERNEL).files
    shown = tool._diff_text(f, terminal=True)
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b]0;owned\\x07" in shown
    assert "\t" not in src or "\t" in shown
    piped = cli("apply", "--diff", "--kernel", KERNEL, "backend.py", cwd=tmp_path)
    assert evil in piped.stdout  # byte-exact for git apply (click.echo once stripped the escapes from a pipe)
    r = subprocess.run(["git", "apply", "-"], input=piped.stdout, text=True, cwd=tmp_path, capture_output=True)
    assert r.returncode == 0 and "topk_length" in (tmp_path / "backend.py").read_text(), r.stderr


def test_the_smoke_table_escapes_the_files_own_text():
    from topk_migrate.codemods.pass_topk_length.smoke.report import Report

    rep = Report("name\x1b]0;smoke-owned\x07.py", "cpu")
    rep.add("opt_out", False, "reason: \x1b[2J cleared")
    table = rep.table()
    assert "\x1b" not in table and "\x07" not in table and "\\x1b]0;smoke-owned\\x07" in table


# -- smoke: says what it runs (finding 22) ---------------------------------------------------------


def test_smoke_help_says_it_runs_the_files_code():
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "smoke", "--help"], capture_output=True, text=True)
    text = " ".join(r.stdout.split())
    assert "RUNS CODE FROM PATH" in text and "TOPK_MIGRATE_SMOKE" in text
    assert "runs code from the file" in " ".join((ROOT / "README.md").read_text().split())


def test_a_smoke_module_whose_imports_fail_is_a_failed_check_not_a_traceback(tmp_path):
    pytest.importorskip("torch")
    src = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text()
    if "TOPK_MIGRATE_SMOKE" not in src:
        pytest.skip("the bundled example is not a runnable module")
    lines = src.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith(("import ", "from ")))
    lines.insert(at, "import sglang.srt.server_args  # not installed here\n")
    (tmp_path / "b.py").write_text("".join(lines))
    r = subprocess.run([sys.executable, "-m", "topk_migrate", "smoke", "--device", "cpu", str(tmp_path / "b.py")],
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr + r.stdout, (r.stdout + r.stderr)[-2000:]
    assert r.returncode in (1, 2), r.stdout[-1000:]


def test_a_kernel_pinned_only_by_an_extra_decides_nothing_for_the_base_install(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["torch"]\n[project.optional-dependencies]\n'
        f'gpu = ["{KERNEL}"]\n')
    r = cli("check", tmp_path / "backend.py")
    assert r.returncode == 1 and " manual " in r.stdout and 'extra == "gpu"' in r.stdout, r.stdout
    # with the kernel in the base install too, the extra adds nothing undecided
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "x"\ndependencies = ["{KERNEL}"]\n[project.optional-dependencies]\ngpu = ["{KERNEL}"]\n')
    r = cli("check", tmp_path / "backend.py")
    assert " fixable " in r.stdout, r.stdout


def test_bump_on_a_deeply_nested_pyproject_is_one_error_line_not_a_verdict(tmp_path):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "pyproject.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    rel = tmp_path / "k" / "sgl_kernel"
    rel.mkdir(parents=True)
    (rel / "flash_mla.py").write_text("def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    pass\n")
    r = cli("bump", "--from", tmp_path / "k", "--to", tmp_path / "k", ".", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nested too deep" in r.stderr, r.stderr
