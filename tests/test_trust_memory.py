"""Memory is bounded: each stage (ast, LibCST) is estimated from a token count before it
runs, and a file over the bound is one error line, never the OOM killer; big files are
classified on their narrowed text."""
import subprocess
import sys

import pytest

from topk_migrate import api, memory

HEAD = "from sgl_kernel import flash_mla_sparse_fwd\n"
CALL = "\n\ndef f(q, kv, i, m):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m.lens)\n"


def test_token_estimate_bounds_the_real_count():
    import io
    import tokenize

    src = open(api.__file__).read() + HEAD + "x = 1\n" * 100 + "y = [1,2,3]  # c\n"
    real = sum(1 for t in tokenize.generate_tokens(io.StringIO(src).readline)
               if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                 tokenize.ENDMARKER, tokenize.COMMENT))
    assert real <= memory.tokens(src) <= 3 * real


def test_a_file_over_the_bound_is_refused_before_parsing_in_small_memory(tmp_path):
    """The issue's 8 MB file (one import, a million `x = 1`): the old code took 3.4 GB.
    Here the child runs with a 1 GiB address-space limit: parsing it would die; refusing it does not."""
    p = tmp_path / "big.py"
    p.write_text(HEAD + "x = 1\n" * 1_390_000)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from topk_migrate.cli import main; sys.argv = ['topk-migrate', 'check', sys.argv[1]]; main()")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-1000:]
    (err,) = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert "too big to parse within the memory bound: about" in err and "limit 2048 MiB" in err


def test_budget_is_configurable_and_applies_per_stage(tmp_path, monkeypatch):
    p = tmp_path / "m.py"
    p.write_text(HEAD + "x = 1\n" * 2000 + CALL)
    assert api.process_file(str(p)).error is None
    monkeypatch.setenv(memory.BUDGET_ENV, "1")  # 1 MiB: 2,000 lines need more
    err = api.process_file(str(p)).error
    assert err.startswith("too big to parse within the memory bound") and "limit 1 MiB" in err


def test_big_files_are_classified_on_narrowed_text(tmp_path, monkeypatch):
    """Over NARROW_BYTES, LibCST reads only what narrowing keeps unless there is a rewrite to make
    (and nothing at all where the rule's quick classifier answers)."""
    p = tmp_path / "m.py"
    p.write_text(HEAD + "".join(f"def g{i}(a):\n    return a + {i}\n" for i in range(3000)) + CALL)
    seen = []
    real = api._migrate
    monkeypatch.setattr(api, "_migrate", lambda text, *a: seen.append(text) or real(text, *a))
    whole = api.process_file(str(p))
    monkeypatch.setattr(api, "NARROW_BYTES", 1000)
    quick = api.process_file(str(p))
    monkeypatch.setenv("TOPK_MIGRATE_NO_QUICK", "1")
    small = api.process_file(str(p))
    assert [s.status.value for s in small.sites] == [s.status.value for s in whole.sites] == ["compliant"]
    assert small.error is None and quick.sites == small.sites and len(seen) == 2 and seen[0] == p.read_text()
    import ast
    assert len(ast.parse(seen[0]).body) > 3000 and len(ast.parse(seen[1]).body) < 10  # LibCST saw the gist


@pytest.mark.heavy  # generates and analyses a file near the bound
def test_a_big_file_is_classified_within_the_bound_even_when_its_rewrite_is_not(tmp_path, monkeypatch):
    """The narrowed text is what LibCST holds for classification: it is what the bound counts.
    A rewrite needs the whole file: over the bound, the sites are still listed, with one error."""
    from topk_migrate import narrow

    body = "".join(f"    a = b.c(a, d[{k}], e=f + {k})\n" for k in range(10))
    fixable = (HEAD + "".join(f"def g{i}(a):\n{body}    return a\n" for i in range(3000)) +
               "\n\ndef f(q, kv, i, metadata):\n    return flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=None)\n"
               "\n\ndef h(q, kv, i, metadata):\n    n = metadata.dsa_cache_seqlens_int32\n"
               "    return flash_mla_sparse_fwd(q, kv, i, 1.0)\n")
    p = tmp_path / "m.py"
    p.write_text(fixable)
    (tmp_path / "requirements.txt").write_text("sglang-kernel==0.4.6\n")
    text = p.read_text()
    small = narrow.narrow(text)
    need = lambda t: memory.tokens(t) * memory.REWRITE_BYTES_PER_TOKEN + len(t) * memory.BYTES_PER_BYTE  # noqa: E731
    parse = memory.tokens(text) * memory.PARSE_BYTES_PER_TOKEN + len(text) * memory.BYTES_PER_BYTE
    budget_mib = max(need(narrow.without_stubs(small)), parse) // (1 << 20) + 2
    assert need(text) > budget_mib << 20 > need(narrow.without_stubs(small))
    monkeypatch.setenv(memory.BUDGET_ENV, str(budget_mib))
    out = api.process_file(str(p), kernel="sglang-kernel==0.4.6", write=True)
    assert [s.status.value for s in out.sites] == ["opt-out", "fixable"]
    assert out.error.startswith("too big to rewrite within the memory bound") and not out.written
    assert p.read_text() == fixable


def test_a_file_the_quick_classifier_answers_for_is_not_held_to_libcsts_bound(tmp_path, monkeypatch):
    """The bound on what LibCST would hold guards LibCST: a narrowed file whose calls all pass topk_length is
    classified from the parse already made, however many calls it has; one that needs LibCST is refused."""
    from topk_migrate import narrow

    calls = "".join(f"    o{k} = flash_mla_sparse_fwd(q, kv, i, 1.0, topk_length=m.lens)\n" for k in range(400))
    p = tmp_path / "m.py"
    p.write_text(HEAD + "\n\ndef f(q, kv, i, m):\n" + calls + "    return o0\n")
    text = p.read_text()
    need = memory.tokens(narrow.without_stubs(narrow.narrow(text))) * memory.REWRITE_BYTES_PER_TOKEN
    parse = memory.tokens(text) * memory.PARSE_BYTES_PER_TOKEN + len(text) * memory.BYTES_PER_BYTE
    budget_mib = parse // (1 << 20) + 1
    assert need > budget_mib << 20  # LibCST would be over the bound; CPython's parse is not
    monkeypatch.setenv(memory.BUDGET_ENV, str(budget_mib))
    out = api.process_file(str(p), narrowed=True)
    assert out.error is None and [s.status.value for s in out.sites] == ["compliant"] * 400
    p.write_text(text.replace("1.0, topk_length=m.lens)\n    return", "1.0)\n    return"))
    out = api.process_file(str(p), narrowed=True)
    assert out.error.startswith("too big to analyse within the memory bound")
