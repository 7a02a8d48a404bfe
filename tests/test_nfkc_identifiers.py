"""Identifiers are compared as Python compares them: in NFKC form (PEP 3131).

`\ufb02ash_mla_sparse_fwd` (U+FB02, the fl ligature) or `\uff46lash_mla_sparse_fwd` (a fullwidth f) is
flash_mla_sparse_fwd to Python: imported and called like it. Such a call was no site to the tool (check and
audit said exit 0, the Action and the hooks passed a call without topk_length: security report 10). The byte
prefilter searches a file's NFKC form where its bytes are not all ASCII (discover.Prefilter), the engine reads
each identifier in its NFKC form (spelling.normal_form), the project scan searches other files the same way
(reach.Project), and a file so spelled is never rewritten: its fixable sites are manual, the reason naming
the spelling. Source text here is written with escapes, so this file is ASCII."""
import io
import json
import unicodedata

import pytest

from helpers import KERNEL, run_cli
from topk_migrate import discover, spelling
from topk_migrate.api import migrate_source
from topk_migrate.discover import Prefilter, bytescan, file_may_hold_site, may_hold_site, prefilter_for
from topk_migrate.model import InputError, Status

NAME = "flash_mla_sparse_fwd"
BACKEND = (
    "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
    "class Backend:\n"
    "    def _forward(self, q, kv, idx, scale):\n"
    "        return flash_mla_sparse_fwd(q, kv, idx, scale)\n\n"
    "    def forward(self, q, kv, idx, scale, metadata):\n"
    "        return self._forward(q, kv, idx, scale)\n\n"
    "# uses metadata.nsa_cache_seqlens_int32\n"
)
SPELLED = {  # what Python reads as flash_mla_sparse_fwd
    "ligature": "\ufb02ash_mla_sparse_fwd",
    "fullwidth": "\uff46lash_mla_sparse_fwd",
    "math bold": "\U0001d41flash_mla_sparse_fwd",
    "fullwidth underscore": "flash\uff3fmla_sparse_fwd",
}


def _hidden(written: str, where: str = "both") -> str:
    """BACKEND with the kernel written otherwise in its import, its call, or both."""
    lines = BACKEND.split("\n")
    for i, line in enumerate(lines):
        if NAME in line and (where == "both" or (where == "import") == line.startswith("from ")):
            lines[i] = line.replace(NAME, written)
    return "\n".join(lines)


@pytest.mark.parametrize("how", SPELLED)
def test_python_reads_each_spelling_as_the_kernel(how):
    """The premise, from CPython itself: the import binds, and the call calls, flash_mla_sparse_fwd."""
    import ast

    tree = ast.parse(_hidden(SPELLED[how]))
    assert tree.body[0].names[0].name == NAME
    assert unicodedata.normalize("NFKC", SPELLED[how]) == NAME


@pytest.mark.parametrize("where", ["both", "import", "call"])
@pytest.mark.parametrize("how", SPELLED)
def test_a_kernel_spelled_otherwise_is_a_manual_site_never_a_rewrite(how, where, tmp_path):
    src = _hidden(SPELLED[how], where)
    assert may_hold_site(src.encode())  # the prefilter hands it on
    m = migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL)
    assert [(s.line, s.column, s.callee, s.status) for s in m.sites] == [
        (6, 16, "sgl_kernel.flash_mla.flash_mla_sparse_fwd", Status.MANUAL)]
    assert "non-NFKC-normal" in m.sites[0].reason and "pass topk_length by hand" in m.sites[0].reason
    assert m.new_source == src  # the user's bytes, never the normalized text
    plain = migrate_source(BACKEND, str(tmp_path / "m.py"), kernel=KERNEL)
    assert [s.status for s in plain.sites] == [Status.FIXABLE] and plain.changed  # the same call, spelled plainly


def test_check_apply_and_audit_report_the_hidden_call_exit_1(tmp_path):
    """The reproducer's shape through the command line: check, apply and audit say exit 1, apply writes
    nothing; the plain file's verdicts are what they always were."""
    (tmp_path / "plain.py").write_text(BACKEND)
    for how, written in SPELLED.items():
        (tmp_path / f"{how.replace(' ', '_')}.py").write_text(_hidden(written), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = run_cli("check", "--kernel", KERNEL, "ligature.py", "fullwidth.py", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert [line.split(" sgl_kernel")[0] for line in r.stdout.splitlines() if ":6:16 " in line] == [
        "ligature.py:6:16 manual", "fullwidth.py:6:16 manual"], r.stdout
    r = run_cli("apply", "--kernel", KERNEL, "ligature.py", "fullwidth.py", cwd=tmp_path)
    assert r.returncode == 1 and "rewrote 0 file(s)" in r.stderr + r.stdout, r.stdout + r.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    r = run_cli("audit", "--kernel", KERNEL, "--format", "json", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    got = {(s["path"], s["line"], s["column"], s["status"]) for s in json.loads(r.stdout)["sites"]}
    assert got == {("plain.py", 6, 16, "fixable")} | {
        (f"{how.replace(' ', '_')}.py", 6, 16, "manual") for how in SPELLED}


@pytest.mark.parametrize("value, status", [("idx", Status.COMPLIANT), ("None", Status.OPT_OUT)])
def test_a_keyword_topk_length_spelled_otherwise_is_passed(value, status, tmp_path):
    """`\uff54opk_length=` is topk_length= to Python: the call passes it (as the engine and the quick classifier
    of audit's narrowed files both say)."""
    src = BACKEND.replace("idx, scale)\n\n    def forward", f"idx, scale, \uff54opk_length={value})\n\n    def forward")
    assert [s.status for s in migrate_source(src, str(tmp_path / "m.py"), kernel=KERNEL).sites] == [status]
    (tmp_path / "m.py").write_text(src, encoding="utf-8")
    r = run_cli("audit", "--kernel", KERNEL, "--format", "json", "m.py", cwd=tmp_path)
    assert [s["status"] for s in json.loads(r.stdout)["sites"]] == [status.value], r.stderr
    assert r.returncode == 0


def test_a_name_in_normal_form_but_for_non_ascii_comments_and_strings_keeps_its_exact_verdicts(tmp_path):
    """Non-ASCII text where no identifier changes (a comment's ellipsis and no-break space, a docstring's
    fullwidth comma, a ligature inside a string, a Greek name) changes nothing: same sites, same rewrite."""
    from helpers import ROOT

    plain = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text()
    assert plain.isascii()
    extra = ("# notes\u2026 see\u00a0below \uff0c \ufb02\n"
             "GREEK_\u03b1 = '\ufb02ash_mla_sparse_fwd'\n")
    decorated = extra + plain
    assert spelling.normal_form(plain).text is plain and not spelling.normal_form(decorated).changed
    a = migrate_source(plain, str(tmp_path / "a.py"), kernel=KERNEL)
    b = migrate_source(decorated, str(tmp_path / "b.py"), kernel=KERNEL)
    assert a.sites and [(s.line + 2, s.column, s.callee, s.status) for s in a.sites] == [
        (s.line, s.column, s.callee, s.status) for s in b.sites]
    assert a.changed and b.new_source == extra + a.new_source


def test_the_normal_form_changes_identifiers_only_and_columns_come_back_in_the_files_characters():
    src = ("x = \ufb02\ufb02 + g(\ufb02ash_mla_sparse_fwd)  # \ufb02 comment\n"
           "s = '\ufb02ash'; b = b'x'; f = f'{\ufb02x} \\\uff2e{x} \ufb02'\r\n"
           "y = \uff2e\uff4f\uff4e\uff45 + \uff4e\uff4f\uff4e\uff45\r"
           "caf\u0065\u0301 = 1\n")
    s = spelling.normal_form(src)
    assert s.text == ("x = flfl + g(flash_mla_sparse_fwd)  # \ufb02 comment\n"
                      "s = '\ufb02ash'; b = b'x'; f = f'{flx} \\\uff2e{x} fl'\r\n"  # an f-string's fields are code
                      "y = \uff2e\uff4f\uff4e\uff45 + none\r"  # the normal form of a keyword is no name: as written
                      "caf\u00e9 = 1\n")
    assert s.changed and s.text.count("\n") == src.count("\n") and s.text.count("\r") == src.count("\r")
    # columns (1-based) of the read text, back in the file's own characters
    assert [s.column(1, c) for c in (1, 5, 10, 12, 14, 35)] == [1, 5, 8, 10, 12, 32]
    assert s.column(1, 7) == 5  # inside a name: its start
    assert s.column(4, 1) == 1 and s.column(4, 6) == 7


def test_a_file_python_can_run_that_cannot_be_tokenized_is_an_error_not_a_silent_pass(monkeypatch):
    def broken(readline):
        raise spelling.tokenize.TokenError("no")

    monkeypatch.setattr(spelling.tokenize, "generate_tokens", broken)
    with pytest.raises(InputError):
        spelling.normal_form(_hidden(SPELLED["ligature"]))
    assert spelling.normal_form("x = (\n\ufb02\n").text == "x = (\n\ufb02\n"  # CPython refuses it too


def test_a_cookie_codec_spelling_is_read_as_python_reads_it(tmp_path):
    """Bytes that are valid UTF-8 but another character in the file's declared codec: mac_roman's 0xDF 0xBB
    is U+FB02 U+00AA (`fla` in NFKC), UTF-8's U+07FB. The prefilter sends such a file on; the engine decodes it."""
    src = (b"# -*- coding: mac_roman -*-\nfrom sgl_kernel.flash_mla import \xdf\xbbsh_mla_sparse_fwd\n"
           b"\xdf\xbbsh_mla_sparse_fwd(q, kv, i, 1.0)\n")
    assert may_hold_site(src) and not may_hold_site(src.replace(b"mac_roman", b"utf-8"))
    (tmp_path / "m.py").write_bytes(src)
    assert file_may_hold_site(str(tmp_path / "m.py"))
    r = run_cli("check", "--kernel", KERNEL, "m.py", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("m.py:3:1 manual "), r.stdout + r.stderr


@pytest.mark.parametrize("offset", range(0, 260, 13))
def test_the_windowed_scan_sees_a_spelled_name_wherever_a_window_cuts_it(offset, tmp_path):
    p = tmp_path / "m.py"
    buf = bytearray(256)  # a small window: the name falls across its edges
    for written in SPELLED.values():
        data = b"#" * offset + written.encode() + b"(q)\n" + b"y = 2\n" * 60
        p.write_bytes(data)
        assert file_may_hold_site(str(p), buf) is may_hold_site(data) is True, (written, offset)
        p.write_bytes(data.replace(written.encode()[-6:], b"_other"))
        assert file_may_hold_site(str(p), buf) is False, (written, offset)


def test_the_rev_scan_reads_the_codec_in_the_first_window_only(monkeypatch):
    """audit --rev scans a blob over the size cap in windows: the cookie is in the first, the name in a later one."""
    from topk_migrate import audit as audit_mod

    monkeypatch.setattr(audit_mod.rev, "SCAN_WINDOW", 64)
    body = b"x = 1\n" * 40 + b"\xdf\xbbsh_mla_sparse_fwd(q)\n" + b"y = 2\n" * 40
    pf = prefilter_for()
    for cookie, found in ((b"# coding: mac_roman\n", True), (b"# coding: utf-8\n", False)):
        data = cookie + body
        assert audit_mod.rev._scan_stream(io.BytesIO(data), len(data), pf, "sha") is found


def test_the_project_scan_finds_a_subclass_whose_base_is_spelled_otherwise(tmp_path):
    """An override of the helper in another file, its base class written with a fullwidth B: the rewrite would
    miss it (the subclass's _forward does not take topk_length), so the site stays manual."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "other.py").write_text(
        "from backend import \uff22ackend\n\n\nclass Sub(\uff22ackend):\n"
        "    def _forward(self, q, kv, idx, scale):\n        return q\n", encoding="utf-8")
    m = migrate_source(BACKEND, str(tmp_path / "backend.py"), kernel=KERNEL)
    assert [s.status for s in m.sites] == [Status.MANUAL] and "other.py" in m.sites[0].reason, m.sites
    (tmp_path / "other.py").write_text("x = 1\n")  # the control: nothing overrides it
    assert [s.status for s in migrate_source(BACKEND, str(tmp_path / "backend.py"), kernel=KERNEL).sites] \
        == [Status.FIXABLE]


def test_the_prefilter_costs_ascii_files_nothing_more_and_stays_linear(monkeypatch, tmp_path):
    """An ASCII file is never decoded nor normalized (one bytes.isascii more: memory speed), whatever its size;
    a non-ASCII file is normalized once per window, and at most once per byte: linear in its size."""
    calls = {"normalize": 0, "is_normalized": 0, "chars": 0}
    real_norm, real_is = unicodedata.normalize, unicodedata.is_normalized

    def normalize(form, text):
        calls["normalize"] += 1
        calls["chars"] += len(text)
        return real_norm(form, text)

    def is_normalized(form, text):
        calls["is_normalized"] += 1
        calls["chars"] += len(text)
        return real_is(form, text)

    monkeypatch.setattr(bytescan.unicodedata, "normalize", normalize)
    monkeypatch.setattr(bytescan.unicodedata, "is_normalized", is_normalized)
    monkeypatch.setattr(spelling.unicodedata, "normalize", normalize)
    monkeypatch.setattr(spelling.unicodedata, "is_normalized", is_normalized)
    line = b"def f(x):\n    return sparse_attention(x)  # sparse_ is everywhere, no kernel\n"
    pf = prefilter_for()
    for n in (1_000, 10_000):
        data = line * n
        assert not pf.matches(data) and not spelling.normal_form(data.decode()).changed
        p = tmp_path / "a.py"
        p.write_bytes(data)
        assert not file_may_hold_site(str(p))
    assert calls == {"normalize": 0, "is_normalized": 0, "chars": 0}
    seen = []
    for n in (20_000, 200_000):  # one window, then several
        data = line.replace(b"# ", "# \ufb01 ".encode()) * n  # a ligature in each comment
        calls.update(normalize=0, is_normalized=0, chars=0)
        p.write_bytes(data)
        assert not file_may_hold_site(str(p))
        windows = -(-len(data) // discover.SCAN_WINDOW) + 1  # (each window after the first repeats the carry)
        assert calls["normalize"] <= windows and calls["chars"] <= 3 * len(data)
        seen.append(calls["chars"] / len(data))
    assert seen[1] <= 1.1 * seen[0] + 0.01  # per byte, the same at ten times the size


def test_a_prefilter_of_other_needles_reads_spellings_too():
    pf = Prefilter([b"my_kernel"])
    assert pf.matches("x = \uff4dy_kernel(1)\n".encode()) and not pf.matches("x = \uff4dy_other(1)\n".encode())
    assert pf.carry >= 4 * len(b"my_kernel") - 1
