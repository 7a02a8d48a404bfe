"""Hypothesis over kernel call-site variants: argument orders, keyword/positional
mixes, starred arguments, import aliases, nesting, comments inside the call and
odd formatting. For each, migrate_source either produces a parseable, idempotent
rewrite that passes topk_length exactly once, or reports the site (manual,
opt-out, compliant) and leaves that call alone: never a crash, never invalid
code, never a duplicate keyword."""
import ast
import copy

import pytest
from hypothesis import given

from call_variants import ENTRY, PATH, SHORT, is_kernel_call, modules
from safety_samples import KERNEL
from topk_migrate.api import migrate_source
from topk_migrate.model import Status


class KernelCalls(ast.NodeVisitor):
    """Kernel calls in source order, with how many times each passes topk_length."""

    def __init__(self):
        self.found = []

    def visit_Call(self, node):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in (ENTRY, "fmla_fwd"):
            n_pos = 0
            for a in node.args:
                if isinstance(a, ast.Starred):
                    break
                n_pos += 1
            kw = sum(k.arg == "topk_length" for k in node.keywords)
            self.found.append((kw + (n_pos >= 7), ast.dump(_HideNested().visit(copy.deepcopy(node)))))
        self.generic_visit(node)


class _HideNested(ast.NodeTransformer):
    """A call's own arguments, with kernel calls nested in them replaced by a marker."""

    def __init__(self):
        self.top = True

    def visit_Call(self, node):
        if not self.top and is_kernel_call(node):
            return ast.Name(id="NESTED_KERNEL_CALL", ctx=ast.Load())
        self.top = False
        return self.generic_visit(node)


def kernel_calls(source):
    v = KernelCalls()
    v.visit(ast.parse(source))
    return v.found


@SHORT
@given(modules())
def test_call_site_variants(source):
    call_site_variants(source)


@pytest.mark.heavy
@given(modules())
def test_call_site_variants_heavy(source):
    call_site_variants(source)


def call_site_variants(source):
    compile(source, "<generated>", "exec", dont_inherit=True)  # the generator makes valid Python
    m = migrate_source(source, PATH, kernel=KERNEL)  # no exception, not even InputError
    new = m.new_source
    compile(new, PATH, "exec", dont_inherit=True)  # parseable; a repeated keyword fails here
    before, after = kernel_calls(source), kernel_calls(new)
    assert len(before) == len(after) == len(m.sites), (m.sites, new)
    fixable = [s for s in m.sites if s.status is Status.FIXABLE]
    changed = 0
    for (n_old, dump_old), (n_new, dump_new) in zip(before, after):
        assert n_new <= 1, f"topk_length passed twice:\n{new}"
        if n_old:  # already passes it: that call is left exactly as it was
            assert dump_new == dump_old, new
        changed += n_old == 0 and n_new == 1
    # every rewritten call is a fixable site and every fixable site is rewritten
    # (a nested kernel call inside a rewritten one counts once per call)
    assert changed == len(fixable), (m.sites, new)
    for s in m.sites:
        assert s.status in set(Status) and s.reason
    # idempotent: a second pass changes nothing and finds nothing left to fix
    m2 = migrate_source(new, PATH, kernel=KERNEL)
    assert m2.new_source == new
    assert not [s for s in m2.sites if s.status is Status.FIXABLE]


@SHORT
@given(modules())
def test_starred_arguments_are_never_guessed(source):
    starred_arguments_are_never_guessed(source)


@pytest.mark.heavy
@given(modules())
def test_starred_arguments_are_never_guessed_heavy(source):
    starred_arguments_are_never_guessed(source)


def starred_arguments_are_never_guessed(source):
    m = migrate_source(source, PATH, kernel=KERNEL)
    for (n_old, _), (n_new, dump_new), site in zip(kernel_calls(source), kernel_calls(m.new_source), m.sites):
        if n_old == 0 and ("Starred" in dump_new or "keyword(value=Name(id='kwargs'" in dump_new):
            assert n_new == 0 and site.status is Status.MANUAL, (site, m.new_source)
