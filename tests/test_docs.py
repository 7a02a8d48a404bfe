"""Every command in a ```bash block of the README and of docs/*.md runs as written (issue 24).

Each page's commands run in order, with bash, in a copy of this repository that also holds
`path/to/fork/` (the docs' name for a reader's checkout: here the bundled example backend in a
project of its own), committed to git so that `--rev HEAD` reads it. A command passes with exit 0
or 1 (1 is "sites remain": the tools' verdict, not a failure); a trailing comment `# exit N` pins
the code; anything else (2: errors, usage) fails, and so does a traceback.

A trailing comment may also say, and only this:
- `# heavy...`: the command runs in the heavy tier's pass over the page (a real release from PyPI,
  the CPU smoke), which runs every command of the page;
- `# needs: R`, R one of NEEDS: the command is not run here; its script must exist, and an argparse
  script must take every option the command gives it (`--help`).
Two kinds of command are never run, by rule: `python3 -m pip install ...` (the extras it names must
exist: README command 2 installed them) and `python3 -m pytest ...` (this suite itself).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, copy_checkout

PAGES = ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
NEEDS = {  # what a command may need that the test machine does not have
    "gpu": "an sm90 GPU with sglang-kernel (bench/gpu_smoke.sh records its runs)",
    "the benchmark tree": "the 13k-file tree from about 580 MB of wheels (the heavy tier builds it)",
    "kernel wheels": "300-500 MB kernel wheels from PyPI (the heavy tier's bump tests read them)",
    "minutes": "a measurement that runs for minutes",
}
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def commands(page):
    """(command, comment) for each command line of the page's bash blocks, in order."""
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", (ROOT / page).read_text(), re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.match(r"(.*?)\s+#\s(.*)$", line)
            command, comment = (m.group(1), m.group(2)) if m else (line, "")
            out.append((command.strip(), comment.strip()))
    return out


def parts(command):
    return [p.strip() for p in command.split("&&")]


def test_every_page_has_commands_and_only_known_markers():
    for page in PAGES:
        found = commands(page)
        if page not in ("docs/README.md", "docs/threat-model.md", "docs/soundness.md"):  # the index; tables
            assert found, f"{page}: no bash block (each page shows what a reader runs there)"
        for command, comment in found:
            needs = re.match(r"needs: (.*)", comment)
            if needs:
                assert any(needs.group(1).startswith(n) for n in NEEDS), (page, command, comment)
    readme = (ROOT / "README.md").read_text()
    assert re.match(r"# topk-migrate\n\n[^\n]+\.\n\n```bash\npython3 -m pip install \. && topk-migrate apply --diff "
                    r"fixtures/examples/dsa_backend\.py\n```\n```bash\npython3 -m pip install -e '\.\[test,smoke\]' "
                    r"torch==2\.13\.0 && python3 -m pytest -q -n auto\n```\n", readme), "one sentence, then the README's two commands"


def test_the_readme_is_a_first_page():
    """At most 1,500 words; the first command on the reader's own tree within its first 150."""
    words = (ROOT / "README.md").read_text().split()
    assert len(words) <= 1500, len(words)
    first = next(i for i, w in enumerate(words) if w == "path/to/fork")
    assert first < 150, first
    for page in ("docs/threat-model.md", "docs/soundness.md", "docs/README.md", "docs/quickstart.md", "docs/ci.md",
                 "action.yml"):
        assert page in " ".join(words), page


def test_every_page_starts_with_what_a_reader_does_there():
    for page in PAGES[1:]:
        first = (ROOT / page).read_text().split("\n\n", 2)[1]
        assert first.startswith(("Here you", "You are here", "Start here")), (page, first[:80])


def test_every_link_between_pages_resolves():
    for page in PAGES:
        text = (ROOT / page).read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert ((ROOT / page).parent / target).exists(), (page, target)


@pytest.fixture
def sandbox(tmp_path):
    """A copy of the repository's files with path/to/fork/ in it, committed to git."""
    top = tmp_path / "repo"
    copy_checkout(top)
    fork = top / "path" / "to" / "fork"
    fork.mkdir(parents=True)
    shutil.copy(ROOT / "fixtures" / "examples" / "dsa_backend.py", fork / "dsa_backend.py")
    (fork / "pyproject.toml").write_text('[project]\nname = "fork"\nversion = "0"\n')  # a project of its own: no pins
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "sandbox"]):
        subprocess.run(["git", *args], cwd=top, env=env, check=True, capture_output=True)
    return top


def release_wheels(tmp_path):
    """pip finds the real-release wheel the quickstart downloads in the tests' own cache (downloaded
    there once, as the real-release tests do), so `pip download` runs as written without the index."""
    from sglang_wheels import CACHE, wheel

    wheel("0.5.16")
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(CACHE), "PIP_CACHE_DIR": str(tmp_path / "pip-cache")}


def check_install(command):
    """`python3 -m pip install .[extras] ...`: the extras it names are pyproject's."""
    try:
        import tomllib
    except ImportError:
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for word in shlex.split(command)[4:]:
        m = re.fullmatch(r"\.\[([\w,]+)\]", word)
        if m:
            assert set(m.group(1).split(",")) <= set(extras), command


def check_needs(command):
    """A command not run here: its script exists, and takes the options it is given."""
    words = shlex.split(command)
    script = next((w for w in words if w.endswith((".py", ".sh"))), None)
    if words[0] == "topk-migrate":
        r = subprocess.run([*words[:2], "--help"], capture_output=True, text=True)
        assert r.returncode == 0, command
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in r.stdout, (command, option)
        return
    assert script and (ROOT / script).is_file(), command
    if script.endswith(".py") and "argparse" in (ROOT / script).read_text():
        r = subprocess.run([sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (command, r.stderr)
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in r.stdout, (command, option)


def run_page(page, sandbox, tmp_path, heavy):
    env = {**os.environ, **GIT_ENV}
    ran = 0
    for command, comment in commands(page):
        if comment.startswith("needs: "):
            check_needs(command)
            continue
        if comment.startswith("heavy") and not heavy:
            continue
        if "pip download" in command:
            env.update(release_wheels(tmp_path))
        todo = []
        for part in parts(command):
            if part.startswith("python3 -m pip install "):
                check_install(part)
            elif part.startswith("python3 -m pytest"):
                continue
            else:
                todo.append(part)
        if not todo:
            continue
        r = subprocess.run(["bash", "-c", " && ".join(todo)], cwd=sandbox, env=env, capture_output=True, text=True,
                           timeout=600)
        ran += 1
        pinned = re.search(r"\bexit (\d+)\b", comment)
        want = {int(pinned.group(1))} if pinned else {0, 1}
        assert r.returncode in want, f"{page}: `{command}` exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stdout + r.stderr, (page, command, r.stderr[-2000:])
    return ran


@pytest.mark.parametrize("page", PAGES)
def test_the_commands_of(page, sandbox, tmp_path):
    run_page(page, sandbox, tmp_path, heavy=False)


@pytest.mark.heavy
@pytest.mark.parametrize("page", [p for p in PAGES if any(c.startswith("heavy") for _, c in commands(p))])
def test_every_command_of(page, sandbox, tmp_path):
    assert run_page(page, sandbox, tmp_path, heavy=True)
