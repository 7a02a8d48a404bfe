"""The fuzzer's generated modules (tests/test_fuzz.py; tests/test_quick.py runs the quick classifier on the
same ones) and the hypothesis profiles they run under. Importing it (test_fuzz does, first) registers and
loads the profile (TOPK_FUZZ_PROFILE, default "ci"); SHORT is built from the loaded one, so it stays below."""
import ast
import os
import tempfile
import textwrap

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Profiles on top of conftest's (which fixes the draw unless TOPK_FUZZ_RANDOM=1): 150 examples, or 3,000.
settings.register_profile("ci", parent=settings.get_profile("topk"), max_examples=150, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", parent=settings.get_profile("topk"), max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("TOPK_FUZZ_PROFILE", "ci"))
# Two entry points per fuzzer, one body: a short run in the default tier (README command 2) and
# the profile's full count in the heavy tier (`pytest -m heavy`, which .ci/run runs after it).
SHORT = settings(max_examples=min(25, settings.default.max_examples))

PATH = os.path.join(tempfile.mkdtemp(prefix="topk-fuzz-"), "mod.py")
PARAMS = ["q", "kv", "indices", "sm_scale", "d_v", "attn_sink", "topk_length"]  # topk_length is 7th
ENTRY = "flash_mla_sparse_fwd"

# (import line, how the call spells the kernel)
SPELLINGS = [
    ("from sgl_kernel import flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    ("from sgl_kernel import flash_mla_sparse_fwd as fmla_fwd", "fmla_fwd"),
    ("import sgl_kernel", "sgl_kernel.flash_mla_sparse_fwd"),
    ("import sgl_kernel as sk", "sk.flash_mla_sparse_fwd"),
    ("from sgl_kernel.flash_mla import flash_mla_sparse_fwd", "flash_mla_sparse_fwd"),
    ("from sgl_kernel import (\n    flash_mla_sparse_fwd,  # the kernel\n)", "flash_mla_sparse_fwd"),
]

VALUES = {
    "q": ["q", "q", "q", "self.q", "q.view(-1, 128, 576)", "(q)", "q[:n]"],
    "kv": ["kv", "kv.unsqueeze(1)", "cache.kv"],
    "indices": ["indices", "indices.view(n, 1, -1)", "idx[0]"],
    "sm_scale": ["scale", "self.softmax_scale", "1.0 / 24"],
    "d_v": ["512", "self.d_v"],
    "attn_sink": ["sink", "None"],
    "topk_length": ["lens", "None", "metadata.dsa_cache_seqlens_int32"],
}


@st.composite
def calls(draw, callee, depth=0):
    """Source text of one kernel call, and whether it passes topk_length as written."""
    n_pos = draw(st.sampled_from([0, 1, 2, 3, 4, 4, 5, 6, 6, 7]))
    rest = PARAMS[n_pos:]
    kw = [p for p in rest if p in ("q", "kv", "indices", "sm_scale")
          or (draw(st.integers(0, 3)) == 0 if p == "topk_length" else draw(st.booleans()))]
    kw = draw(st.permutations(kw))
    parts = []
    for p in PARAMS[:n_pos]:
        parts.append(draw(st.sampled_from(VALUES[p])))
    star = draw(st.sampled_from(["", "", "", "", "", "*args", "**kwargs", "both"]))
    eq = draw(st.sampled_from(["=", " = "]))
    kwparts = [f"{p}{eq}{draw(st.sampled_from(VALUES[p]))}" for p in kw]
    if draw(st.booleans()):
        kwparts.append(f"out{eq}out")
    if star in ("*args", "both"):  # f(a, k=1, *args) is valid Python too
        kwparts.insert(draw(st.integers(0, len(kwparts))), "*args")
    if star in ("**kwargs", "both"):
        kwparts.append("**kwargs")
    args = parts + kwparts
    plain = [i for i, a in enumerate(args) if not a.startswith("*")]
    if depth == 0 and plain and draw(st.integers(0, 5)) == 0:  # nesting: the kernel inside its own argument
        inner = draw(calls(callee, depth + 1))
        i = draw(st.sampled_from(plain))
        key = args[i].split("=", 1)[0].rstrip() + eq if i >= len(parts) else ""
        args[i] = f"{key}{inner}[0]"
    layout = draw(st.sampled_from(["flat", "tight", "one_per_line", "hanging", "commented"]))
    trailing = draw(st.booleans()) and bool(args) and "**kwargs" != (args[-1] if args else "")
    if layout == "flat":
        body = "(" + ", ".join(args) + ("," if trailing else "") + ")"
    elif layout == "tight":
        body = "(" + ",".join(args) + ")"
    elif layout == "hanging":
        body = "(" + ",\n        ".join(args) + ("," if trailing else "") + ")"
    else:
        ind = "\n            "
        sep = ",  # note" + ind if layout == "commented" else "," + ind
        body = "(" + ind + sep.join(args) + ("," if trailing or layout == "commented" else "") + "\n        )"
    text = f"{callee}{body}" if args else f"{callee}()"
    return text


CONTEXTS = [
    "        o, _, _ = {call}",
    "        return {call}[0]",
    "        out = torch.cat([{call}[0]])",
    "        if q is not None: o = {call}",
    "        fn = lambda: {call}",
    "        outs = [{call} for _ in range(2)]",
    "        o = {call} if q is not None else None",
    "        o = \\\n            {call}",
    "        with torch.no_grad():\n            o = {call}",
]


@st.composite
def modules(draw):
    imp, callee = draw(st.sampled_from(SPELLINGS))
    local_import = draw(st.booleans()) and "\n" not in imp
    call = draw(calls(callee))
    ctx = draw(st.sampled_from(CONTEXTS))
    stmt = ctx.format(call=call.replace("\n", "\n" + (" " * 4 if ctx.startswith("        with") else "")))
    style = draw(st.sampled_from(["direct", "helper", "module"]))
    head = "import torch\n" + ("" if local_import else imp + "\n") + '\n# metadata.dsa_cache_seqlens_int32\n\n\n'
    local = f"        {imp}\n" if local_import else ""
    if style == "module":
        body = textwrap.dedent(stmt.replace("return ", "o = "))
        return head + (imp + "\n" if local_import else "") + "q = kv = indices = scale = sink = lens = n = idx = cache = out = args = kwargs = None\n" + body + "\n"
    sig = "self, q, kv, indices, scale, sink, lens, n, idx, cache, out, args, kwargs"
    if style == "direct":
        return head + f"class Backend:\n    def forward(self, metadata, {sig[6:]}):\n{local}{stmt}\n        return o\n"
    return head + (
        f"class Backend:\n    def _fwd({sig}):\n{local}{stmt}\n        return o\n\n"
        f"    def forward_extend(self, metadata, q, kv):\n"
        f"        return self._fwd(q, kv, None, 1.0, None, None, 0, None, None, None, (), {{}})\n"
    )


def is_kernel_call(node):
    """Whether an AST node is a call of the kernel, in any of SPELLINGS' spellings."""
    f = node.func
    return isinstance(node, ast.Call) and (
        (isinstance(f, ast.Name) and f.id in (ENTRY, "fmla_fwd")) or (isinstance(f, ast.Attribute) and f.attr == ENTRY))
