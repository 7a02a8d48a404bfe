"""cstutil: keyword values built without the parser are the parser's nodes; a rewrite's code, generated only
where it replaced statements, is the whole module's."""
import random
from pathlib import Path

import libcst as cst
import pytest

from topk_migrate.cst import cstutil, cstwalk


@pytest.mark.parametrize("code", ["topk_length", "metadata.dsa_cache_seqlens_int32", "a.b.c", "None", "True",
                                  "x[0]", 'getattr(m, "f", None)', "é.x", "a.if_", "m.lambda_.x"])
def test_an_expression_built_is_the_one_parsed(code):
    assert cstutil._expression(code).deep_equals(cst.parse_expression(code))


def test_a_keyword_is_never_a_name():
    with pytest.raises(cst.ParserSyntaxError):
        cstutil._expression("a.if")  # parsed, and refused, as the parser would


# -- rewritten_code: the code of a rewrite, generating only the statements it replaced ----------------


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
SHAPES = {
    "tabs": "class A:\n\tdef f(self):\n\t\tx = 1\n\t\treturn x\n\n\tdef g(self):\n\t\treturn 2\n",
    "two spaces, comments": "# top\nclass A:\n  # lead\n  def f(self):  # t\n    x = 1  # c\n    # foot\n\n  def g(self): return 2\n",
    "twins": "class A:\n    def f(self):\n        return 1\n\n\nclass B:\n    def f(self):\n        return 1\n",
    "top-level twins": "def f():\n    return 1\n\n\ndef f():\n    return 1\n",
    "no final newline": "def f():\n    return 1\n\ndef g():\n    return 2",
    "semicolons, CRLF": "import a; import b\r\nif a:\r\n    x = 1; y = 2\r\nelse:\r\n    z = 3\r\n",
    "nested": "class A:\n    class B:\n        def f(self):\n            if x:\n                return 1\n            return 2\n",
}


def _path_copy(module, parent, target, replacement):
    """module with target replaced, every node off the path from the root kept (as a pruning rewrite keeps them)."""
    chain = [target]
    while chain[-1] in parent:
        chain.append(parent[chain[-1]])
    new = replacement
    for child, up in zip(chain, chain[1:]):
        new_child = new
        changes = {}
        for name in cstwalk.fields(type(up)) or [f for f in vars(up)]:
            value = getattr(up, name)
            if value is child:
                changes[name] = new_child
            elif isinstance(value, (tuple, list)) and any(v is child for v in value):
                changes[name] = type(value)(new_child if v is child else v for v in value)
        assert changes, type(up).__name__
        new = up.with_changes(**changes)
    return new


def _parents(module):
    parent, stack = {}, [module]
    while stack:
        node = stack.pop()
        for c in node.children:
            parent[c] = node
            stack.append(c)
    return parent


def _sources():
    for p in FIXTURES:
        yield p.name, p.read_text(encoding="utf-8")
    yield from SHAPES.items()


@pytest.mark.parametrize("name,source", [pytest.param(n, s, id=n) for n, s in _sources()])
def test_the_code_of_a_rewrite_is_the_whole_modules(name, source, monkeypatch):
    """Statements replaced at every depth, one or several at a time, with comments and blank lines changed
    too: the spliced code is new.code, byte for byte (its fallbacks included: twins, no final newline)."""
    module = cst.parse_module(source)
    rng = random.Random(name)
    lines = [n for n in _parents(module) if isinstance(n, (cst.SimpleStatementLine, cst.FunctionDef, cst.If))]
    assert lines
    real = cstutil.spliced_code
    generated = []  # rewrites whose whole module was generated (a fallback)
    monkeypatch.setattr(cstutil, "spliced_code", lambda *a: (lambda got: (got is None and generated.append(1), got)[1])(real(*a)))
    spliced = 0
    for _ in range(12):
        new = module
        for target in rng.sample(lines, min(len(lines), rng.choice([1, 2, 3]))):
            if isinstance(target, cst.SimpleStatementLine):
                repl = target.with_changes(body=[*target.body, cst.Expr(cst.Name("added"))])
            elif isinstance(target, cst.FunctionDef):
                repl = target.with_changes(name=cst.Name(target.name.value + "_2"),
                                           leading_lines=[*target.leading_lines, cst.EmptyLine(comment=cst.Comment("# n"))])
            else:
                repl = target.with_changes(test=cst.Name("changed"))
            parent = _parents(new)
            if target in parent:  # not rebuilt by an earlier replacement on its path
                new = _path_copy(new, parent, target, repl)
        before = len(generated)
        got = cstutil.rewritten_code(module, new, source)
        spliced += len(generated) == before
        assert got == new.code
    if name in ("top-level twins", "no final newline"):
        assert spliced < 12
    elif name.endswith(".py") or name == "twins":  # a twin is replaced with the class around it
        assert spliced >= 6  # the fixtures' rewrites generate only what they replaced


class _RenameIn(cst.CSTTransformer):
    """A rename inside one def, made by a transformer that rebuilds whatever it passes (layout included)."""

    def __init__(self, target):
        self.target, self.inside = target, 0

    def visit_FunctionDef(self, node):
        self.inside += node is self.target

    def leave_FunctionDef(self, original, updated):
        self.inside -= original is self.target
        return updated

    def leave_Name(self, original, updated):
        return updated.with_changes(value=updated.value + "_r") if self.inside else updated


@pytest.mark.parametrize("name,source", [pytest.param(n, s, id=n) for n, s in _sources()])
def test_the_code_of_a_transformers_rewrite_is_the_whole_modules(name, source):
    module = cst.parse_module(source)
    for target in [n for n in _parents(module) if isinstance(n, cst.FunctionDef)][:6]:
        new = module.visit(_RenameIn(target))
        assert cstutil.rewritten_code(module, new, source) == new.code


def test_the_engines_rewrite_generates_only_what_it_replaced(monkeypatch):
    """On the example backend beside 300 other classes: the edited statements and their new versions (once for
    the rewrite's validation too), not the module."""
    from topk_migrate import api

    source = (ROOT / "fixtures" / "examples" / "dsa_backend.py").read_text() + "".join(
        f"\n\nclass Other{i}:\n    def m(self, x):\n        return x + {i}\n" for i in range(300))
    generated = []
    real = cstutil._code_at
    monkeypatch.setattr(cstutil, "_code_at", lambda *a: (generated.append(len(real(*a))), real(*a))[1])
    from topk_migrate.cst.scopecheck import StatementPositions

    placed = []
    real_text = StatementPositions.text_of
    monkeypatch.setattr(StatementPositions, "text_of", lambda self, n: (placed.append(real_text(self, n)), placed[-1])[1])
    m = api.migrate_source(source, "backend.py", kernel="sglang-kernel==0.4.6")
    assert m.changed and generated
    assert sum(generated) < len(source) / 3, (sum(generated), len(source))
    assert any(placed)  # a statement whose positions were worked out is not generated again to be found


@pytest.mark.parametrize("code", ['getattr(m, "f", None) if getattr(m, "f", None) is not None and '
                                  'getattr(m, "f", None).shape[0] == q.shape[0] else None',
                                  "x[0]", "f(*a, **k)", "lambda u: (w := u)", '(a, [b, {c: d}], f"{e!r:>{w}}")'])
def test_an_expression_parsed_once_is_copied_node_for_node(code):
    """A second site's expression is a copy of the first's: equal, the same code, no node shared but whitespace
    and comments (immutable, and never told apart)."""
    first, second = cstutil._expression(code), cstutil._expression(code)
    assert second.deep_equals(first) and second.deep_equals(cst.parse_expression(code))
    assert cst.Module([]).code_for_node(second) == code

    def ids(node):
        out, stack = {}, [node]
        while stack:
            n = stack.pop()
            out[id(n)] = n
            stack.extend(n.children)
        return out
    mine, theirs = ids(first), ids(second)
    shared = [mine[i] for i in mine.keys() & theirs.keys()]
    assert all(isinstance(n, cstutil._SHARED) for n in shared)  # every other node is a copy of its own


@pytest.mark.parametrize("name,source", [pytest.param(n, s, id=n) for n, s in _sources()])
def test_code_generated_without_recording_positions_is_libcsts(name, source):
    module = cst.parse_module(source)
    assert cstutil._code_at(module, module, ()) == module.code == source
    for stmt in module.body:
        assert cstutil._code_at(stmt, module, ()) == module.code_for_node(stmt)


@pytest.mark.parametrize("accelerated", [True, False])
def test_a_names_assignments_come_in_source_order(monkeypatch, accelerated):
    """LibCST gives a scope's assignments of a name as a set, in any order each run; the analysis reads the first
    that answers (a reason quotes it), so the same input must give the same report, with the accelerators on or
    off (CI caught a reason naming one pool with them on and another with them off)."""
    from topk_migrate.cst import accel
    from topk_migrate.cst.scopecheck import Tree

    if not accelerated:
        monkeypatch.setenv(accel.ENV, "1")
    names = [f"pool_{i}" for i in range(40)]
    source = "def f(flag):\n" + "".join(f"    if flag == {i}:\n        x = {n}()\n" for i, n in enumerate(names))
    source += "    return x\n"
    tree = Tree(cst.parse_module(source))
    read = tree.module.body[0].body.body[-1].body[0].value
    got = [tree.assignment_statement(a).value.func.value for a in tree.binding(read, "x").assignments]
    assert got == names
