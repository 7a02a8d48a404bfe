"""No input crashes or hangs a run: nesting that LibCST's parser cannot survive is refused
before it sees it (one line for that file, the others go on), a crash in a parser child or
an audit worker costs one file, and the run goes on with a new worker."""
import ast
import os
import signal
import subprocess
import sys

import pytest

from helpers import KERNEL, ROOT
from topk_migrate import api, guard
from topk_migrate import audit as audit_mod
from topk_migrate.audit import audit
from topk_migrate.model import InputError

BACKEND = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text()
HEAD = "from sgl_kernel import flash_mla_sparse_fwd\n\ndef f(q, kv, i, m):\n"
CALL = "flash_mla_sparse_fwd(q, kv, i, 1.0)"


def check(*paths, timeout=120):
    return subprocess.run([sys.executable, "-m", "topk_migrate", "check", "--kernel", KERNEL, *map(str, paths)],
                          capture_output=True, text=True, timeout=timeout)


def tree_with(tmp_path, name, text):
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / name).write_text(text)
    return tmp_path


def test_3000_nested_parentheses_are_one_error_line_not_a_segfault(tmp_path):
    d = tree_with(tmp_path, "deep.py", HEAD + "    return " + "(" * 3000 + CALL + ")" * 3000 + "\n")
    r = check(d)
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    errors = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert errors == [f"{d / 'deep.py'}: error: syntax error at line 4: too many nested parentheses"]
    assert "backend.py:" in r.stdout  # the other file's sites are still listed


def test_10000_chained_additions_are_refused_fast(tmp_path):
    d = tree_with(tmp_path, "chain.py", HEAD + "    return " + CALL + " + 1" * 10000 + "\n")
    r = check(d, timeout=60)  # the old code ran for minutes, then segfaulted
    assert r.returncode == 2
    (err,) = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert err.startswith(f"{d / 'chain.py'}: error: expression nesting too deep for a safe rewrite: ")
    assert f"limit {guard.MAX_NESTING}" in err and "backend.py:" in r.stdout


@pytest.mark.parametrize("shape", ["+ 1", ".a", "()", "[0]", " ** 1"])
def test_every_depth_under_the_limit_is_analysed_and_every_one_over_is_refused(tmp_path, shape):
    """Property over nesting depths: at or under the limit the engine answers (no RecursionError,
    no crash); over it, the one-line refusal. A block counts BLOCK_COST levels."""
    seen = set()
    for blocks in (0, 30, 60, 90):
        for chain in (0, 40, 80, 120, 160, 200, 240, 330):
            ind = "    " * (blocks + 1)
            body = "".join("    " * (k + 1) + "if x:\n" for k in range(blocks)) + ind + "y = " + CALL + shape * chain + "\n"
            text = HEAD + body
            try:
                tree = guard.parse_checked(text, "x.py")
            except InputError as e:
                assert str(e).startswith("expression nesting too deep for a safe rewrite: ")
                seen.add("refused")
                continue
            depth = guard.nesting(tree)
            assert depth <= guard.MAX_NESTING
            sites = api.migrate_source(text, str(tmp_path / "x.py"), kernel=KERNEL).sites
            assert [s.callee for s in sites] == ["sgl_kernel.flash_mla_sparse_fwd"], (blocks, chain)
            seen.add("isolated" if depth > guard.ISOLATE_NESTING else "inline")
    assert seen == {"refused", "isolated", "inline"}


def _crash():
    """A planted segfault, without the stack pytest-xdist's faulthandler would print for it."""
    import faulthandler

    faulthandler.disable()
    os.kill(os.getpid(), signal.SIGSEGV)


def test_a_crash_in_the_parser_child_is_that_files_error(tmp_path, monkeypatch):
    real = api._migrate

    def crashing(source, *a):
        if "CRASH" in source:
            _crash()
        return real(source, *a)

    monkeypatch.setattr(api, "_migrate", crashing)  # the forked child inherits it
    deep = HEAD + "    # CRASH\n    return " + CALL + " + 1" * 120 + "\n"  # deep enough to be isolated
    (tmp_path / "a.py").write_text(deep)
    (tmp_path / "b.py").write_text(BACKEND)
    report = api.run([str(tmp_path)], kernel=KERNEL)
    errors = {os.path.basename(f.path): f.error for f in report.errors}
    assert errors == {"a.py": "the parser crashed on this file (signal 11 (SIGSEGV)); skipped, the other files go on"}
    assert any(s.path.endswith("b.py") for s in report.sites)


def test_syntax_newer_than_this_python_still_reaches_libcst_isolated(tmp_path, monkeypatch):
    calls = []
    real = guard.isolated
    monkeypatch.setattr(guard, "isolated", lambda fn, *a: calls.append(a[1]) or real(fn, *a))
    (tmp_path / "bad.py").write_text(HEAD + "    return " + CALL + " +\n")
    report = api.run([str(tmp_path)], kernel=KERNEL)
    assert [f.error for f in report.files] == ["syntax error at line 4: invalid syntax"]
    assert calls == [str(tmp_path / "bad.py")]


def test_audit_replaces_workers_that_die_and_goes_on(tmp_path, monkeypatch):
    names = [f"m{i}.py" for i in range(8)] + ["crash1.py", "crash2.py", "crash3.py"]
    for n in names:  # calls without topk_length: the engine's workers read them
        (tmp_path / n).write_text(HEAD + "    return " + CALL + "\n")
    real = audit_mod.analyse

    def dying(path, *a):
        if "crash" in os.path.basename(path):
            _crash()
        return real(path, *a)

    monkeypatch.setattr(audit_mod.pool, "analyse", dying)
    r = audit([str(tmp_path)], jobs=2)  # 3 deaths with 2 workers: only replacements can finish the run
    assert sorted(s.path for s in r.sites) == sorted(n for n in names if not n.startswith("crash"))
    assert r.errors == [(f"crash{i}.py", "the worker process analysing it died (signal 11 (SIGSEGV)); skipped")
                        for i in (1, 2, 3)]


# -- heavy tier: a property over nesting shapes and depths, through the CLI ---------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

_SHAPES = ["+ b", ".a", "()", "[0]", " ** c", " if x else y"]


@pytest.mark.heavy
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 99), st.lists(st.tuples(st.sampled_from(_SHAPES), st.integers(1, 400)), min_size=1, max_size=3),
       st.integers(0, 250))
def test_any_nesting_is_analysed_or_refused_never_a_crash(tmp_path_factory, blocks, chains, parens):
    d = tmp_path_factory.mktemp("nest")
    expr = CALL
    for shape, n in chains:
        expr = expr + shape * n
    expr = "(" * parens + expr + ")" * parens
    body = "".join("    " * (k + 1) + "if x:\n" for k in range(blocks)) + "    " * (blocks + 1) + "y = " + expr + "\n"
    tree_with(d, "deep.py", HEAD + body)
    r = check(d, timeout=300)
    assert r.returncode in (1, 2), r.stderr[-500:]  # 139 would be a crash
    errors = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert all("deep.py: error: " in e and ("nesting too deep" in e or "too many" in e) for e in errors), errors
    assert "backend.py:" in r.stdout and ("deep.py:" in r.stdout) != bool(errors)


def test_depth_is_measured_on_what_libcst_parses(tmp_path):
    """audit parses the narrowed text: a too-deep expression in a function it stubs out never reaches
    LibCST, so the file's sites are classified; a rewrite parses the whole file, so apply refuses it."""
    deep = "def unrelated():\n    return 1" + " + 1" * 1000 + "\n\n"
    f = tmp_path / "m.py"
    f.write_text(BACKEND + "\n\n" + deep)
    r = audit([str(tmp_path)], kernel=KERNEL, jobs=1)
    assert r.errors == [] and {s.status.value for s in r.sites} == {"fixable"}
    before = f.read_text()
    out = api.run([str(f)], kernel=KERNEL, write=True)
    assert [e.error for e in out.errors] and "nesting too deep" in out.errors[0].error
    assert f.read_text() == before


def _nesting_by_iter_child_nodes(tree, text):
    """guard.nesting as first written, over ast.iter_child_nodes: the oracle of its faster walk."""
    deepest, todo = 0, [(tree, 0)]
    lines = guard._Lines(text)
    while todo:
        node, depth = todo.pop()
        depth += guard.BLOCK_COST if isinstance(node, ast.stmt) else 1
        if isinstance(node, guard._FLAT_NODES):
            depth += guard._flat_run(node, lines)
        deepest = max(deepest, depth)
        todo.extend((c, depth) for c in ast.iter_child_nodes(node))
    return deepest


def test_nesting_walks_what_iter_child_nodes_walks():
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "topk_migrate").rglob("*.py"))]
    texts += ["x = " + "(" * 60 + "1" + ")" * 60, "if a:\n" + "".join(f"{' ' * i}if b:\n" for i in range(1, 30))
              + " " * 30 + "pass\n", "y = a and b and c and d\nimport a.b.c\nz = 'a' 'b' f'{c}'\n"]
    depths = [guard.nesting(ast.parse(t), t) for t in texts]
    assert depths == [_nesting_by_iter_child_nodes(ast.parse(t), t) for t in texts]
    assert len(set(depths)) > 5


def test_the_guards_tree_is_shared_with_later_readers_of_the_same_text_in_a_run():
    from topk_migrate import run_context

    text = "import a\nx = a.b(1)\n"
    with_run = run_context.in_run(lambda: (guard.parse_checked(text, "m.py"), guard.tree_of(text),
                                           guard.tree_of(text + "y = 2\n")))
    first, again, other = with_run()
    assert again is first and other is not first and len(other.body) == 3
    assert guard.tree_of(text) is not first  # outside a run nothing is kept
