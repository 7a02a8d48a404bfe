"""cstwalk: a read-only walk sees what LibCST's own walk sees, in the same order, with the same callbacks."""
from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import FunctionScope

from helpers import ROOT
from topk_migrate.cst import cstwalk

FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))  # the real backends: the default tier
# more shapes of Python, the heavy tier: the engine's modules (those of its audit, discover and cst packages too)
ENGINE = sorted(p for d in ("", "audit", "discover", "cst") for p in (ROOT / "topk_migrate" / d).glob("*.py"))
SOURCES = FIXTURES + ENGINE
HEAVY = pytest.mark.heavy
ODD = '''\
from .a import (b as c, d)
x = f"{a!r:>{w}} {b=}"
@dec(1)
async def g(p, /, q=1, *r, s: int = 2, **t) -> "T":
    async with a as (b, c), d:
        async for i in j:
            yield [k async for k in l if k]
    match p:
        case {"a": [1, *rest]} | Point(x=0) as z if z:
            pass
    try:
        pass
    except* ValueError as e:
        raise
    lambda u, *, v=1: (w := u)
    global y
    del x[1:2, ::3], y.z
class K(B, metaclass=M):
    k: int = 1
'''


def _modules(paths=FIXTURES, odd=True):
    for path in paths:
        yield path.name, cst.parse_module(path.read_text(encoding="utf-8"))
    if odd:
        yield "odd", cst.parse_module(ODD)


# each test below runs on the fixtures and odd shapes here, on the engine's modules in the heavy tier
EVERY = [pytest.param(n, m, id=n) for n, m in _modules()] + [
    pytest.param(n, m, id=n, marks=HEAVY) for n, m in _modules(ENGINE, odd=False)]


class _Record(cst.CSTVisitor):
    """Every callback LibCST makes, attribute hooks included."""

    def __init__(self):
        self.seen = []

    def on_visit(self, node):
        self.seen.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # a visitor may stop at a node: its children are not walked

    def on_leave(self, node):
        self.seen.append(("leave", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.seen.append(("field", id(node), attribute))

    def on_leave_attribute(self, node, attribute):
        self.seen.append(("left", id(node), attribute))


class _ClassBases(cst.CSTVisitor):
    def __init__(self):
        self.seen = []

    def visit_ClassDef_bases(self, node):
        self.seen.append(("bases", node.name.value))

    def leave_ClassDef_bases(self, node):
        self.seen.append(("bases done", node.name.value))

    def visit_Name(self, node):
        self.seen.append(node.value)


class _Plain(cst.CSTVisitor):
    """Every on_visit and on_leave, no field hooks: the walk without layout reads only the fields that can hold
    more than layout."""

    def __init__(self):
        self.seen = []

    def on_visit(self, node):
        self.seen.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)

    def on_leave(self, node):
        self.seen.append(("leave", id(node)))


class _Hooks(cst.CSTVisitor):
    """CSTVisitor's own dispatch to visit_<Node>/leave_<Node> (looked up once per node type in the fast walk);
    visit_ returning False stops the descent, None does not."""

    def __init__(self):
        self.seen = []

    def visit_Name(self, node):
        self.seen.append(("name", id(node)))

    def visit_Lambda(self, node):
        self.seen.append(("lambda", id(node)))
        return False

    def visit_Call(self, node):
        self.seen.append(("call", id(node)))
        return True

    def leave_Call(self, node):
        self.seen.append(("call done", id(node)))

    def leave_Comma(self, node):
        self.seen.append(("comma", id(node)))


@pytest.mark.parametrize("name,module", EVERY)
def test_children_are_libcsts_in_its_order(name, module):
    stack = [module]
    while stack:
        node = stack.pop()
        want = list(node.children)
        assert [id(c) for c in cstwalk.children(node)] == [id(c) for c in want], type(node).__name__
        stack.extend(want)


def _layout_ids(module):
    """ids of every node at or under a TRIVIA node."""
    out, stack = set(), [(module, False)]
    while stack:
        node, under = stack.pop()
        under = under or isinstance(node, cstwalk.TRIVIA)
        if under:
            out.add(id(node))
        stack.extend((c, under) for c in node.children)
    return out


@pytest.mark.parametrize("paths", [pytest.param(FIXTURES, id="fixtures"),
                                   pytest.param(ENGINE, id="engine", marks=HEAVY)])
@pytest.mark.parametrize("visitor", [_Record, _ClassBases, _Plain, _Hooks])
@pytest.mark.parametrize("trivia", [True, False], ids=["with layout", "without layout"])
def test_a_walk_makes_libcsts_callbacks(visitor, paths, trivia):
    """The same callbacks as LibCST's walk, in the same order; without layout, on every node that is not layout
    (a node type walked LibCST's way, its method branching, still hands its layout to the visitor)."""
    seen = 0
    for _, module in _modules(paths):
        theirs, ours = visitor(), visitor()
        module.visit(theirs)
        layout = set() if trivia else _layout_ids(module)
        with cstwalk.fast_visits(trivia=trivia):
            assert module.visit(ours) is module

        def substantive(events, layout=layout):
            return [e for e in events if not isinstance(e, tuple) or e[1] not in layout]
        assert substantive(ours.seen) == substantive(theirs.seen)
        if trivia:
            assert ours.seen == theirs.seen
        else:
            assert len(ours.seen) < len(theirs.seen) or len(ours.seen) == len(substantive(theirs.seen))
        seen += len(ours.seen)
    assert seen > 1000


def test_only_inside_the_context_and_transformers_keep_libcsts_walk():
    class Rename(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value=updated.value.upper()) if updated.value == "x" else updated

    module = cst.parse_module("x = y\n")
    with pytest.raises(RuntimeError):
        with cstwalk.fast_visits():
            assert cst.CSTNode.visit is not cstwalk._lib_visit
            assert module.visit(Rename()).code == "X = y\n"
            raise RuntimeError
    assert cst.CSTNode.visit is cstwalk._lib_visit


def test_a_method_with_a_branch_is_walked_libcsts_way():
    assert cstwalk.fields(cst.FormattedStringExpression) is None  # its method branches on a field
    assert cstwalk.fields(cst.Name) == ("lpar", "rpar")
    assert cstwalk.fields(cst.Newline) == ()  # a leaf


def _scope_facts(module, tree=None):
    """Every read's resolution and every assignment, by node identity: what the analysis reads of a scope map."""
    from topk_migrate.cst import scopecheck

    tree = tree or scopecheck.Tree(module, positions=False)
    table = scopecheck.resolution_table(tree)  # ranks, named below by each scope's kind and node (a partial
    scope = {tree.rank_of(s): (type(s).__name__, id(getattr(s, "node", None))) for s in tree.scopes}  # ranks otherwise)
    scope[-2] = "builtins"
    reads = {(scope[r], name): [(scope.get(to), id(n)) for to, n in v] for (r, name), v in table.items()}
    assigned = sorted((scope[tree.rank_of(s)], name, id(getattr(a, "node", None)),
                       tuple(sorted(id(x.node) for x in a.references)))
                      for s in tree.scopes for name in {a.name for a in s.assignments} for a in s.assignments[name])
    return reads, assigned, tree.order.keys() - {id(n) for n in tree.parent if isinstance(n, cstwalk.TRIVIA)}


@pytest.mark.parametrize("name,module", EVERY)
def test_scopes_without_walking_the_layout_are_libcsts(name, module, monkeypatch):
    """The engine's walks leave out TRIVIA, and its scope visitor counts assignments with a type test made
    once per node type: the numbering and the scope analysis see the same names, calls and statements
    in the same order, and resolve every read the same way, as LibCST's own ScopeProvider resolved
    through a MetadataWrapper with LibCST's walk."""
    from libcst.metadata import MetadataWrapper, ScopeProvider

    from topk_migrate.cst import scopecheck

    with monkeypatch.context() as m:
        m.setattr(scopecheck, "scope_map",
                  lambda module, provider=None: MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider))
        want = _scope_facts(module)
    with cstwalk.fast_visits(trivia=False):
        got = _scope_facts(module)
    assert got[0] == want[0] and got[1] == want[1]
    assert got[2] == want[2]  # every node that is not layout is numbered
    assert len(want[0]) or not module.body or name == "__init__.py"


@pytest.mark.parametrize("name,module", EVERY)
def test_positions_are_libcsts_for_every_node_but_layout(name, module):
    from libcst.metadata import MetadataWrapper, PositionProvider

    from topk_migrate.cst import scopecheck, scopefast

    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = scopecheck.Tree(module).position
    assert all(theirs[n] == r for n, r in ours.items())  # each range recorded is LibCST's
    assert not [n for n in theirs if n not in ours and not scopefast._unrecorded(n)]  # and only layout is left out
    assert len(ours) > len(theirs) / 4 or len(theirs) < 50


def test_a_range_hoisted_from_unrecorded_layout_falls_back_to_libcsts_provider(monkeypatch):
    from libcst.metadata import MetadataWrapper, PositionProvider

    from topk_migrate.cst import scopecheck, scopefast

    module = cst.parse_module("from a import (\n    b,\n)\nx = [1]\n")
    monkeypatch.setattr(scopefast, "_BRACKETS", ())  # as if `)` were left out: the import's range needs it
    monkeypatch.setattr(scopefast, "_UNRECORDED", {})
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert dict(scopecheck.Tree(module).position) == dict(theirs)


def _texts():
    for path in FIXTURES:
        yield path.name, path.read_text(encoding="utf-8")
    yield "odd", ODD
    yield "no final newline", "class A:\n    def f(self):\n        return 1\n    x = 2"
    yield "semicolons and a CR", "import a; import b\r\nclass B:  # c\r\n\r\n    @d\r\n    # e\r\n    def g(self): pass\r\n"
    yield "lone CR", "x = 1\ry = 2\n"
    yield "decorated at the top", "# a\n\n@dec\n\n# b\n@dec2(\n  1)\nclass C(\n  object):\n  '''d'''\n  def h(s): ...\n"


@pytest.mark.parametrize("name,text", [pytest.param(n, t, id=n) for n, t in _texts()] + [
    pytest.param(p.name, p.read_text(encoding="utf-8"), id=p.relative_to(ROOT).as_posix(), marks=HEAVY) for p in ENGINE])
def test_statement_positions_are_the_whole_modules(name, text):
    """Positions worked out per statement, node by node in any order, are those of the whole module."""
    from topk_migrate.cst import scopecheck, scopefast

    module = cst.parse_module(text)
    whole = scopecheck.Tree(module).position
    tree = scopecheck.Tree(module, source=text)
    lazy = tree.position
    nodes = [n for n in tree.parent if not scopefast._unrecorded(n)]
    for node in reversed(nodes):  # the last statements first: no unit leans on one before it
        assert lazy.get(node) == whole.get(node), (type(node).__name__, name)
    assert lazy.get(cst.Name("elsewhere")) is None


def test_statement_positions_generate_only_the_statements_asked():
    from topk_migrate.cst import scopecheck

    text = "import a\n\n\nclass A:\n    def f(self):\n        return a.b(1)\n\n    def g(self):\n        return 2\n"
    module = cst.parse_module(text)
    tree = scopecheck.Tree(module, source=text)
    call = next(n for n in tree.parent if isinstance(n, cst.Call))
    assert tree.position[call].start.line == 6
    assert not tree.position._whole and len(tree.position._done) == 1  # only the line of `f` holding the call


def test_another_threads_walks_keep_libcsts_way():
    import threading

    module = cst.parse_module(ODD)
    theirs = _Record()
    module.visit(theirs)
    got = {}

    def other():
        ours = _Record()
        module.visit(ours)
        got["seen"] = ours.seen

    with cstwalk.fast_visits(trivia=False):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        mine = _Record()
        module.visit(mine)
    assert got["seen"] == theirs.seen  # every layout node walked, as LibCST does
    assert len(mine.seen) < len(theirs.seen)  # this thread's walk left the layout out


def test_statement_positions_doubt_falls_back_to_the_whole_modules(monkeypatch):
    """A pairing that breaks (here: CPython's statements shifted a line) is caught by the text check."""
    from topk_migrate.cst import scopecheck, scopefast

    text = "import a\n\n\nclass A:\n    def f(self):\n        return a.b(1)\n"
    module = cst.parse_module(text)
    whole = scopecheck.Tree(module).position
    real = scopefast._zip_units

    def shifted(body, stmts, indents, module_, found):
        real(body, stmts, indents, module_, found)
        for k, (node, line, ind) in list(found.items()):
            found[k] = (node, line + 1, ind)

    monkeypatch.setattr(scopefast, "_zip_units", shifted)
    tree = scopecheck.Tree(module, source=text)
    call = next(n for n in tree.parent if isinstance(n, cst.Call))
    assert tree.position[call] == whole[call] and tree.position._whole


LAZY = '''\
import os
late_user = None


def uses_late():
    return late + os.sep


class C:
    attr = 1

    def m(self, a, b=attr, *, c: "C" = None):
        def inner(d):
            return a + d + self.attr

        class Local:
            def n(self):
                return inner(a)

        a = [a for a in range(3) if a]
        return inner, Local, a

    @staticmethod
    def s(x):
        y = x
        y = y + 1
        return lambda z: z + y


def outer():
    v = 1

    def closes():
        nonlocal v
        v += 1
    return closes


def declares():
    global late_user
    late_user = 2


late = 3
'''


def _lazy_inputs():
    return EVERY + [pytest.param("lazy", cst.parse_module(LAZY), id="lazy")]


@pytest.mark.parametrize("name,module", _lazy_inputs())
def test_bodies_walked_when_asked_resolve_as_the_whole_analysis(name, module):
    """Every def outside the others left out (those declaring global/nonlocal kept): each name read, asked in a
    random order, resolves to the same assignments in the same kind of scope as in the whole analysis, a
    function's own names with the same reads; once every read is asked for, every fact is the whole one's."""
    import random

    from topk_migrate.cst import scopecheck

    def sig(scope):
        return None if scope is None else (type(scope).__name__, id(getattr(scope, "node", None)))

    def assigned(b):  # LibCST keeps a name's assignments in a set: their order is the objects' addresses'
        return sorted((id(getattr(a, "node", None)), type(a).__name__) for a in b.assignments)

    with cstwalk.fast_visits(trivia=False):
        whole = scopecheck.Tree(module, positions=False)
        lazy = scopecheck.Tree(module, positions=False)
        lazy.skip_bodies(lazy.find(cst.FunctionDef))  # it leaves out those it may
        names = [n for n in whole.parent if isinstance(n, cst.Name)]
        random.Random(name).shuffle(names)
        for n in names:
            assert sig(lazy.scope_of.get(n)) == sig(whole.scope_of.get(n)), (n.value, name)
            bw, bl = whole.binding(n, n.value), lazy.binding(n, n.value)
            assert assigned(bl) == assigned(bw), (n.value, name)
            if bw.assignments and isinstance(bw.assignments[0].scope, FunctionScope):
                def reads(b):  # a function's names: its reads are its own
                    return sorted((id(getattr(a, "node", None)), sorted(id(r.node) for r in a.references))
                                  for a in b.assignments)
                assert reads(bl) == reads(bw), (n.value, name)
        got = _scope_facts(module, lazy)
        want = _scope_facts(module, whole)
    assert got[0] == want[0] and got[1] == want[1]
    if isinstance(lazy.scope_of, scopecheck._LazyScopes):
        assert lazy.scope_of._pending == {}
    if name == "lazy":  # the shapes above: three of the five outermost defs left out, outer and declares kept
        assert len(lazy._skipped[2]) == 3 and isinstance(lazy.scope_of, scopecheck._LazyScopes)


def test_a_hook_an_instance_holds_is_the_one_called():
    """CSTVisitor's dispatch reads the instance: a `visit_Name` set on one visitor object is called for it, and
    the class's for another object of the same class."""
    module = cst.parse_module("x = y + z\n")

    class V(cst.CSTVisitor):
        def __init__(self):
            self.seen = []

        def visit_Name(self, node):
            self.seen.append(("class", node.value))

    plain, patched = V(), V()
    patched.visit_Name = lambda node: patched.seen.append(("instance", node.value))
    with cstwalk.fast_visits(trivia=False):
        module.visit(plain)
        module.visit(patched)
    assert plain.seen == [("class", n) for n in "xyz"]
    assert patched.seen == [("instance", n) for n in "xyz"]
