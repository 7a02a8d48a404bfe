"""What `self.<attr>` holds, proven for the object (docs/soundness.md `self-attribute`): a kernel held in
`self.sparse_fwd` (round J2's s_self_kernel_attr) is called as the kernel, and a `**self.opts` that is always a
dict (round K's s_map_plain) takes the derived lengths, where every write that can give an instance of the class
that attribute is read; each refusal below is a way it may hold something else."""
import textwrap

import pytest

from topk_migrate import api

K = "sglang-kernel==0.4.6"
HEAD = "import functools\n\nfrom sgl_kernel.flash_mla import flash_mla_sparse_fwd\n\n\n"
HELD = HEAD + textwrap.dedent("""\
    class Backend:
        def __init__(self):
            self.sparse_fwd = flash_mla_sparse_fwd

        def forward(self, q, kv, idx, s):
            return self.sparse_fwd(q, kv, idx, s)
    """)
OPTS = HEAD + textwrap.dedent("""\
    class Backend:
        def __init__(self):
            self.opts = {"d_v": 512}

        def forward(self, q, kv, idx, s):
            return flash_mla_sparse_fwd(q, kv, idx, s, **self.opts)
    """)


def statuses(tmp_path, src: str, others=()):
    for name, text in others:
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / "backend.py"
    path.write_text(src)
    m = api.migrate_source(src, str(path), K, lengths="derived")
    return m, sorted((s.line, s.status.value) for s in m.sites)


@pytest.mark.parametrize("src", [
    HELD,
    HELD.replace("class Backend:\n", "class Backend:\n    sparse_fwd: object  # an annotation binds nothing\n\n"),
    HELD.replace("= flash_mla_sparse_fwd", "= functools.partial(flash_mla_sparse_fwd, d_v=512)"),
    HELD.replace("class Backend:", "class Base:\n    pass\n\n\nclass Backend(Base):"),
    HELD.replace("self.sparse_fwd = flash_mla_sparse_fwd", "self.sparse_fwd: object = flash_mla_sparse_fwd"),  # round M
    HELD.replace("import functools\n", "import functools\n\nimport torch\n").replace(
        "    def forward(", "    @torch.no_grad()\n    def forward("),
])
def test_a_kernel_held_in_self_is_called_as_the_kernel(tmp_path, src):
    m, got = statuses(tmp_path, src)
    assert got == [(src.count("\n"), "fixable")], m.sites  # (the holder, read by no other file, is no site)
    assert "self.sparse_fwd(q, kv, idx, s, topk_length=" in m.new_source
    compile(m.new_source, "backend.py", "exec")


_BASE = "class AttentionBackend:\n    def init_forward_metadata(self, batch):\n        pass\n"


@pytest.mark.parametrize("base,fixable", [
    (_BASE, True),  # sglang's layout: the backend's base in another file of the project
    (_BASE + "\n\nclass Middle(AttentionBackend):\n    pass\n", True),
    (_BASE.replace("        pass\n", "        self.sparse_fwd = print\n"), False),  # the base sets it too
    (_BASE + "\n    @property\n    def sparse_fwd(self):\n        return print\n", False),
    (_BASE + "\n    def __getattr__(self, name):\n        return print\n", False),
    ("import torch\n\n\nclass AttentionBackend(torch.nn.Module):\n    pass\n", False),  # nn.Module's __setattr__
    ("from abc import ABC\n\n\nclass AttentionBackend(ABC):\n    pass\n", True),
])
def test_a_base_in_another_file_is_read_for_what_it_sets(tmp_path, base, fixable):
    src = HELD.replace("class Backend:", "from base_attn import AttentionBackend\n\n\nclass Backend(AttentionBackend):")
    if "Middle" in base:
        src = src.replace("import AttentionBackend", "import Middle as AttentionBackend")
    m, got = statuses(tmp_path, src, [("base_attn.py", base)])
    assert [s for _, s in got][-1] == ("fixable" if fixable else "manual"), m.sites


@pytest.mark.parametrize("other", [
    "def show(b):\n    return b.sparse_fwd\n",
    # round N: a helper handed the instance sets it by name (the file names neither the class nor a kernel)
    "def apply_overrides(obj, o):\n    for k, v in o.items():\n        setattr(obj, k, v)\n\n\n"
    "OVERRIDES = {'sparse_fwd': print}\n",
])
def test_a_holder_another_file_names_is_not_followed(tmp_path, other):
    m, got = statuses(tmp_path, HELD, [("report.py", other)])
    assert m.new_source == HELD and got == [(8, "manual"), (11, "manual")], got  # (the value, and the call through
    # the holder where it lands: round AR)


@pytest.mark.parametrize("edit,others", [
    (("    def forward(", "    def legacy(self):\n        self.sparse_fwd = print\n\n    def forward("), ()),
    (("class Backend:", "class Backend:\n    sparse_fwd = flash_mla_sparse_fwd\n"), ()),  # a bound method
    (("class Backend:", "class Backend:\n    def __getattribute__(self, name):\n        return print\n"), ()),
    (("class Backend:", "class Backend:\n    def __setattr__(self, name, value):\n        pass\n"), ()),
    (("class Backend:", "class Backend(Loaded):"), ()),  # a base whose body is not read
    (("class Backend:", "class Backend(metaclass=Meta):"), ()),
    (("class Backend:", "class Sub(Backend):\n    @property\n    def sparse_fwd(self):\n        return print\n\n\n"
      "class Backend:"), ()),
    (("        return self.sparse_fwd", "        setattr(self, name, print)\n        return self.sparse_fwd"), ()),
    (("        return self.sparse_fwd", "        del self.sparse_fwd\n        return self.sparse_fwd"), ()),
    (("        return self.sparse_fwd", "        self.sparse_fwd.__setstate__(STATE)\n        return self.sparse_fwd"), ()),
    (("= flash_mla_sparse_fwd", "= functools.partial(flash_mla_sparse_fwd, None)"), ()),
    (("= flash_mla_sparse_fwd", "= make_kernel()"), ()),
    (None, [("plugin.py", "import backend\n\n\ndef install(b: backend.Backend):\n    b.sparse_fwd = print\n")]),
    (None, [("plugin.py", "from backend import Backend\n\n\nclass Timed(Backend):\n"
                          "    @property\n    def sparse_fwd(self):\n        return print\n")]),
    (None, [("plugin.py", "from backend import Backend\n\n\nclass Timed(Backend):\n"
                          "    def __setattr__(self, k, v):\n        object.__setattr__(self, k, print)\n")]),
    (None, [("plugin.py", "import backend\n\n\ndef install(b, name):\n    setattr(b, name, print)\n")]),
    # round M: `self` not an instance of the class, a relative set up elsewhere
    (None, [("shim.py", "import types\nimport backend\n\n\ndef run(*a):\n"
                        "    return backend.Backend.forward(types.SimpleNamespace(sparse_fwd=print), *a)\n")]),
    (None, [("ref.py", "from backend import Backend\n\n\nclass Reference:\n    forward = Backend.forward\n\n"
                      "    def sparse_fwd(self, *a):\n        return a\n")]),
    (None, [("mixin.py", "from backend import Backend\n\n\nclass Fallback:\n    @property\n    def sparse_fwd(self):\n"
                        "        return print\n\n    @sparse_fwd.setter\n    def sparse_fwd(self, v):\n        pass\n\n\n"
                        "class Portable(Fallback, Backend):\n    pass\n")]),
    (None, [("fallbacks.py", "def with_fallback(base):\n    class Fallback(base):\n        sparse_fwd = property(lambda s: print)\n"
                            "    return Fallback\n")]),
    (None, [("portable.py", "from backend import BACKENDS\n\n\nclass Portable(BACKENDS['dsa']):\n"
                           "    sparse_fwd = property(lambda s: print)\n")]),
    (None, [("plugin.py", "import backend\n\n\ndef cpu(self, name):\n    return print\n\n\n"
                         "backend.Backend.__getattribute__ = cpu\n")]),
    (("    def forward(", "    def to_cpu(self):\n        self.__class__ = Other\n\n    def forward("), ()),
    (("class Backend:", "import dataclasses\n\n\n@dataclasses.dataclass\nclass Backend:\n    sparse_fwd: object = None\n"), ()),
    (("class Backend:", "def traced(cls):\n    cls.__setattr__ = lambda s, k, v: object.__setattr__(s, k, print)\n"
      "    return cls\n\n\n@traced\nclass Backend:"), ()),
])
def test_a_holder_that_may_hold_something_else_is_not_the_kernel(tmp_path, edit, others):
    src = HELD.replace(*edit) if edit else HELD
    m, got = statuses(tmp_path, src, others)
    assert m.new_source == src and all(s == "manual" for _, s in got), got


@pytest.mark.parametrize("src", [
    OPTS,
    OPTS.replace('            self.opts = {"d_v": 512}\n', "            pass\n").replace(
        "class Backend:\n", 'class Backend:\n    opts = {"d_v": 512}\n\n'),
    OPTS.replace('self.opts = {"d_v": 512}', 'self.opts = {k: 512 for k in ("d_v",)}'),
])
def test_a_mapping_that_is_always_a_dict_takes_the_derived_lengths(tmp_path, src):
    m, got = statuses(tmp_path, src)
    assert got == [(src.count("\n"), "fixable")], m.sites
    assert '**{"topk_length": ' in m.new_source and "**self.opts}" in m.new_source


@pytest.mark.parametrize("edit,others", [
    (('self.opts = {"d_v": 512}', "self.opts = LazyOpts()"), ()),  # keys() runs its code
    (('self.opts = {"d_v": 512}', 'self.opts = {"d_v": 512, **extra}'), ()),
    (("class Backend:", "class Backend:\n    @property\n    def opts(self):\n        return {}\n"), ()),
    (("        return flash", "        self.opts = self.kwargs(idx)\n        return flash"), ()),
    (("**self.opts)", "**self.opts, d_v=1)"), ()),  # not the last argument
    (None, [("plugin.py", "import backend\n\n\ndef tune(b: backend.Backend):\n    b.opts = LazyOpts()\n")]),
])
def test_a_mapping_that_may_run_code_when_unpacked_stays_manual(tmp_path, edit, others):
    src = OPTS.replace(*edit) if edit else OPTS
    m, got = statuses(tmp_path, src, others)
    assert m.new_source == src and got == [(src.count("\n"), "manual")], got


def test_a_local_dict_mapping_takes_the_derived_lengths_and_a_rebound_one_does_not(tmp_path):
    body = HEAD + "def forward(q, kv, idx, s, extra):\n    kw = {'d_v': 512}\n{more}    return flash_mla_sparse_fwd(q, kv, idx, s, **kw)\n"
    m, got = statuses(tmp_path, body.replace("{more}", "    kw['attn_sink'] = None\n"))
    assert [s for _, s in got] == ["fixable"], m.sites
    for more in ("    kw = extra\n", "    if s:\n        kw = extra\n", "    (kw := extra)\n",
                 "    if any((kw := e) for e in [extra]):\n        pass\n",  # a generator's `:=` (round M)
                 "    match extra:\n        case {'kernel_args': kw}:\n            pass\n"):
        m, got = statuses(tmp_path, body.replace("{more}", more))
        assert [s for _, s in got] == ["manual"], (more, m.sites)


_VIA_ALIAS = HELD.replace("class Backend:", "_attend = functools.partial(flash_mla_sparse_fwd, d_v=512)\n\n\nclass Backend:").replace(
    "self.sparse_fwd = flash_mla_sparse_fwd", "self.sparse_fwd = _attend")


@pytest.mark.parametrize("edit,others,fixable", [
    (None, (), True),  # round N's s_held_via_module_alias
    (("        return self.sparse_fwd(", "        register(_attend)\n        return self.sparse_fwd("), (), False),  # handed on
    (("        return self.sparse_fwd(", "        _attend.keywords['d_v'] = 1\n        return self.sparse_fwd("), (), False),
    (("_attend = functools", "if FAST:\n    _attend = print\n_attend = functools"), (), False),  # two bindings
    (None, (("tune.py", "import backend\n\nbackend._attend = print\n"),), False),  # another file names it
])
def test_a_kernel_held_through_a_module_partial(tmp_path, edit, others, fixable):
    src = _VIA_ALIAS if edit is None else _VIA_ALIAS.replace(*edit)
    m, got = statuses(tmp_path, src, others)
    assert got[-1][1] == ("fixable" if fixable else "manual"), m.sites
