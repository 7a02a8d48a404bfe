"""The rule skips its scope walk for value uses of the kernel (`partial(kernel)`, `k = kernel`) when no
kernel name occurs outside a callee or an import (`_maybe_value_use`). That shortcut must never hide a
site: on every input below, the value-use sites with it equal those of the full walk."""

import libcst as cst
import pytest

from adversarial.generated import SAMPLE
from adversarial.variants import VARIANTS
from helpers import ROOT
from topk_migrate.codemods.pass_topk_length import rule as rule
from topk_migrate.codemods.pass_topk_length import value_use as value_use
from topk_migrate.cst.resolve import collect
from topk_migrate.cst.scopecheck import Tree

VALUE_USES = [  # each is a value use; the shortcut must see it
    "from sgl_kernel import flash_mla_sparse_fwd\nk = flash_mla_sparse_fwd\n",
    "import functools\nfrom sgl_kernel import flash_mla_sparse_fwd as f\nk = functools.partial(f, scale=1.0)\n",
    "import sgl_kernel\nclass B:\n    def __init__(self):\n        self.k = sgl_kernel.flash_mla_sparse_fwd\n",
    "import sgl_kernel.flash_mla as fm\ndef g(q):\n    return run(fm.flash_mla_sparse_fwd, q)\n",
    "import torch\nop = torch.ops.sgl_kernel.sparse_prefill_fwd.default\n",
    "from sgl_kernel import flash_mla_sparse_fwd\nKERNELS = {'sparse': flash_mla_sparse_fwd}\n",
    "from sgl_kernel import flash_mla_sparse_fwd\ndef g(q):\n    return [flash_mla_sparse_fwd][0](q)\n",
    "def flash_mla_sparse_fwd(q):\n    return q\n\nk = flash_mla_sparse_fwd\n",  # a def binds; the read is a use
    "try:\n    from sgl_kernel import flash_mla_sparse_fwd\nexcept ImportError:\n    flash_mla_sparse_fwd = None\n"
    "def g(f=flash_mla_sparse_fwd):\n    return f\n",  # assigned, then read as a default
]
BINDINGS_ONLY = [  # the kernel's name only bound and called: the scope walk is skipped, and finds nothing
    "def flash_mla_sparse_fwd(q, kv, indices, sm_scale, topk_length=None):\n    return q\n",
    "try:\n    from sgl_kernel import flash_mla_sparse_fwd\nexcept ImportError:\n    flash_mla_sparse_fwd = None\n"
    "def g(q):\n    return flash_mla_sparse_fwd(q, topk_length=None)\n",
    "class K:\n    def __init__(self, flash_mla_sparse_fwd):\n        self.flash_mla_sparse_fwd: object = None\n",
]


def _sources(tier="default"):
    """Every input, split between the tiers: the heavy tier takes the fixtures (real backends, the
    costliest to parse) and three adversarial variants in four, the default tier the rest (together:
    every input, each once)."""
    variants = [(i, v) for i, v in enumerate(VARIANTS)]
    if tier == "heavy":
        for p in sorted((ROOT / "fixtures").rglob("*.py")):
            yield p.name, p.read_text()
        yield from ((v.name, v.source) for i, v in variants if i % 4)
        return
    for i, v in variants:
        if i % 4 == 0:
            yield v.name, v.source
    for v in SAMPLE:
        yield v.name, v.source
    for i, ex in enumerate(rule.VALID + rule.INVALID):
        yield f"example {i}", ex.code
    for i, src in enumerate(VALUE_USES + BINDINGS_ONLY):
        yield f"case {i}", src


def _value_uses(src: str, shortcut: bool, monkeypatch) -> list:
    module = cst.parse_module(src)
    tree = Tree(module)
    facts = collect(module, tree.position)
    if not shortcut:
        monkeypatch.setattr(value_use, "_maybe_value_use", lambda tree, facts: True)
    try:
        return [site for site, _node in value_use._value_uses(tree, facts, "m.py")]
    finally:
        monkeypatch.undo()


def test_the_shortcut_never_hides_a_value_use(monkeypatch):
    the_shortcut_never_hides_a_value_use(monkeypatch, "default", 100)


@pytest.mark.heavy
def test_the_shortcut_never_hides_a_value_use_heavy(monkeypatch):
    the_shortcut_never_hides_a_value_use(monkeypatch, "heavy", 150)


def the_shortcut_never_hides_a_value_use(monkeypatch, tier, at_least):
    checked = skipped_walks = 0
    for name, src in _sources(tier):
        full = _value_uses(src, False, monkeypatch)
        assert _value_uses(src, True, monkeypatch) == full, name
        checked += 1
        skipped_walks += not full and not value_use._maybe_value_use(Tree(cst.parse_module(src)), collect(cst.parse_module(src)))
    assert checked > at_least and skipped_walks > 10  # the shortcut is exercised, not only the walk


@pytest.mark.parametrize("src", VALUE_USES)
def test_each_value_use_is_reported(src):
    module = cst.parse_module(src)
    tree = Tree(module)
    assert value_use._maybe_value_use(tree, collect(module, tree.position))
    assert value_use._value_uses(tree, collect(module, tree.position), "m.py")


@pytest.mark.parametrize("src", BINDINGS_ONLY)
def test_bindings_alone_skip_the_walk(src):
    module = cst.parse_module(src)
    tree = Tree(module)
    assert not value_use._maybe_value_use(tree, collect(module, tree.position))
