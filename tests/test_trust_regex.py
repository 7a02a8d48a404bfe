"""Every regex the tool applies to text a fork controls runs in time linear in that text (security4 #3, #4).

A backtracking regex over fork text is a hang a fork can write: `narrow`'s alias search took days over a
line `g = flash_mla_sparse_fwd  ` + 40 `#` (exponential), the requirements option strip 14 s over one line
of 80,000 blanks (quadratic). Those, and the other super-linear ones the audit found (configparser's option
line for setup.cfg, the `except X, e` hint, the search for `self.x = None` in a base class's module, and
tokenize's string regex as guard.nesting ran it over string literals), are replaced by code whose steps are
counted here, or by a regex with one way to match.

What holds it:

* the regressions: each of those inputs under a CPU deadline (the re module checks for signals while it
  backtracks, so the old code fails in a second instead of hanging the suite);
* each replacement decides as the regex it replaces did, on random inputs (differential);
* INVENTORY: every regex applied to fork text (source, requirements and config text, file names, wheel
  metadata, report strings), run through the code that applies it on its worst-case shapes at two sizes,
  8x apart: the least CPU time of a few runs may grow 24x (linear: 8x, quadratic: 64x); the same measure on the
  constructions replaced grows past that;
* heavy tier: random hostile texts (runs of `#`, blanks, backslashes, quotes, `as`, kernel names,
  `--opt`, ...) at two sizes through every entry of the inventory.
"""
import ast
import configparser
import contextlib
import ctypes
import os
import random
import re
import signal
import subprocess
import sys
import time
import types

import pytest

from codemods.pass_topk_length import analysis, field_meaning, metadata_type, rows
from helpers import ROOT
from narrow_cases import CASES
from topk_migrate import bounded, discover, escape, files, guard, kernels, narrow, spelling, suppress
from topk_migrate.bump import bind, command, engine, signatures, sources
from topk_migrate.codemods.pass_topk_length import reach
from topk_migrate.discover import compile_patterns
from topk_migrate.model import InputError

KERNEL_NAMES = ("flash_mla_sparse_fwd", "flash_mla_sparse_prefill", "sparse_prefill_fwd", "flash_mla_with_kvcache")


class _Late(Exception):
    pass


@contextlib.contextmanager
def _deadline(cpu_seconds: float):
    """Raise _Late once the block has used cpu_seconds of CPU: at that moment where the re module checks for
    signals while it backtracks (SIGVTALRM), else when the block ends."""
    def late(*_):
        raise _Late(f"more than {cpu_seconds} s of CPU")

    old = signal.signal(signal.SIGVTALRM, late)
    signal.setitimer(signal.ITIMER_VIRTUAL, cpu_seconds)
    start = time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)
    if time.process_time() - start > cpu_seconds:
        late()


def _steady_allocator():
    """Keep freed memory in the heap (glibc): a text of megabytes, and what the code builds from it, is
    otherwise mapped anew at each run, and the kernel's page faults (thread time too) then decide the least
    of a few runs: a linear parse that copies its input once read 26x for 8x the input."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: never hand the heap's top back
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: no block mapped on its own
        libc.mallopt(-4, 0)  # M_MMAP_MAX


_steady_allocator()


def _cpu(run, arg, repeat: int) -> float:
    """The least CPU time of `repeat` runs: what the code costs; the rest is page faults and caches after
    another's allocation (timeit's reasoning: noise only ever adds). This thread's time only: a thread an
    earlier test left running would add its own to a process's (the heavy tier, one process, once read a
    quadratic construction as 3.5x for 8x the input)."""
    times = []
    for _ in range(repeat):
        t = time.thread_time()
        run(arg)
        times.append(time.thread_time() - t)
    return min(times)


FACTOR, BOUND = 8, 24  # sizes 8x apart; linear work grows 8x, quadratic 64x


MOST_CHARS = files.DEFAULT_MAX_BYTES  # the larger text: at most what a fork's file may hold (8 MiB)


def _growth(run, shape, floor: float = 0.0005, most: int = 1 << 20, repeat=(5, 3)):
    """(least CPU time of run(shape(8n)) / that of run(shape(n)), n, the larger time): n doubled from 16
    until run(shape(n)) costs `floor` (or reaches `most`, or shape(8n) MOST_CHARS), so that the timer's grain
    does not decide."""
    n = 16
    most = min(most, max(n, MOST_CHARS * n // (FACTOR * max(1, len(shape(n))))))
    while 2 * n <= most and _cpu(run, shape(n), 2) < floor:  # not the first, cold run alone
        n *= 2
    ratio, b = _ratio_at(run, shape, n, repeat)
    return ratio, n, b


def _ratio_at(run, shape, n: int, repeat=(5, 3)):
    small, large = shape(n), shape(FACTOR * n)
    a, b = _cpu(run, small, repeat[0]), _cpu(run, large, repeat[1])
    return b / max(a, 1e-6), b


def _grows_linearly(run, shape, n: int, ratio: float, large: float) -> bool:
    """ratio within BOUND, else at a second look, else at the next octave (8n against 64n): a text that
    outgrows a cache between n and 8n (the re module's backtracking stack, tokenize's lines) reads 25-50x
    once and 8-14x above it; quadratic work reads 64x at every octave. The look's deadline, 2 runs at 8n and
    2 at 64n (and making their texts), is what 64 runs at 8n cost (`large` each): linear work past the cache
    takes 2 + 2 x 8-14 (a 64n run varies 3x with the allocator), quadratic 2 + 2 x 64."""
    if ratio <= BOUND or _ratio_at(run, shape, n)[0] <= BOUND:
        return True
    try:
        with _deadline(0.05 + 64 * large):
            return _ratio_at(run, shape, FACTOR * n, repeat=(2, 2))[0] <= BOUND
    except _Late:
        return False


def _assert_linear(name, run, shape, most: int = 1 << 20):
    ratio, n, large = _growth(run, shape, most=most)
    if large < 0.002:  # 8n costs less than a few ms: too little work to be growing at all
        return
    assert _grows_linearly(run, shape, n, ratio, large), f"{name}: {ratio:.1f}x the CPU time for {FACTOR}x the input (n={n})"


# -- regressions: security4 #3 and #4, and the other super-linear regexes the audit found ---------------

HEAD = "from sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\ndef f(q, kv, i, s):\n    return flash_mla_sparse_fwd(q, kv, i, s)\n\n"


def test_a_run_of_hashes_after_a_kernel_name_costs_nothing():
    """#3: 26 `#` cost audit 8-40 s, each 2 more 4x; 60 `#` is beyond any wait."""
    text = HEAD + "g = flash_mla_sparse_fwd  " + "#" * 60 + "\n"
    with _deadline(1.0):
        for _ in range(20):
            assert narrow.narrow(text) is None  # the kernel stored in g: parsed whole, as before


def test_a_dotted_key_of_many_parts_in_pyproject_costs_nothing(tmp_path):
    """tomllib's time grows with the square of a dotted key's parts: `self.` x 40,000 then `x = 1` (200 KB)
    cost 21 s. A line of more than bounded.TOML_LINE_DOTS dots is not read: one line, no pins."""
    text = "[project]\n" + "self." * 40_000 + "x = 1\n"
    with _deadline(1.0):
        assert kernels.pyproject_pins(text, "pyproject.toml") == []
        with pytest.raises(ValueError, match="more than 128 dots"):
            bounded.toml(text)
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "m.py").write_text(HEAD)
    cli = subprocess.run([sys.executable, "-m", "topk_migrate", "check", str(tmp_path / "m.py")],
                         capture_output=True, text=True, timeout=60)  # before: 21 s
    assert cli.returncode == 2 and "more than 128 dots" in cli.stdout + cli.stderr and "Traceback" not in cli.stderr, cli.stderr


def test_a_line_of_blanks_in_requirements_costs_nothing(tmp_path):
    """#4: `a` + 80,000 blanks + `b` cost 14 s per process; the 1 MiB cap allowed an hour and a half.
    (40,000 blanks: the regex it replaced is not interrupted, and took 4 s here.)"""
    req = tmp_path / "requirements.txt"
    req.write_text("sglang-kernel==0.4.6\na" + " " * 40_000 + "b\n" + "a" + " -" * 50_000 + "\n")
    with _deadline(1.0):
        pins = kernels.requirements_file(str(req), str(tmp_path), "requirements.txt")
    assert [str(p) for p in pins] == ["sglang-kernel==0.4.6"]


def test_a_line_of_blanks_in_setup_cfg_costs_nothing():
    text = "[options]\ninstall_requires =\n    sglang-kernel==0.4.6\nkey" + " " * 1_000_000 + "x\n"
    with _deadline(1.0):
        assert kernels.setup_cfg_pins(text, "setup.cfg") == []  # a line with no `=`: configparser's error, as before
    text = "[options]\ninstall_requires =\n    sglang-kernel==0.4.6\n" + "k" + " " * 1_000_000 + "= v\n"
    with _deadline(1.0):
        assert [str(p) for p in kernels.setup_cfg_pins(text, "setup.cfg")] == ["sglang-kernel==0.4.6"]


def test_a_syntax_error_on_a_long_except_line_costs_nothing():
    with _deadline(1.0):
        assert files.syntax_error_message("except" + " " * 300_000 + "x\n").startswith("syntax error at line 1")
    assert "except X, e" in files.syntax_error_message("try:\n    pass\nexcept \t ValueError, e:\n    pass\n")


def test_a_base_module_of_annotations_without_a_value_costs_nothing():
    with _deadline(1.0):
        assert not metadata_type.assigns_none("x:" * 50_000 + "\ny = None\n", "x")
        assert metadata_type.assigns_none("x:" * 50_000 + "\nself.x: int = None\n", "x")


def _nesting(text: str):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return guard.nesting(tree, text)


def _fstring_parts(n: int) -> str:  # (3.11: each part's Constant spans the whole f-string)
    return 'x = f"' + "{a}'" * n + '"\n'


def _shifted(n: int) -> str:  # (a node's columns are UTF-8 offsets; the slice takes them as characters)
    return "\u00e9" * 40 + ' = "' + "'\\" * n + 'n"\n'


def test_string_literals_are_tokenized_once_and_never_rescanned():
    """guard.nesting tokenized each part of an f-string over the whole f-string (8,000 parts: 4 s), and a
    literal whose slice a non-ASCII line shifts (its columns are UTF-8 offsets) from each quote to the line's
    end (8,000 escaped quotes: 6 s): tokenize's regex for a string read the rest again from every quote."""
    for text in (_fstring_parts(8000), _shifted(8000)):
        with _deadline(2.0):  # (each takes 0.1 s)
            assert _nesting(text) < 10


# -- each replacement decides as what it replaced ----------------------------------------------------------

_OLD_OPTION_TAIL = re.compile(r"\s+--?[A-Za-z].*$")
_OLD_EXCEPT = re.compile(r"^\s*except\s+[\w.(), ]+,\s*\w+\s*:")
_OLD_ALIAS = r"(?:%s)(?:\s|\\|#[^\n]*)*as\b"


def _old_assigns_none(text, attr):
    return re.search(rf"\b(self\.)?{re.escape(attr)}\s*(:[^=\n]*)?=\s*None\b", text) is not None


def _words(r: random.Random, alphabet, most: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(r.randint(0, most)))


def test_the_blanks_regex_and_str_isspace_agree_on_every_code_point():
    """without_options strips with str.isspace/rstrip what the regex's `\\s` matched."""
    every = "".join(map(chr, range(0x110000)))
    assert re.sub(r"\s", "", every) == "".join(every.split())  # str.split() cuts at what str.isspace() holds
    assert "".join(re.findall(r"\s", every)).strip() == ""


def test_requirement_lines_lose_the_same_options():
    for line, want in (("sglang-kernel==0.4.6 --hash=sha256:ab", "sglang-kernel==0.4.6"),
                       ("x>=1 ; python_version<'3.9' -e .", "x>=1 ; python_version<'3.9'"),
                       ("x  \t--index-url https://a -r b", "x"), ("x -1", "x -1"), ("x --", "x --"),
                       ("x-y -z", "x-y"), ("-r req.txt", "-r req.txt"), ("x --9", "x --9"), ("x\u3000-q", "x")):
        assert kernels.without_options(line) == want == _OLD_OPTION_TAIL.sub("", line), line
    r = random.Random(4)
    alphabet = [" ", "\t", "\xa0", "\u3000", "\x1c", "-", "--", "a", "Z", "1", "=", "é", "x", "-a", " -", "#"]
    for _ in range(10_000):
        line = _words(r, alphabet, 12)
        assert kernels.without_options(line) == _OLD_OPTION_TAIL.sub("", line), repr(line)


def test_setup_cfg_parses_as_configparser_did():
    def parse(text, linear):
        cfg = configparser.ConfigParser(interpolation=None)
        if linear:
            cfg._optcre = kernels._CFG_OPTION
        try:
            cfg.read_string(text)
        except configparser.Error as e:
            return type(e).__name__
        return {s: dict(cfg.items(s)) for s in cfg.sections()}

    r = random.Random(5)
    alphabet = ["[options]\n", "[x]\n", "a", " ", "\t", "=", ":", "\n", "#", ";", "b = c\n", "  d\n", "\r", "\xa0",
                "=:", " = ", "[", "]", "install_requires", "\n  sglang-kernel==0.4.6"]
    for _ in range(1_000):
        text = _words(r, alphabet, 14)
        assert parse(text, True) == parse(text, False), repr(text)
    cfg = "[options]\ninstall_requires =\n    sglang-kernel==0.4.6 ; python_version>'3'\n[options.extras_require]\ngpu = flash-mla\n"
    assert [str(p) for p in kernels.setup_cfg_pins(cfg, "setup.cfg")] == [
        "sglang-kernel==0.4.6; python_version > \"3\"", "flash-mla; extra == \"gpu\""]


def test_the_except_hint_matches_what_it_matched():
    new = files._PY2_HINTS[2][0]
    r = random.Random(6)
    alphabet = [" ", "\t", "\xa0", "except", "a", ",", ":", ".", "(", ")", "\n", "é", "-", "  ", "e", "\x0c"]
    for _ in range(15_000):
        line = ("except" if r.random() < 0.5 else "") + _words(r, alphabet, 12)
        assert (new.search(line) is None) == (_OLD_EXCEPT.search(line) is None), repr(line)


def test_assigns_none_decides_as_the_search_it_replaced():
    for text, attr in (("self.x = None", "x"), ("x: Optional[T] = None", "x"), ("x: T\n= None", "x"),
                       ("yx = None", "x"), ("self.x == None", "x"), ("x: a = b = None", "x"), ("x = Nonex", "x"),
                       ("xself.x = None", "x"), ("x\u0301 = None", "x\u0301"), ("x  \n\n :\t= None", "x")):
        assert metadata_type.assigns_none(text, attr) == _old_assigns_none(text, attr), (text, attr)
    r = random.Random(7)
    attrs = ["x", "xx", "x\u0301", "x\u0301x", "ab", "self", "_"]
    alphabet = ["x", "xx", "self.", "self", ".", " ", "\n", ":", "=", "==", "None", "Nonex", "\u0301", "a", "\t",
                "#", "x:", "= None"]
    for _ in range(10_000):
        text, attr = _words(r, alphabet, 10), r.choice(attrs)
        assert metadata_type.assigns_none(text, attr) == _old_assigns_none(text, attr), (text, attr)


def _old_names(text: str, tree: ast.Module, entry_points) -> set:
    """narrow's kernel names as the regex gate found them (on inputs where it ends)."""
    names = set(entry_points)
    if re.compile(_OLD_ALIAS % "|".join(map(re.escape, entry_points))).search(text):
        for x in ast.walk(tree):
            if isinstance(x, (ast.Import, ast.ImportFrom)):
                names.update(a.asname for a in x.names if a.asname and any(n in a.name for n in entry_points))
    return names


def _new_names(text: str, tree: ast.Module, entry_points) -> set:
    return set(entry_points) | narrow._aliases(tree.body, entry_points, narrow._lines_of(text, ("import",)))


ALIASES = {
    "from": "from sgl_kernel import flash_mla_sparse_fwd as fwd\n",
    "module": "import sgl_kernel.flash_mla.flash_mla_sparse_fwd as fwd\n",
    "parenthesized with comments": "from m import (\n    flash_mla_sparse_fwd  # the kernel\n    # more\n    as fwd,\n)\n",
    "continued": "from m import flash_mla_sparse_fwd \\\n    as fwd\n",
    "nested": "def f():\n    try:\n        pass\n    except E:\n        if x:\n            from m import sparse_prefill_fwd as fwd\n",
    "in a match case": "match x:\n    case 1:\n        from m import flash_mla_sparse_fwd as fwd\n",
    "in a class, a with and a loop": "class C:\n    with a:\n        for i in x:\n            import m.flash_mla_sparse_fwd as fwd\n",
    "finally and else": "try:\n    pass\nfinally:\n    while 1:\n        pass\n    else:\n        from m import flash_mla_sparse_fwd as fwd\n",
    "a longer name, gated by another": "from m import flash_mla_sparse_fwd_ref as ref\nfrom m import flash_mla_sparse_fwd as fwd\n",
    "a longer name alone": "from m import flash_mla_sparse_fwd_ref as ref\n",
    "a name ending in one": "from m import my_flash_mla_sparse_fwd as mine\n",
    "no alias": "from m import flash_mla_sparse_fwd\nimport torch as t\n",
}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_narrow_finds_the_aliases_the_regex_found(name):
    text = ALIASES[name] + "\ndef g(q):\n    return fwd(q)\n"
    tree = ast.parse(text)
    assert _new_names(text, tree, KERNEL_NAMES) == _old_names(text, tree, KERNEL_NAMES)


def test_narrow_names_are_unchanged_on_every_sample_and_fixture():
    sources = list(CASES.values()) + [p.read_text() for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    sources += [p.read_text() for p in sorted((ROOT / "tests" / "adversarial").rglob("*.py"))]
    aliased = 0
    for text in sources:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # (a template)
        new = _new_names(text, tree, KERNEL_NAMES)
        assert new == _old_names(text, tree, KERNEL_NAMES)
        aliased += new != set(KERNEL_NAMES)
    assert aliased  # some of them alias a kernel


# -- counted: the scanners' steps ------------------------------------------------------------------------


class _Counted(str):
    """A line whose find() calls, and the characters each one passed over, are counted."""
    calls = [0, 0]

    def find(self, sub, start=0, *end):
        found = str.find(self, sub, start, *end)
        _Counted.calls[0] += 1
        _Counted.calls[1] += (len(self) if found < 0 else found) - start
        return found


def test_without_options_looks_at_each_dash_once():
    for shape in (lambda n: "a" + " " * n + "b", lambda n: "a" + " -" * n + "1", lambda n: "a " + "-" * n,
                  lambda n: ("x-y " * n) + " --opt"):
        per_char = []
        for n in (1000, 8000):
            line = shape(n)
            _Counted.calls[:] = [0, 0]
            kernels.without_options(_Counted(line))
            assert _Counted.calls[0] <= line.count("-") + 1
            per_char.append(_Counted.calls[1] / len(line))
        assert max(per_char) <= 1.0, per_char  # str.find passed over each character at most once


def test_assigns_none_looks_for_each_colons_stop_once(monkeypatch):
    passed = [0]
    real = metadata_type._EQUALS_OR_LINE_FEED

    class Counted:
        def search(self, text, pos):
            m = real.search(text, pos)
            passed[0] += (m.start() if m else len(text)) - pos
            return m

    monkeypatch.setattr(metadata_type, "_EQUALS_OR_LINE_FEED", Counted())
    for shape in (lambda n: "x:" * n + "\ny = None", lambda n: ("x: " * n + "\n") * 8 + "y = None"):
        per_char = []
        for n in (1000, 8000):
            text = shape(n)
            passed[0] = 0
            assert not metadata_type.assigns_none(text, "x")
            per_char.append(passed[0] / len(text))
        assert max(per_char) <= 1.0, per_char


def test_aliases_look_at_each_statement_once(monkeypatch):
    looked = [0]
    real = narrow._within
    monkeypatch.setattr(narrow, "_within", lambda *a: looked.__setitem__(0, looked[0] + 1) or real(*a))

    def nested(n):  # n functions, each holding an import at the end of an if/try/match
        return "".join(f"def f{i}(x):\n    if x:\n        try:\n            pass\n        except E:\n"
                       f"            import m.flash_mla_sparse_fwd as k{i}\n" for i in range(n))

    for n in (100, 800):
        looked[0] = 0
        text = nested(n)
        tree = ast.parse(text)
        assert narrow._aliases(tree.body, KERNEL_NAMES, narrow._lines_of(text, ("import",))) == {f"k{i}" for i in range(n)}
        statements = sum(isinstance(x, ast.stmt) for x in ast.walk(tree))
        assert looked[0] <= statements, (looked[0], statements)


# -- the inventory: every regex applied to fork text, through the code that applies it --------------------


def _requirements(text: str):
    """kernels.requirements_file over `text` (its continuation and comment regexes, the include regex,
    without_options, packaging's requirement parser), the file's reading replaced."""
    real = kernels.read_project_file
    kernels.read_project_file = lambda path, *a: text if path == "/p/requirements.txt" else None
    try:
        return kernels.requirements_file("/p/requirements.txt", "/p", "requirements.txt")
    finally:
        kernels.read_project_file = real


def _files_naming(data: bytes):
    project = reach.Project("/p/m.py", "/p")
    project._texts, project._big = [("/p/x.py", data)], []
    project._parse = lambda path, text: None
    return project.files_naming(["flash_mla_sparse_fwd", "sparse_prefill_fwd"])


_CANDIDATE = engine._Candidate(*[types.SimpleNamespace(entry_points=("flash_mla_sparse_fwd",),
                                                        import_roots=lambda: ("sgl_kernel", "flash_mla"))] * 2)
_STAT = os.stat(__file__)
_GLOBS = compile_patterns(["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/x/**/y", "[a-z]*a?*b"])
# the analysis' two inline searches (analysis.py: a KNOWN_METADATA field as a word; metadata_type.py: None or Optional
# in an annotation)
_FIELD_WORD = re.compile(rf"\b{analysis.KNOWN_METADATA[0].rsplit('.', 1)[1]}\b")
_NONE_OR_OPTIONAL = re.compile(r"\bNone\b|Optional")


def _decode(raw: bytes):
    try:
        return files.decode_source("x.py", raw, _STAT, 1 << 40)
    except files.InputError as e:
        return str(e)


def _normal_form(text: str):
    try:
        return spelling.normal_form(text)
    except InputError as e:
        return e


def _recipe_pins(text: str):
    """kernels.file_ways's readers of a recipe (conda's `=` too; a Python installer's arguments the second)."""
    conda = kernels._CONDA_PIN.sub(r"\1==", text)
    return kernels.spelled_pins(conda, "r"), kernels._mentioned_pins(text, "r", False)


def _toml_pins(text: str):
    return kernels.pyproject_pins(text, "pyproject.toml")


# name: (what runs the code over a fork's text, the worst-case shapes of that text at size n)
INVENTORY = {
    "kernels.normalize (packaging's canonicalize_name)": (kernels.normalize, [
        lambda n: "a" + "-_." * n + "!", lambda n: "-" * n]),
    # (bump.sources._dist_of's reader too, since its _FIELD regex went: issue 38 item 6)
    "kernels.metadata_fields (email.parser.HeaderParser)": (kernels.metadata_fields, [
        lambda n: "Name: " + "a" * n, lambda n: "Requires-Dist: x\n" * n, lambda n: "Requires-Dist: x\n" + " y\n" * n,
        lambda n: "\r" * n, lambda n: "N" * n + ":", lambda n: ":" * n, lambda n: "Name: a\n" + " \n" * n,
        lambda n: "Name:" + " " * n + "\n", lambda n: "Nam\n" * n]),
    "kernels.parse_declaration (_DECLARATION)": (lambda t: kernels.parse_declaration(t, "x"), [
        lambda n: " " * n + "a" * n + " " * n + "!", lambda n: "a" * n + " " * n + ":" + " " * n + "b" * n + " " * n + "!",
        lambda n: "a." * n + ":"]),
    "kernels.requirements_file (continuations, comments, _INCLUDE, without_options, packaging)": (_requirements, [
        lambda n: "a" + " " * n + "b\n", lambda n: "-r" + " " * n + "\n", lambda n: "-r" + " " * n + "=" + " " * n + "\n",
        lambda n: ("a #" + " " * 8) * n, lambda n: "\\\n" * n + "x", lambda n: "sglang-kernel==0.4.6 " + "-" * n,
        lambda n: "a -" * n, lambda n: " \t" * n + "#", lambda n: "x\n" * n, lambda n: "-c" + "-" * n,
        lambda n: "a==1 " + "--" * n + "\n"]),
    "kernels.without_options": (kernels.without_options, [
        lambda n: "a" + " " * n + "b", lambda n: "a -" * n, lambda n: "a " + "-" * n, lambda n: " -" * n + "1"]),
    "kernels.setup_cfg_pins (configparser with _CFG_OPTION, SECTCRE)": (lambda t: kernels.setup_cfg_pins(t, "setup.cfg"), [
        lambda n: "[options]\ninstall_requires =\n  x\na" + " " * n + "b\n",
        lambda n: "[options]\n" + ("a" + " " * 10) * n + "\n", lambda n: "[" * n + "\n", lambda n: "[a" + "]" * n + "x\n",
        lambda n: "[options]\ninstall_requires =\n" + "  a\n" * n, lambda n: "[options]\na" + " " * n + "=" + " " * n + "b\n",
        lambda n: "[options]\n" + "a:" * n + "\n"]),
    "kernels.pyproject_pins (TOML)": (_toml_pins, [
        lambda n: '[project]\ndependencies = ["a' + " " * n + 'b"]\n', lambda n: "a = " + "1_" * n + "1\n",
        lambda n: 'x = "' + "\\\\" * n + '"\n', lambda n: "a = 1979-05-27T07:32:00" + "0" * n + "\n"]),
    "kernels: a recipe's lines (_SPELLED_PIN, _CONDA_PIN, _WHEEL, _KEYED, _IMPORTED)": (
        _recipe_pins, [
            lambda n: "sgl-kernel[" * n + "==1", lambda n: "a" + " " * n + "b", lambda n: "\n" * n + "- a=1",
            lambda n: " - a" * n + "=", lambda n: "sgl-kernel " * n, lambda n: "import " * n + "sgl-kernel",
            lambda n: "a[" * n + "==1", lambda n: "sgl-kernel==" * n, lambda n: "a-1-" + "x" * n,
            lambda n: "sgl-kernel" + " " * n + "[x]" + " " * n + "=", lambda n: 'sgl-kernel = "' + "^" * n]),
    "kernels._other_tables (_TABLE, _READ_TABLES)": (kernels._other_tables, [
        lambda n: "[" + " " * n + "x", lambda n: "[[" * n, lambda n: "[a]\n" * n, lambda n: " " * n + "[project." + "a" * n]),
    "kernels._python_heredocs (_HEREDOC)": (kernels._python_heredocs, [
        lambda n: "python <<" * n, lambda n: "python - <<E\n" + "x\n" * n, lambda n: "python <<E\nE\n" * n,
        lambda n: "<<" + " " * n + "E", lambda n: "python - <<'" + "E" * n]),
    "kernels._may_name (_LEADING_NAME)": (lambda t: kernels._may_name(t, ("sglang-kernel",)), [
        lambda n: " " * n + "a" * n + "!", lambda n: "a" + "-." * n]),
    "kernels._requirement (packaging)": (lambda t: kernels._requirement(t, "r"), [
        lambda n: "a" + " " * n + "b", lambda n: "a==" + "1." * n + "x", lambda n: 'a; python_version == "' + " " * n,
        lambda n: "a[" + "b," * n, lambda n: "a @ " + "x" * n + " ;", lambda n: "a===" + "x" * n + " ;",
        lambda n: "a" + "-" * n + "!", lambda n: "a (" + ">=1," * n]),
    "narrow.narrow (_aliases, _lines_of)": (narrow.narrow, [
        lambda n: HEAD + "g = flash_mla_sparse_fwd  " + "#" * n + "\n",
        lambda n: HEAD + "".join(f"from m import flash_mla_sparse_fwd as f{i}  # as\n" for i in range(n)),
        lambda n: HEAD + "x = 1  # flash_mla_sparse_fwd " + "# flash_mla_sparse_fwd \\" * n + "\n"]),
    "narrow.without_stubs (_STUB)": (narrow.without_stubs, [
        lambda n: 'r"""' + "x" * n, lambda n: 'r"""' * n, lambda n: ('r"""' + "x" * 8 + '"') * n]),
    "files.decode_source (first two lines, line count of a decode error, detect_encoding's cookie)": (_decode, [
        lambda n: b"#" * n, lambda n: b"\r" * n + b"\xff", lambda n: b"# " + b"codin" * n + b"\n",
        lambda n: b"#" + b"coding:" * n, lambda n: b" " * n + b"#" + b"c" * n]),
    "files.keep_tail (_NEWLINE_AT_END)": (lambda t: files.keep_tail(t, t), [lambda n: "\r\n" * n, lambda n: "\r" * n]),
    "files._PY2_HINTS (syntax_error_message's hints on the line)": (lambda t: [rx.search(t) for rx, _ in files._PY2_HINTS], [
        lambda n: "except" + " " * n + "x", lambda n: "except " + "a," * n, lambda n: "except" + " \t" * n,
        lambda n: "except" + "\t " * n + "a, b", lambda n: "print" + " " * n, lambda n: "raise " + "a." * n + " " * n,
        lambda n: "0" + "7" * n + "8", lambda n: "`" + "x" * n, lambda n: "ur" * n, lambda n: " " * n + "except a" + ",a" * n]),
    "files._OUR_TEMP (names in a directory)": (files._OUR_TEMP.fullmatch, [
        lambda n: files.TEMP_PREFIX + "1" * n + "-" + "a" * n + ".tm", lambda n: files.TEMP_PREFIX + "1-" + "a-" * n]),
    "escape.printable, escape.listing (UNSAFE, _LISTING_UNSAFE), SURROGATE": (
        lambda t: (escape.printable(t), escape.listing(t), escape.SURROGATE.sub("", t)),
        [lambda n: "\x1b" * n, lambda n: "a" * n, lambda n: "\udcff\n" * n]),
    "suppress.reason (_COMMENT)": (lambda t: suppress.reason([t], 1, 1, "zz"), [
        lambda n: "#topk-migrate:ignore[)" * n, lambda n: "# topk-migrate: ignore[" + "a" * n,
        lambda n: "# topk-migrate: ignore[a] " * n, lambda n: "#" + " " * n + "topk-migrate", lambda n: "#" * n,
        lambda n: "# topk-migrate: ignore[a]" + " :-[(" * n]),
    "reach.Project.files_naming (names as words)": (_files_naming, [
        lambda n: b"flash_mla_sparse_fw " * n, lambda n: b"a" * n, lambda n: b"flash_mla_sparse_fwdx" * n]),
    "bump.engine._Candidate (root_re)": (_CANDIDATE, [
        lambda n: b"flash_mla_sparse_fwd " + b"sgl_kerne" * n, lambda n: b"flash_mla_sparse_fwd " + b".sgl_kernel" * n]),
    "bump.sources.wheel_name (packaging's parse_wheel_filename)": (sources.wheel_name, [
        lambda n: "a" * n + "-" + "1" * n + "-py3-none-any.wh", lambda n: "-" * n, lambda n: "a-" * n + ".whl",
        lambda n: "a-1-" + "1" * n + "-x-y-z.wh"]),
    "bump.signatures (_DIST, _VERSION, _MODULE, _SHA256)": (
        lambda t: (signatures.valid_dist(t[:200]), signatures.valid_version(t[:100]), signatures._MODULE.match(t),
                   signatures._SHA256.match(t)),
        [lambda n: "a/" * n + "a.p", lambda n: "a." * n + "py", lambda n: ("a" * 5 + "/") * n + ".py!"]),
    "bump.command (_BACKTICKS, _MARKUP)": (lambda t: (command._plain(t), command._code(t), command._md(t)), [
        lambda n: "`" * n, lambda n: "`a" * n, lambda n: "<&" * n]),
    "codemods rows.INDEX_NAME, field_meaning.WIDTH_NAME": (
        lambda t: (rows.INDEX_NAME.search(t), field_meaning.WIDTH_NAME.fullmatch(t)),
        [lambda n: "topi" * n, lambda n: "dsa_index_" * n]),
    "codemods analysis, metadata_type: a KNOWN_METADATA field as a word, None or Optional (copies of inline searches)": (
        lambda t: (_FIELD_WORD.search(t), _NONE_OR_OPTIONAL.search(t)),
        [lambda n: "dsa_cache_seqlens_int3 " * n, lambda n: "Non " * n]),
    "codemods metadata_type.assigns_none": (lambda t: metadata_type.assigns_none(t, "x"), [
        lambda n: "x:" * n + "\ny = None", lambda n: "x" + " " * n + ": " + "x:" * n + "\ny = None",
        lambda n: "self.x: " + "=" * n + "\ny = None", lambda n: "x = " + " " * n + "Non\ny = None",
        lambda n: ("x: " * 8 + "\n") * n + "y = None"]),
    "codemods metadata_type.assigns_none, an attribute of combining marks": (
        lambda t: metadata_type.assigns_none(t, "x\u0301" * 64),
        [lambda n: "x\u0301" * n + ":" + "x\u0301:" * n + "\ny = None"]),
    "scopecheck (libcst's NEWLINE_RE.split)": (lambda t: re.compile(r"\r\n?|\n").split(t), [lambda n: "\r" * n]),
    "guard.nesting (tokenize over the source of string literals)": (_nesting, [
        _fstring_parts, _shifted, lambda n: "x = (" + "'a' " * n + ")\n", lambda n: "x = (f\"{a}\"\n" + "  '\\''\n" * n + ")\n"]),
    "guard._string_pieces (tokenize)": (guard._string_pieces, [
        lambda n: '"a" ' * n, lambda n: "'" * n, lambda n: '"""' + "x" * n, lambda n: "1_" * n + "x",
        lambda n: "'\\" * n]),
    "discover: gitignore globs": (lambda t: _GLOBS.check(t, False), [lambda n: "a" * n, lambda n: "a/" * n + "x"]),
    "discover.declares_other_codec (_TWO_LINES, _CODING)": (discover.declares_other_codec, [
        lambda n: b"#" * n, lambda n: b"coding:" * n, lambda n: b"# coding=" + b" " * n + b"\n",
        lambda n: b"coding:utf-8 " * n]),
    "spelling.normal_form (_LINES, _RUN, tokenize)": (_normal_form, [
        lambda n: "x = 1\n" * n + "\ufb02 = 1\n", lambda n: "\ufb02" * n + " = 1\n", lambda n: "a\ufb02 " * n,
        lambda n: "\ufb02 = '" + "\\'" * n + "'\n", lambda n: "a" * n + "\ufb02\n", lambda n: "\ufb02 = 1\n" + "'" * n]),
}


if hasattr(bind, "_REFUSAL"):  # (`assert X is None` in a wrapper; read as paths elsewhere)
    INVENTORY["bump.bind (_REFUSAL)"] = (bind._REFUSAL.match, [lambda n: "a" * n + " is Non", lambda n: "a" * n + " is None!"])


@pytest.mark.parametrize("name", sorted(INVENTORY))
def test_every_regex_over_fork_text_is_linear(name):
    run, shapes = INVENTORY[name]
    for shape in shapes:
        _assert_linear(name, run, shape, most=1 << 17)


def _old_constructions():
    """(name, run, shape): what #3, #4 and the audit replaced, on the shape each was slow on."""
    def stock_setup_cfg(text):
        try:
            configparser.ConfigParser(interpolation=None).read_string(text)
        except configparser.Error:
            pass

    return (("option tail", lambda t: _OLD_OPTION_TAIL.sub("", t), lambda n: "a" + " " * n + "b"),
            ("except hint", _OLD_EXCEPT.search, lambda n: "except" + " " * n + "x"),
            ("self.x = None", lambda t: _old_assigns_none(t, "x"), lambda n: "x:" * n),
            ("configparser", stock_setup_cfg, lambda n: "[options]\na" + " " * n + "b\n"))


def test_the_measure_sees_what_the_old_constructions_cost():
    """The same growth, on what #3, #4 and the audit replaced: 24x is well above what linear work shows and
    below what these do, at the first look and the second (the heavy tier: at the next octave too)."""
    for name, run, shape in _old_constructions():
        ratio, n, _ = _growth(run, shape, repeat=(1, 1))
        assert ratio > BOUND or _ratio_at(run, shape, n)[0] > BOUND, (name, ratio, n)


@pytest.mark.heavy
def test_the_next_octave_sees_what_the_old_constructions_cost():
    """Three looks each at most: one that reads a quadratic construction as linear (a noisy machine) may be
    followed by another; a measure that never sees it fails."""
    for name, run, shape in _old_constructions():
        looks = (_growth(run, shape, repeat=(1, 1)) for _ in range(3))
        assert any(not _grows_linearly(run, shape, n, ratio, large) for ratio, n, large in looks), name


# -- heavy: random hostile fork text through the whole inventory ---------------------------------------------

HOSTILE = ["#", " ", "\t", "\\", "\\\n", '"', "'", '"""', 'r"""', "as", " as ", "as(", "flash_mla_sparse_fwd",
           "sparse_prefill_fwd", "sgl_kernel", "--opt", "-", "-r", "-c", "=", ":", "None", "self.", "x", "\n", "\r", "`",
           "[", "]", "(", ")", ",", "except", "0", "7", "8", "topk-migrate:", "ignore", "\u0301", "\xa0", "é", ".", "_",
           "coding:", "import ", "[options]", "Name:", "-py3-none-any.whl", "\udcff", "\x1b"]


def _recipe(r: random.Random):
    """A random fork text, as parts (token, how many times) and a way to grow it: each run longer, or the
    whole repeated (long runs hurt a regex that re-reads a run; many occurrences one that re-reads the rest)."""
    parts = [(r.choice(HOSTILE), r.choice([1, 1, 2, 3, 7, 40, 300])) for _ in range(r.randint(1, 8))]
    longer_runs = r.random() < 0.5
    if longer_runs:
        return lambda n: "".join(t * (c * n) for t, c in parts)
    return lambda n: "".join(t * c for t, c in parts) * n


def _adapted(name: str, text: str):
    """The text in the form the inventory entry takes (bytes for the byte-level ones)."""
    if name.startswith(("files.decode_source", "reach.", "bump.engine", "discover.declares")):
        return text.encode("utf-8", "surrogateescape")
    return text


@pytest.mark.heavy
def test_random_hostile_fork_text_is_linear_through_every_regex():
    """Rounds of one random recipe per inventory entry, for 25 s of CPU (at most 50 s on the clock)."""
    r = random.Random(2024)
    cpu, wall = time.process_time() + 25, time.monotonic() + 50
    rounds = 0
    while rounds < 2 or time.process_time() < cpu and time.monotonic() < wall:
        for name in sorted(INVENTORY):
            run = INVENTORY[name][0]
            shape = _recipe(r)
            _assert_linear(name, run, lambda n, s=shape, k=name: _adapted(k, s(n)), most=1 << 13)
        rounds += 1
