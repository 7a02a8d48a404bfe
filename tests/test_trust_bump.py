"""`bump` on releases someone else wrote (third security review: findings 1, 5, 14, 15, 16, 17, 21).

A release may come from a fork (a vendored tree, a wheel or signature JSON it ships, a directory named
like a pin), from an index, or from a cache a misconfiguration points into the checkout. Whatever it
holds, bump never runs code from the tree, never reads outside the directory given, never hangs or
exhausts memory on it, prints it escaped, and reports a bad one in one line with exit 2 (exit 1 means
"a call breaks or rebinds", so a crash must never look like it).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topk_migrate.bump import command, sources
from topk_migrate.bump.diff import diff
from topk_migrate.bump.engine import BumpReport
from topk_migrate.bump.signatures import MAX_PARAMS, SCHEMA, EntryPoint, Param, Release
from topk_migrate.model import Site, Status

MODULE = "sgl_kernel/flash_mla.py"
# 0.3.17's and 0.3.19's flash_mla_with_kvcache: 0.3.19 inserts descale_q/descale_k before is_fp8_kvcache.
OLD = ("def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, tile_scheduler_metadata, "
       "num_splits, softmax_scale=None, causal=False, is_fp8_kvcache=False, indices=None):\n    pass\n")
NEW = ("def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, tile_scheduler_metadata, "
       "num_splits, softmax_scale=None, causal=False, descale_q=None, descale_k=None, is_fp8_kvcache=False, "
       "indices=None):\n    pass\n")
DECODE = ("from sgl_kernel.flash_mla import flash_mla_with_kvcache\n\n\n"
          "def decode(q, k_cache, block_table, seqlens, meta, num_splits, scale, indices):\n"
          "    return flash_mla_with_kvcache(q, k_cache, block_table, seqlens, 512, meta, num_splits, scale, False, "
          "True, indices)\n")
SPARSE = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512):\n    pass\n"
# pip pointed nowhere: no network, fails fast
NO_INDEX = {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "",
            "PIP_FIND_LINKS": "", "PIP_NO_INDEX": "1", "PIP_RETRIES": "0", "PIP_TIMEOUT": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def tm(*args, cwd, cache, env=None, timeout=60):
    """The CLI, as a user runs it, with its own cache."""
    full = {**os.environ, "TOPK_MIGRATE_CACHE": str(cache), **(env or {})}
    return subprocess.run([sys.executable, "-m", "topk_migrate", "bump", *map(str, args)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def one_error(r, *words):
    """Exit 2 with one error line (no traceback) that says each of `words`."""
    assert r.returncode == 2, (r.returncode, r.stdout[-800:], r.stderr[-800:])
    assert "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1, r.stderr
    assert all(w in errors[0] for w in words), errors[0]
    return errors[0]


def module_tree(root: Path, text: str) -> Path:
    (root / "sgl_kernel").mkdir(parents=True, exist_ok=True)
    (root / MODULE).write_text(text)
    return root


def wheel(path: Path, text, method=zipfile.ZIP_DEFLATED, name=MODULE) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr(name, text)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TOPK_MIGRATE_CACHE", str(d))
    return d


# -- finding 1: pip runs isolated, its wheel is checked ---------------------------------------------

def test_pip_download_never_imports_the_forks_pip_py(tmp_path, cache):
    """`python -m pip` put the current directory first on sys.path: a fork's pip.py ran as pip (and could
    hand back a forged wheel). Now pip runs as `python -I` in a private empty directory."""
    fork = tmp_path / "fork"
    module_tree(fork / "old", OLD)
    (fork / "decode.py").write_text(DECODE)
    plant = "open(%r, 'w').write('ran')\n" % str(fork / "PWNED")
    (fork / "pip.py").write_text(plant)
    (fork / "pip").mkdir()
    (fork / "pip" / "__main__.py").write_text(plant)
    (fork / "sitecustomize.py").write_text(plant)
    r = tm("--from", "old", "--to", "sgl-kernel==0.3.19", "decode.py", cwd=fork, cache=cache, env=NO_INDEX)
    assert not (fork / "PWNED").exists()
    one_error(r, "cannot download sgl-kernel==0.3.19")
    assert not list(cache.rglob("*.whl"))


def test_downloaded_wheel_must_be_the_one_requested(tmp_path):
    """What pip leaves in the download folder is cached only if it is one wheel named (PEP 427, names
    normalized, versions by PEP 440) for the pin asked for."""
    def folder(*names, link=False):
        d = Path(tempfile.mkdtemp(dir=tmp_path))
        for n in names:
            if link:
                os.symlink(tmp_path / "elsewhere.whl", d / n)
            else:
                (d / n).write_bytes(b"PK")
        return str(d)

    for good in ("sgl_kernel-0.3.19-cp310-abi3-manylinux2014_x86_64.whl", "SGL.Kernel-0.3.19-py3-none-any.whl",
                 "sgl_kernel-0.3.19-1build-py3-none-any.whl", "sgl_kernel-0.3.19.0-py3-none-any.whl"):
        assert sources.check_download("sgl-kernel", "0.3.19", folder(good)) == good
    bad = [folder("sgl_kernel_evil-0.3.19-py3-none-any.whl"), folder("sgl_kernel-0.3.18-py3-none-any.whl"),
           folder("sgl_kernel-0.3.19.tar.gz"), folder(), folder("sgl_kernel-0.3.19-py3-none-any.whl", "x.pth"),
           folder("sgl_kernel-0.3.19.whl"), folder("sgl_kernel-0.3.19-py3-none-any.whl", link=True),
           folder("sgl_kernel-0.3.19-py3-none-any.whl\x1b[2J")]
    for d in bad:
        with pytest.raises(sources.SourceError):
            sources.check_download("sgl-kernel", "0.3.19", d)


def test_a_forged_wheel_from_the_download_is_never_cached(tmp_path, cache, monkeypatch):
    """pip (or whatever stood in for it) exits 0 with another release's wheel: refused, nothing cached.
    The command it was given is `python -I -m pip` (sources._run_pip runs it in a private directory)."""
    calls = []

    def fake_pip(argv, on_line, timeout, env):
        calls.append(list(argv))
        dest = argv[argv.index("-d") + 1]
        wheel(Path(dest) / "sgl_kernel-0.4.6-py3-none-any.whl", "def flash_mla_with_kvcache(*a, **k):\n    pass\n")
        return 0, ""

    monkeypatch.setattr(sources, "_run_pip", fake_pip)
    with pytest.raises(sources.SourceError, match="not a wheel of sgl-kernel==0.3.19"):
        sources.load("sgl-kernel==0.3.19")
    assert calls and calls[0][:4] == [sys.executable, "-I", "-m", "pip"]
    assert not list(cache.rglob("*.whl")) and not (cache / "signatures" / "by-pin").exists()


def test_pip_runs_in_a_private_empty_directory_streams_its_lines_and_is_stopped_past_its_time(tmp_path, monkeypatch):
    """sources._run_pip: a fresh empty directory as cwd (never the fork's), the scrubbed environment plus
    what it is given, each stdout line as it comes (the download line is said from them), killed at the
    timeout (one line: the caller words it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pip.py").write_text("raise SystemExit('the fork ran')\n")
    lines = []
    rc, err = sources._run_pip([sys.executable, "-I", "-c", "import os, sys; print(os.getcwd()); print(os.listdir('.'));"
                                " print(os.environ.get('TMPDIR')); print('x', file=sys.stderr)"],
                               lines.append, 30, {"TMPDIR": str(tmp_path / "scratch")})
    assert rc == 0 and err.strip() == "x"
    cwd, listing, tmpdir = [ln.strip() for ln in lines]
    assert cwd != str(tmp_path) and listing == "[]" and tmpdir == str(tmp_path / "scratch")
    t = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        sources._run_pip([sys.executable, "-c", "import time; time.sleep(60)"], lines.append, 1, {})
    assert time.monotonic() - t < 20


# -- finding 5: a pin is never a path ---------------------------------------------------------------

def test_pin_spec_is_never_shadowed_by_a_path_of_that_name(tmp_path, cache):
    """A fork's directory named `sgl-kernel==0.3.19` (its own wrapper, a dist-info giving that very label)
    was read as the release: a call that rebinds read `unchanged`, exit 0. Now the spec is the pin (here
    served from a cached wheel), the header says where it was read, and `./NAME==VER` is the path."""
    fork = tmp_path / "fork"
    module_tree(fork / "old", OLD)
    (fork / "decode.py").write_text(DECODE)
    planted = module_tree(fork / "sgl-kernel==0.3.19", OLD)
    (planted / "sgl_kernel-0.3.19.dist-info").mkdir()
    (planted / "sgl_kernel-0.3.19.dist-info" / "METADATA").write_text("Name: sgl-kernel\nVersion: 0.3.19\n")
    (planted / "sgl_kernel-0.3.19.dist-info" / "RECORD").write_text(f"{MODULE},,\n")
    (cache / "wheels").mkdir(parents=True)
    real = wheel(cache / "wheels" / "sgl_kernel-0.3.19-py3-none-any.whl", NEW)
    r = tm("--from", "old", "--to", "sgl-kernel==0.3.19", "decode.py", cwd=fork, cache=cache)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "rebinds" in r.stdout and "read as a pin" in r.stderr and "./sgl-kernel==0.3.19" in r.stderr
    header = r.stdout.splitlines()[0]
    assert header.startswith("old/sgl_kernel/flash_mla.py -> sgl-kernel==0.3.19 [sgl_kernel-0.3.19-py3-none-any.whl "
                             f"(sha256 {sources._hash(open(real, 'rb'))[:16]})]")
    path = tm("--from", "old", "--to", "./sgl-kernel==0.3.19", "decode.py", cwd=fork, cache=cache)
    assert path.returncode == 0 and "unchanged" in path.stdout, path.stderr


def test_pin_with_an_invalid_version_is_one_line(tmp_path, cache):
    r = tm("--from", "sgl-kernel==1.0.x", "--to", "sgl-kernel==1.0", tmp_path, cwd=tmp_path, cache=cache)
    one_error(r, "not a version")


# -- finding 15: crafted wheels and signature files --------------------------------------------------

def _data_start(b: bytes) -> int:
    i = b.find(b"PK\x03\x04")
    return i + 30 + struct.unpack_from("<H", b, i + 26)[0] + struct.unpack_from("<H", b, i + 28)[0]


def _patched(src: Path, dst: Path, fn) -> Path:
    b = bytearray(src.read_bytes())
    fn(b)
    dst.write_bytes(bytes(b))
    return dst


GOOD = "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, topk_length=None):\n    return q\n"


def _method99(b):
    struct.pack_into("<H", b, b.find(b"PK\x03\x04") + 8, 99)
    struct.pack_into("<H", b, b.find(b"PK\x01\x02") + 10, 99)


def _encrypted(b):
    struct.pack_into("<H", b, b.find(b"PK\x03\x04") + 6, 1)
    struct.pack_into("<H", b, b.find(b"PK\x01\x02") + 8, 1)


def _bad_deflate(b):
    s = _data_start(b)
    b[s:s + 8] = b"\xff" * 8


def _bad_lzma(b):
    s = _data_start(b)
    b[s + 4:s + 20] = b"\0" * 16


def _truncated(b):
    del b[len(b) // 2:]


CRAFTED = {
    "unparse-recursion.whl": lambda d: wheel(d / "w.whl", "def flash_mla_sparse_fwd(q, x=1" + "+1" * 1000 + "):\n    pass\n"),
    "parse-recursion.whl": lambda d: wheel(d / "w.whl", "def flash_mla_sparse_fwd(q, x=1" + "+1" * 20000 + "):\n    pass\n"),
    "compression-99.whl": lambda d: _patched(wheel(d / "b.whl", GOOD), d / "w.whl", _method99),
    "encrypted.whl": lambda d: _patched(wheel(d / "b.whl", GOOD), d / "w.whl", _encrypted),
    "bad-deflate.whl": lambda d: _patched(wheel(d / "b.whl", GOOD), d / "w.whl", _bad_deflate),
    "bad-lzma.whl": lambda d: _patched(wheel(d / "b.whl", GOOD, zipfile.ZIP_LZMA), d / "w.whl", _bad_lzma),
    "truncated.whl": lambda d: _patched(wheel(d / "b.whl", GOOD), d / "w.whl", _truncated),
    "not-utf8.whl": lambda d: wheel(d / "w.whl", b"def f(x='\xff'):\n    pass\n"),
    "deep.json": lambda d: (d / "w.json").write_text("[" * 100000 + "]" * 100000) and d / "w.json",
    "list.json": lambda d: (d / "w.json").write_text("[1]") and d / "w.json",
    "huge-int.json": lambda d: (d / "w.json").write_text('{"schema": ' + "1" * 5000 + "}") and d / "w.json",
    "not-utf8.json": lambda d: (d / "w.json").write_bytes(b'{"schema": 1, "x": "\xff"}') and d / "w.json",
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_wheels_and_signature_files_are_one_line_exit_2(tmp_path, name):
    """Each of these gave a traceback with exit 1, bump's code for "a call breaks"."""
    release = CRAFTED[name](tmp_path)
    module_tree(tmp_path / "k", SPARSE)
    (tmp_path / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    r = tm("--from", "k", "--to", release, "a.py", cwd=tmp_path, cache=tmp_path / "cache")
    one_error(r, str(release))


def test_assert_message_of_any_constant_is_cached(tmp_path, cache):
    """`assert x, b"..."` made a guard message of bytes, which the cache's JSON could not hold (TypeError)."""
    w = wheel(tmp_path / "sgl_kernel-9-py3-none-any.whl",
              "def flash_mla_sparse_fwd(q, kv):\n    assert kv is None, b'no'\n    assert q, 3\n")
    r = sources.load(str(w))
    assert [g.message for g in r.entry_points["flash_mla_sparse_fwd"].guards] == ["b'no'", "3"]
    assert sources.load(str(w)).to_json() == r.to_json()  # served from the cache


def test_wheel_member_over_the_cap_is_refused_before_it_is_read(tmp_path, cache, monkeypatch):
    """A 1 MB wheel whose wrapper member was 1 GiB of newlines cost 2 GB: the declared size is checked first."""
    w = tmp_path / "w.whl"
    with zipfile.ZipFile(w, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(MODULE, GOOD + "\n" * sources.MODULE_LIMIT)
    read = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *a, **k: read.append(a) or real_open(self, *a, **k))
    with pytest.raises(sources.SourceError, match=f"bytes \\(limit {sources.MODULE_LIMIT}\\)"):
        sources.load(str(w))
    assert read == []


def test_wrapper_parse_is_bounded_in_memory(tmp_path, cache, monkeypatch):
    """The wrapper's parse is held to the memory bound candidates are (TOPK_MIGRATE_MAX_MEMORY)."""
    monkeypatch.setenv("TOPK_MIGRATE_MAX_MEMORY", "8")
    module_tree(tmp_path / "k", GOOD + "x = 1\n" * 300_000)
    with pytest.raises(sources.SourceError, match="too big to parse within the memory bound"):
        sources.load(str(tmp_path / "k"))


def test_wrapper_reading_is_bounded_in_work(tmp_path, cache):
    """3,000 early returns, each added to the path condition of 3,000 later asserts: 9 million terms
    (hundreds of MB of guard text) before. Now a bounded number of steps, then one line."""
    body = "    if q is None:\n        return\n" * 3000 + "    assert kv\n" * 3000
    module_tree(tmp_path / "k", "def flash_mla_sparse_fwd(q, kv):\n" + body)
    t = time.monotonic()
    with pytest.raises(sources.SourceError, match="too complex to read"):
        sources.load(str(tmp_path / "k"))
    assert time.monotonic() - t < 5


def test_more_parameters_than_a_wrapper_has_are_refused(tmp_path, cache):
    """The diff and the binding scan parameters per parameter: 100,000 of them would take hours. A real
    wrapper has at most some 20 (tests/data/bump), the caps are some 10 times what is real."""
    module_tree(tmp_path / "k", "def flash_mla_sparse_fwd(" + ", ".join(f"a{i}" for i in range(5000)) + "):\n    pass\n")
    with pytest.raises(sources.SourceError, match=f"more than {MAX_PARAMS} parameters"):
        sources.load(str(tmp_path / "k"))


def _sig(**entry):
    ep = {"name": "f", "module": MODULE, "line": 1, "params": [{"name": "q", "kind": "positional-or-keyword"}],
          "guards": []}
    ep.update(entry)
    return {"schema": SCHEMA, "dist": "sgl-kernel", "version": "0.4.6", "origin": "x", "sha256": None,
            "entry_points": {ep.get("name") if isinstance(ep.get("name"), str) else "f": ep}}


BAD_SIGNATURES = {
    "a list": [1],
    "a string": "x",
    "schema true": {**_sig(), "schema": True},
    "no entry points": {k: v for k, v in _sig().items() if k != "entry_points"},
    "entry points a list": {**_sig(), "entry_points": []},
    "newline in a name": _sig(name="get_mla_metadata\n::error file=a.py,line=1::INJECTED"),
    "backtick in a name": _sig(name="f`**x**`"),
    "keyword as a name": _sig(name="class"),
    "name differs from key": {**_sig(), "entry_points": {"f": _sig(name="g")["entry_points"]["g"]}},
    "module outside": _sig(module="../../etc/passwd.py"),
    "line a bool": _sig(line=True),
    "line a string": _sig(line="1"),
    "params a dict": _sig(params={"q": 1}),
    "param a list": _sig(params=[["q"]]),
    "param name a number": _sig(params=[{"name": 1, "kind": "positional-or-keyword"}]),
    "param kind unknown": _sig(params=[{"name": "q", "kind": "magic"}]),
    "param default a number": _sig(params=[{"name": "q", "kind": "positional-or-keyword", "default": 1}]),
    "param unknown field": _sig(params=[{"name": "q", "kind": "positional-or-keyword", "x": 1}]),
    "param twice": _sig(params=[{"name": "q", "kind": "positional-or-keyword"}] * 2),
    "kinds out of order": _sig(params=[{"name": "q", "kind": "keyword-only"}, {"name": "k", "kind": "positional-only"}]),
    "two *args": _sig(params=[{"name": "a", "kind": "var-positional"}, {"name": "b", "kind": "var-positional"}]),
    "required after default": _sig(params=[{"name": "a", "kind": "positional-or-keyword", "default": "1"},
                                           {"name": "b", "kind": "positional-or-keyword"}]),
    "guard params not params": _sig(guards=[{"params": ["z"], "kind": "assert", "test": "z"}]),
    "guard kind unknown": _sig(guards=[{"params": ["q"], "kind": "exec", "test": "q"}]),
    "guard test a list": _sig(guards=[{"params": ["q"], "kind": "assert", "test": ["q"]}]),
    "guard a string": _sig(guards=["assert q"]),
    "dist with an escape": {**_sig(), "dist": "sgl-kernel\x1b]0;x\x07"},
    "version not a version": {**_sig(), "version": "0.4.6`**SAFE**`"},
    "sha256 not hex": {**_sig(), "sha256": "../../x"},
    "origin a number": {**_sig(), "origin": 1},
    "call a string": _sig(calls=["torch.ops.k.op"]),
    "call name not dotted": _sig(calls=[{"name": "torch.ops.k.op\n::error::x"}]),
    "call via not a name": _sig(calls=[{"name": "torch.ops.k.op", "via": "a b"}]),
    "call unknown field": _sig(calls=[{"name": "torch.ops.k.op", "x": 1}]),
    "stale not parameters": _sig(guards=[{"params": ["q"], "kind": "assert", "test": "q", "stale": ["z"]}]),
    "exports a list": {**_sig(), "exports": ["sgl_kernel"]},
    "exports not names": {**_sig(), "exports": {"sgl_kernel": ["a b"]}},
    "exports package not a name": {**_sig(), "exports": {"../x": []}},
}


@pytest.mark.parametrize("case", sorted(BAD_SIGNATURES))
def test_signature_json_of_the_wrong_shape_is_a_source_error(tmp_path, case):
    f = tmp_path / "sigs.json"
    f.write_text(json.dumps(BAD_SIGNATURES[case]))
    with pytest.raises(sources.SourceError, match="not a signature file"):
        sources.load(str(f))


def test_path_conditions_of_a_crafted_release_are_bounded(tmp_path):
    """What a release's conditions cost a site is bounded: every combination of undecided conditions is
    judged only up to paths.MAX_ATOMS of them and paths.MAX_WORK steps; past that the question is not
    decided (a note, or `cannot tell`), in well under a second per site."""
    from topk_migrate.bump import engine, paths

    many = " and ".join(f"x{i}.ok()" for i in range(paths.MAX_ATOMS + 2))
    wide = " and ".join(f"(q.a{i} or q.b{i % 9} or q.c{i % 9})" for i in range(120))[:paths.MAX_TEXT - 10]
    calls = [{"name": f"torch.ops.k.op{i}", "condition": many if i % 2 else wide} for i in range(512)]
    params = [{"name": "q", "kind": "positional-or-keyword"}, {"name": "n", "kind": "positional-or-keyword",
                                                                "default": "None"}]
    guards = [{"params": ["n"], "kind": "assert", "test": "n is None", "condition": wide}] * 256
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_sig(name="flash_mla_sparse_fwd", params=params[:1], calls=calls[:256])))
    new.write_text(json.dumps(_sig(name="flash_mla_sparse_fwd", params=params, calls=calls, guards=guards)))
    fork = tmp_path / "fork.py"
    fork.write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\ndef f(q):\n"
                    + "".join("    flash_mla_sparse_fwd(q)\n" for _ in range(10)))
    t = time.monotonic()
    report = engine.run([str(fork)], sources.load(str(old)), sources.load(str(new)), jobs=1)
    assert time.monotonic() - t < 20 and len(report.sites) == 10 and not report.errors
    assert all(s.status == Status.OPPORTUNITY and "cannot tell whether it applies" in s.reason for s in report.sites)
    assert all(any("cannot tell whether the call runs other ops" in f.reason for f in s.findings)
               for s in report.sites)


def test_a_bad_cache_entry_is_read_again_not_a_crash(tmp_path, cache):
    w = wheel(tmp_path / "sgl_kernel-9.0-py3-none-any.whl", GOOD)
    first = sources.load(str(w))
    entry = cache / "signatures" / f"{first.sha256}.json"
    for junk in ("[1]", "[" * 100000, json.dumps(_sig(name="a\nb")), json.dumps({**first.to_json(), "sha256": "0" * 64})):
        entry.write_text(junk)
        assert sources.load(str(w)).to_json() == first.to_json()
    (cache / "signatures" / "by-pin").mkdir(parents=True)
    (cache / "signatures" / "by-pin" / "sgl-kernel==9.0").write_text("../../../../etc/passwd\n")
    (cache / "wheels").mkdir()
    os.replace(w, cache / "wheels" / w.name)
    assert sources.load("sgl-kernel==9.0").to_json() == first.to_json()


# -- finding 16: a source tree's dist-info files ------------------------------------------------------

def test_dist_info_fifo_or_dev_zero_never_hangs_or_exhausts(tmp_path):
    """RECORD was read with Path.read_text: a FIFO hung bump, a link to /dev/zero was a MemoryError."""
    module_tree(tmp_path / "old", SPARSE)
    vend = module_tree(tmp_path / "vend", SPARSE)
    info = vend / "x-1.dist-info"
    info.mkdir()
    os.mkfifo(info / "RECORD")
    os.symlink("/dev/zero", info / "METADATA")
    (tmp_path / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    t = time.monotonic()
    r = tm("--from", "old", "--to", "vend", "a.py", cwd=tmp_path, cache=tmp_path / "cache", timeout=20)
    assert r.returncode == 0 and time.monotonic() - t < 10, r.stderr
    (info / "RECORD").unlink()
    os.symlink("/dev/zero", info / "RECORD")
    r = tm("--from", "old", "--to", "vend", "a.py", cwd=tmp_path, cache=tmp_path / "cache", timeout=20)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    (vend / MODULE).unlink()
    os.mkfifo(vend / MODULE)  # the wrapper itself: one line, not a hang
    one_error(tm("--from", "old", "--to", "vend", "a.py", cwd=tmp_path, cache=tmp_path / "cache", timeout=20),
              "not a regular file")


# -- finding 17: nothing is read from outside the tree given --------------------------------------------

def test_wrapper_symlinked_out_of_the_tree_is_refused(tmp_path):
    """A vendored `sgl_kernel/flash_mla.py` linked to ~/.config/settings.py put that file's defs (and a
    password default) into the PR's markdown report."""
    secret = tmp_path / "home" / ".config" / "settings.py"
    secret.parent.mkdir(parents=True)
    secret.write_text('def connect(host="db.internal", user="admin", password="hunter2-SECRET"):\n    pass\n')
    fork = tmp_path / "fork"
    wrapper = fork / "vendor" / "sgl-kernel" / "python" / MODULE
    wrapper.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(secret, wrapper.parent), wrapper)
    module_tree(tmp_path / "old", SPARSE)
    (fork / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    r = tm("--from", "../old", "--to", "vendor/sgl-kernel", "--format", "markdown", ".", cwd=fork,
           cache=tmp_path / "cache")
    assert "SECRET" not in r.stdout + r.stderr and "db.internal" not in r.stdout + r.stderr
    one_error(r, "symlink leading out of vendor/sgl-kernel")
    # a link that stays inside the tree is read as before
    wrapper.unlink()
    (wrapper.parent / "real.py").write_text(SPARSE)
    os.symlink("real.py", wrapper)
    ok = tm("--from", "../old", "--to", "vendor/sgl-kernel", ".", cwd=fork, cache=tmp_path / "cache")
    assert ok.returncode == 0, ok.stderr


# -- finding 14: reports escape what the releases and the fork wrote --------------------------------------

def _hostile_report() -> BumpReport:
    """A report built past the readers' checks, as if a field of any release came through unchecked."""
    evil = "x\x1b]0;owned\x07`**SAFE_TO_MERGE**![x](https://example.invalid/p.png)`\n::error file=a.py::INJECTED <b>"
    ep = EntryPoint("get_mla_metadata" + evil, MODULE, 1, [Param("q", "positional-or-keyword", "'" + evil + "'")])
    old = Release("sgl-kernel", "0.4.2" + evil, "o" + evil, {})
    new = Release(None, None, "vend" + evil, {ep.name: ep})
    site = Site("p`**safe**`/b" + evil + ".py", 3, 5, "sgl_kernel.flash_mla.f" + evil, Status.REBINDS,
                "positional argument 1 (`" + evil + "`) binds `q`", rule="signature-rebinds", entry_point="f" + evil,
                fix="f(q=" + evil + ")")
    return BumpReport(old, new, diff(old, new), [site], [("e" + evil + ".py", "cannot read: " + evil)], 1)


def test_text_and_github_reports_keep_hostile_strings_on_one_line():
    """Text printed labels, entry points and change details raw (terminal escapes, a `\\n::error ...` line
    for GitHub to run as a workflow command); github's annotations must stay one line each too."""
    out = command.text_report(_hostile_report(), verbose=True)
    assert "\x1b" not in out and "\x07" not in out
    assert not any(line.startswith("::") for line in out.splitlines())
    assert out.count("\n") == 4  # header, one change, one site, its fix
    lines = command.github_report(_hostile_report()).splitlines()
    assert len(lines) == 2 and lines[0].startswith("::error file=p") and lines[1].startswith("::error file=e")
    assert not any("\x1b" in ln for ln in lines) and "INJECTED" in lines[0]


def _outside_code(line: str) -> str:
    """`line` with its code spans (CommonMark: a backtick run closed by the next run of the same length)
    and its backslash escapes taken out: what markdown would read as markup."""
    import re

    line = re.sub(r"\\[!-/:-@\[-`{-~]", "", line)
    out, pos, runs = [], 0, list(re.finditer("`+", line))
    i = 0
    while i < len(runs):
        j = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(runs[i].group())), None)
        if j is None:
            i += 1
            continue
        out.append(line[pos:runs[i].start()])
        pos, i = runs[j].end(), j + 1
    return "".join(out) + line[pos:]


def test_markdown_code_spans_hold_whatever_they_quote():
    out = command.markdown_report(_hostile_report())
    assert "\x1b" not in out and not any(ln.startswith("::") for ln in out.splitlines())
    lines = [ln for ln in out.splitlines() if ln.startswith(("## ", "Read from", "| ", "- error"))]
    assert len(lines) == 7  # heading, origins, 2 table heads, a change, a site, an error
    for line in lines:  # outside code spans, nothing markdown reads as markup but the table's own pipes
        bare = _outside_code(line)
        assert not any(c in bare for c in "`*_[<"), (line, bare)
    # a string quoted whole is one code span, its fence longer than any run of backticks in it
    assert ("## FlashMLA bump: ``sgl-kernel==0.4.2x\\x1b]0;owned\\x07`**SAFE_TO_MERGE**![x](https://example.invalid/p.png)"
            "`\\x0a::error file=a.py::INJECTED <b>`` \u2192 ``vendx") in out
    assert "| rebinds | ``p`**safe**`/bx" in out


def test_markdown_keeps_honest_code_spans():
    """What bump itself quotes (`param`, `True`) still renders as code."""
    assert command._md("positional argument 10 (`True`) binds `descale_q`, was `is_fp8_kvcache`") == \
        "positional argument 10 (`True`) binds `descale_q`, was `is_fp8_kvcache`"
    assert command._code("a`b") == "``a`b``" and command._code("`a") == "`` `a ``" and command._code("a|b") == "`a\\|b`"


def test_signature_json_cannot_write_a_line_into_the_log(tmp_path):
    """An entry point named `...\\n::error ...` printed a GitHub workflow command as a line of its own."""
    module_tree(tmp_path / "old", SPARSE)
    (tmp_path / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    (tmp_path / "sigs.json").write_text(json.dumps(BAD_SIGNATURES["newline in a name"]))
    for fmt in ("text", "github", "markdown"):
        r = tm("--from", "old", "--to", "sigs.json", "--format", fmt, "a.py", cwd=tmp_path, cache=tmp_path / "cache")
        assert not any(ln.startswith("::") for ln in (r.stdout + r.stderr).splitlines())
        one_error(r, "sigs.json: not a signature file", "not a Python name")


def test_metadata_label_with_escapes_is_not_a_label(tmp_path):
    """A planted dist-info Version of `0.4.6<ESC>]0;owned<BEL>`...`` went raw into the header and broke
    out of the markdown heading's code span. It is not a version: the release is named by its path."""
    module_tree(tmp_path / "old", SPARSE)
    vend = module_tree(tmp_path / "vend", SPARSE)
    (vend / "x-1.dist-info").mkdir()
    (vend / "x-1.dist-info" / "METADATA").write_text(
        "Name: sgl-kernel\nVersion: 0.4.6\x1b]0;owned\x07`**SAFE_TO_MERGE**![x](https://example.invalid/p.png)`\n")
    (vend / "x-1.dist-info" / "RECORD").write_text(f"{MODULE},,\n")
    (tmp_path / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    for fmt in ("text", "markdown"):
        r = tm("--from", "old", "--to", "vend", "--format", fmt, "a.py", cwd=tmp_path, cache=tmp_path / "cache")
        assert r.returncode == 0 and "\x1b" not in r.stdout and "SAFE_TO_MERGE" not in r.stdout, r.stdout
        assert "Name or Version is not valid" in r.stderr


# -- finding 21: TOPK_MIGRATE_CACHE -------------------------------------------------------------------------

def test_cache_env_empty_is_unset_relative_is_refused_unwritable_is_a_note(tmp_path):
    """Empty meant the current directory: a fork's `signatures/by-pin/...` was trusted as the release."""
    home, cwd = tmp_path / "home", tmp_path / "fork"
    module_tree(cwd / "old", SPARSE)
    (cwd / "a.py").write_text("from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n")
    (cwd / "signatures" / "by-pin").mkdir(parents=True)
    forged = {"schema": 1, "dist": "sglang-kernel", "version": "0.4.6", "origin": "forged", "sha256": "f" * 64,
              "entry_points": {}}
    (cwd / "signatures" / ("f" * 64 + ".json")).write_text(json.dumps(forged))
    (cwd / "signatures" / "by-pin" / "sglang-kernel==0.4.6").write_text("f" * 64 + "\n")
    wheels = home / ".cache" / "topk-migrate" / "wheels"
    wheels.mkdir(parents=True)
    wheel(wheels / "sglang_kernel-0.4.6-py3-none-any.whl", GOOD)
    r = tm("--from", "old", "--to", "sglang-kernel==0.4.6", "a.py", cwd=cwd, cache="", env={"HOME": str(home)})
    assert r.returncode == 0 and "forged" not in r.stdout and "param-added-optional" in r.stdout, (r.stdout, r.stderr)
    assert (home / ".cache" / "topk-migrate" / "signatures" / "by-pin" / "sglang-kernel==0.4.6").is_file()
    assert sorted(p.name for p in (cwd / "signatures").iterdir()) == ["by-pin", "f" * 64 + ".json"]
    one_error(tm("--from", "old", "--to", "sglang-kernel==0.4.6", "a.py", cwd=cwd, cache="."),
              "TOPK_MIGRATE_CACHE='.' is not an absolute path")
    unwritable = tm("--from", "old", "--to", wheels / "sglang_kernel-0.4.6-py3-none-any.whl", "a.py", cwd=cwd,
                    cache=os.devnull)
    assert unwritable.returncode == 0 and "Traceback" not in unwritable.stderr, unwritable.stderr
    assert f"note: cannot write the cache {os.devnull}" in unwritable.stderr and "param-added-optional" in unwritable.stdout


# -- any input: a release or one SourceError ---------------------------------------------------------------

_VALID = json.loads(json.dumps(_sig(params=[{"name": "q", "kind": "positional-or-keyword", "annotation": "T"},
                                            {"name": "k", "kind": "keyword-only", "default": "None"}],
                                    guards=[{"params": ["k"], "kind": "assert", "test": "k is None",
                                             "condition": "q", "message": "m", "via": None}])))
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
                     max_leaves=12)


def _paths(obj, at=()):
    yield at
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, at + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, at + (i,))


_PATHS = list(_paths(_VALID))


@st.composite
def signature_texts(draw):
    """Bytes, any JSON, or the valid signature with one field replaced or removed."""
    kind = draw(st.sampled_from(["bytes", "json", "mutant", "mutant"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(_JSON)).encode()
    data = json.loads(json.dumps(_VALID))
    at = draw(st.sampled_from(_PATHS[1:]))
    parent = data
    for k in at[:-1]:
        parent = parent[k]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[at[-1]]
    else:
        parent[at[-1]] = draw(_JSON | st.sampled_from(["f", "q", "k", "positional-only", "var-keyword", "raise", 0]))
    return json.dumps(data).encode()


_SNIPPETS = ["def flash_mla_sparse_fwd(q, kv=1):\n", "    assert kv is None\n", "    if q:\n", "        return\n",
             "    raise ValueError(q)\n", "def _h(x):\n", "    _h(x=q)\n", "    pass\n", "(" * 50, "+1" * 300, "\x00",
             "def g(*, a, b=2, **c):\n", "class C:\n", "    'é'\n", "\t", "lambda: 0\n"]


@st.composite
def wheels(draw):
    """A small zip holding a wrapper member of Python-ish text, perhaps with bytes flipped."""
    text = "".join(draw(st.lists(st.sampled_from(_SNIPPETS), max_size=12)))
    name = draw(st.sampled_from([MODULE, "flash_mla/flash_mla_interface.py", "other.py"]))
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
    buf = tempfile.SpooledTemporaryFile()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr(name, text.encode("utf-8", "surrogatepass"))
    buf.seek(0)
    data = bytearray(buf.read())
    for at, value in draw(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), max_size=3)):
        data[at] = value
    return bytes(data)


def _release_or_source_error(tmp: Path, name: str, data: bytes) -> None:
    f = tmp / name
    f.write_bytes(data)
    try:
        r = sources.load(str(f))
    except sources.SourceError as e:
        assert "\n" not in str(e).strip()
        return
    assert isinstance(r, Release)
    other = sources.load(str(Path(__file__).parent / "data" / "bump" / "sglang-kernel-0.4.6.json"))
    for a, b in ((r, other), (other, r), (r, r)):  # what the main process does with a release
        report = BumpReport(a, b, diff(a, b))
        for render in (command.text_report, command.markdown_report, command.json_report, command.github_report):
            render(report)


def _property(data):
    with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"TOPK_MIGRATE_CACHE": os.path.join(d, "c")}):
        kind, blob = data
        _release_or_source_error(Path(d), "sigs.json" if kind == "json" else "sgl_kernel-1.0-py3-none-any.whl", blob)


_INPUTS = st.tuples(st.just("json"), signature_texts()) | st.tuples(st.just("wheel"), wheels())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_INPUTS)
def test_any_signature_file_or_wheel_is_a_release_or_one_source_error(data):
    _property(data)


@pytest.mark.heavy
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_INPUTS)
def test_any_signature_file_or_wheel_is_a_release_or_one_source_error_heavy(data):
    _property(data)
