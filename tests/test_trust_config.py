"""[tool.topk-migrate] is data, never code (issue 13.2, and the wrong-type configurations of 14.3).

A pull request that only touches pyproject.toml must not be able to make `apply`
write code of its choosing into a backend, nor crash the run or silently skip
every file: anything but the documented shapes is a one-line configuration error
that names the file and the key.
"""
import functools
import shutil

import pytest

from helpers import KERNEL, ROOT, run_cli
from topk_migrate.config import _load, is_dotted_name
from topk_migrate.model import InputError

BACKEND = ROOT / "fixtures" / "examples" / "dsa_backend.py"
INJECTION = 'metadata.x if __import__("os").system("id") else metadata.y'


cli = functools.partial(run_cli, timeout=120)


@pytest.fixture
def project(tmp_path):
    shutil.copy(BACKEND, tmp_path / "backend.py")
    return tmp_path


def load(tmp_path, text):
    p = tmp_path / "pyproject.toml"
    p.write_text(text)
    return _load(str(p))


def one_error_line(r, *words):
    errors = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert r.returncode == 2 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in errors[0], (w, errors[0])
    return errors[0]


def test_metadata_that_is_not_a_dotted_name_is_refused_and_nothing_is_written(project):
    (project / "pyproject.toml").write_text(f"[tool.topk-migrate]\nmetadata = ['{INJECTION}']\n")  # issue 13's
    before = (project / "backend.py").read_bytes()
    for cmd in (("apply",), ("check",), ("apply", "--diff")):
        r = cli(*cmd, "--kernel", KERNEL, project)
        one_error_line(r, "pyproject.toml", "metadata", "__import__", "not a dotted name")
        assert "system" not in r.stdout
    r = cli("apply", "--kernel", KERNEL, project / "backend.py")  # a file named explicitly: the same
    one_error_line(r, "pyproject.toml", "metadata")
    assert (project / "backend.py").read_bytes() == before
    r = cli("audit", "--kernel", KERNEL, project)
    assert r.returncode == 2 and "not a dotted name" in r.stdout + r.stderr and "Traceback" not in r.stderr


def test_a_dotted_name_in_configuration_is_what_apply_passes(project):
    (project / "pyproject.toml").write_text('[tool.topk-migrate]\nmetadata = ["metadata.dsa_cache_seqlens_int32"]\n')
    r = cli("apply", "--kernel", KERNEL, project)
    assert r.returncode == 1 and "rewrote 1 file(s)" in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["metadata", "forward_batch.attn_meta.dsa_cache_seqlens_int32", "_m.x1", "m.match",
                                  "m.type", "donn\u00e9es.x"])
def test_dotted_names(name):
    assert is_dotted_name(name)


@pytest.mark.parametrize("text", ["", ".", "a.", ".a", "a..b", "a.b()", "a[0]", "a .b", "a.\nb", "a; b", "import.x",
                                  "m.None", "m.lambda", "1m", "a-b", "a.b if c else d", "\ufb01eld", "m.x\u200b"])
def test_anything_else_is_not_a_dotted_name(text):
    assert not is_dotted_name(text)


BAD = [
    ("[tool.topk-migrate]\nexclude = [1]\n", "exclude"),
    ("[tool.topk-migrate]\ninclude = \"a.py\"\n", "include"),
    ("[tool.topk-migrate]\nmetadata = \"metadata.x\"\n", "metadata"),
    ("[tool.topk-migrate]\nmetadata = [[\"a\"]]\n", "metadata"),
    ("[tool.topk-migrate]\nkernel = 5\n", "kernel"),
    ("[tool.topk-migrate]\nkernel = [\"sglang-kernel==0.4.6\"]\n", "kernel"),
    ("[tool.topk-migrate]\nkernel = \"sglang-kernel\"\n", "kernel"),
    ("[tool.topk-migrate]\nkernel = \"==0.4.6\"\n", "kernel"),
    ("tool = 1\n", "tool"),
    ("[tool]\ntopk-migrate = 3\n", "tool.topk-migrate"),
    ("[tool.topk-migrate]\nexclude = [\"a\"]\n\"\\u001b]0;x\\u0007\" = 1\n", "unknown key"),
]


@pytest.mark.parametrize("toml,key", BAD)
def test_wrong_shapes_are_one_line_errors_naming_the_file_and_key(tmp_path, toml, key):
    with pytest.raises(InputError) as e:
        load(tmp_path, toml)
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "pyproject.toml") in msg and key in msg, msg
    assert "\x1b" not in msg and "\x07" not in msg


@pytest.mark.parametrize("toml,key", BAD[:2] + BAD[8:10])
def test_the_cli_reports_them_and_never_skips_every_file_silently(project, toml, key):
    (project / "pyproject.toml").write_text(toml)
    one_error_line(cli("check", "--kernel", KERNEL, project), "pyproject.toml", key)


def test_valid_configuration_still_loads(tmp_path):
    cfg = load(tmp_path, '[tool.topk-migrate]\nkernel = "sglang-kernel>=0.4.6,<0.5"\nmetadata = ["fb.meta.lens"]\n'
                         'include = ["src/"]\nexclude = ["tests/"]\n')
    assert (cfg.kernel, cfg.metadata, cfg.include, cfg.exclude) == ("sglang-kernel>=0.4.6,<0.5", ("fb.meta.lens",),
                                                                    ("src/",), ("tests/",))
    assert load(tmp_path, "[tool.black]\nline-length = 100\n") is None
    assert load(tmp_path, "[project]\nname = 'x'\n") is None


def test_a_pyproject_that_is_not_utf8_or_not_a_regular_file_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.topk-migrate]\nkernel = \"\xff\"\n")
    with pytest.raises(InputError, match="not valid UTF-8"):
        _load(str(tmp_path / "pyproject.toml"))
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="cannot read"):
        _load(str(tmp_path / "d"))
