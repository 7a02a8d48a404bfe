"""The table of the kernels every sglang release brings (topk_migrate/data/sglang_kernels.json, issue 39): it
parses, is sorted, and never steps back to a kernel without topk_length (the assumption the gate makes past
its newest release); bench/sglang_kernel_table.py, which writes it, reads a wheel's METADATA without installing it."""
import datetime
import json
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import sglang_kernel_table as builder
from topk_migrate import kernels, rules
from topk_migrate.codemods.pass_topk_length import MIN_KERNEL

SGL_KERNEL = rules.providers()["sgl_kernel"]


def raw_table():
    with open(kernels.ENGINE_TABLE, encoding="utf-8") as f:
        return json.load(f)


def brought_verdict(version, extras=()):
    """Does what `sglang[extras]==version` brings of sgl_kernel take topk_length (None: it brings none)?"""
    pins = kernels.brought_pins(kernels.Pin("sglang", f"=={version}", "t", extras=tuple(extras)))
    return kernels._decide_env([p for p in pins if p.dist in SGL_KERNEL], MIN_KERNEL)


def test_the_table_says_where_it_came_from():
    table = raw_table()
    assert "pip download" in table["source"] and "METADATA" in table["source"]
    assert datetime.date.fromisoformat(table["built"]) and table["unread"] == []
    assert set(table["kernels"]) >= set(SGL_KERNEL)


def test_every_release_listed_parses_and_they_are_sorted():
    releases = list(raw_table()["releases"].items())
    versions = [Version(v) for v, _ in releases]
    assert versions == sorted(versions) and len(set(versions)) == len(versions) > 150
    for version, groups in releases:
        assert str(Version(version)) == version
        for group, reqs in groups.items():
            assert group == (kernels.normalize(group) if group else ""), (version, group)
            for text in reqs:
                req = Requirement(text)
                assert not req.marker and kernels.normalize(req.name) in raw_table()["kernels"], (version, text)
                assert kernels._requirement(text, "t") is not None


@pytest.mark.parametrize("extra", sorted({g for gs in raw_table()["releases"].values() for g in gs}))
def test_no_release_steps_back_to_a_kernel_without_topk_length(extra):
    """Monotone: from the first release whose kernel takes topk_length on, every later one's does too, with
    any extra; so a release newer than the table's is assumed to bring no older kernel."""
    verdicts = [brought_verdict(v, (extra,) if extra else ()) for v in kernels.engine_releases()]
    first = verdicts.index(True)
    assert all(v is True for v in verdicts[first:]), extra
    assert all(v is not True for v in verdicts[:first])


def test_the_first_release_bringing_a_kernel_with_topk_length():
    assert kernels.first_engine_release("sglang==0.5.12", SGL_KERNEL, MIN_KERNEL) == "0.5.13"
    assert kernels.first_engine_release("sglang[srt]==0.4.9.post2", SGL_KERNEL, MIN_KERNEL) == "0.5.13"
    assert brought_verdict("0.5.12.post1") is False and brought_verdict("0.5.13") is True
    assert brought_verdict("0.4.9.post2") is None and brought_verdict("0.4.9.post2", ("srt",)) is False


@pytest.mark.parametrize("spec,version", [
    ("==0.4.9.post2", "0.4.9.post2"), ("===0.5.12", "0.5.12"), ("==0.5.14+cu128", "0.5.14"),
    ("==0.5.12,>=0.5", "0.5.12"), ("==0.5.*", None), (">=0.5.13", None), ("~=0.5.13", None), ("", None),
    ("===latest", None), ("==0.5.12,==0.5.13", None),
])
def test_only_an_exact_pin_names_a_release(spec, version):
    got = kernels.exact_version(spec)
    assert (str(got) if got else None) == version


def make_wheel(path, requires, version="1.0"):
    """A wheel holding only its METADATA (and a module that must not be run)."""
    meta = f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n" \
           + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\nRequires-Dist: not-a-header\n"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"sglang-{version}.dist-info/METADATA", meta)
        z.writestr("sglang/__init__.py", "raise SystemExit('run')\n")
    return path


def test_the_builder_reads_a_wheels_metadata_per_extra(tmp_path):
    wheel = make_wheel(tmp_path / "sglang-1.0-py3-none-any.whl", [
        "torch==2.8.0", 'sgl-kernel==0.2.5; extra == "srt"', 'sglang[srt,extra_b]; extra == "all"',
        "sglang-kernel==0.4.6", 'vllm==0.6.7.dev2; extra == "Srt_HIP"', 'flash-mla; extra == "extra-b"',
        'sglang[all]; extra == "dev"', 'av; sys_platform == "linux" and platform_machine == "aarch64"',
    ])
    version, requires = builder.wheel_metadata(wheel)
    assert version == "1.0" and "not-a-header" not in " ".join(requires)  # the description is not read
    assert builder.kernel_groups(requires, builder.kernel_dists()) == {
        "": ["sglang-kernel==0.4.6"],
        "all": ["flash-mla", "sgl-kernel==0.2.5"],  # the extras it pulls in, in order of their names
        "dev": ["flash-mla", "sgl-kernel==0.2.5"],
        "extra-b": ["flash-mla"],
        "srt": ["sgl-kernel==0.2.5"],
        "srt-hip": ["vllm==0.6.7.dev2"],
    }


def test_the_builder_refuses_a_kernel_marker_it_cannot_read(tmp_path):
    requires = ['sgl-kernel==0.2.5; platform_machine == "x86_64" and extra == "srt"']
    with pytest.raises(ValueError, match="marker not read"):
        builder.kernel_groups(requires, builder.kernel_dists())


def test_the_builder_writes_what_the_gate_reads(tmp_path, monkeypatch):
    releases = {"0.4.9.post2": {"srt": ["sgl-kernel==0.2.5"]}, "0.5.13": {"": ["sglang-kernel==0.4.3"]}}
    path = tmp_path / "table.json"
    path.write_text(builder.render(releases, [], "2026-12-03"))
    monkeypatch.setattr(kernels, "ENGINE_TABLE", str(path))
    kernels.engine_releases.cache_clear()
    kernels.newest_engine_release.cache_clear()
    try:
        assert kernels.engine_releases() == {"0.4.9.post2": {"srt": ("sgl-kernel==0.2.5",)},
                                             "0.5.13": {"": ("sglang-kernel==0.4.3",)}}
        assert str(kernels.newest_engine_release()) == "0.5.13"
    finally:
        kernels.engine_releases.cache_clear()
        kernels.newest_engine_release.cache_clear()


# -- the installed side: an installed sglang's own Requires-Dist says what the table says (heavy) --------------

@pytest.mark.heavy
@pytest.mark.parametrize("version", ["0.5.12.post1", "0.5.16", "0.5.17"])
def test_an_installed_release_pins_the_kernel_the_table_brings(tmp_path, version):
    """The gate reads an installed sglang's own METADATA (installed_pins), never the table (no sglang pin there to
    bring anything): both must name the same kernel."""
    from sglang_wheels import install_like_site_packages, wheel

    _, requires = builder.wheel_metadata(wheel(version))
    assert builder.kernel_groups(requires, builder.kernel_dists()) == \
        {g: list(r) for g, r in kernels.engine_releases()[version].items()}
    backend = install_like_site_packages(version, tmp_path, backend=builder_backend(version))
    installed = kernels.installed_pins(str(backend), str(tmp_path), SGL_KERNEL)
    brought = kernels.brought_pins(kernels.Pin("sglang", f"=={version}", "t"))
    assert [(p.dist, p.spec) for p in installed] == [(p.dist, p.spec) for p in brought]


def builder_backend(version):
    from sglang_wheels import DSA, NSA

    return NSA if Version(version) < Version("0.5.13") else DSA
