"""The README's quick start is what CI runs, and it documents every option the CLI has."""

import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from deblur.cli import app

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:bash|sh)\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quick_start_has_two_commands_and_ci_runs_the_test_one():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert "deblur train" in commands[0]
    test_command = commands[1]
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text()
    # CI makes its own venv first; the install-and-test part must be the README's, word for word.
    assert test_command.split("&& ", 2)[-1] in ci


def test_the_two_quick_start_commands_each_make_their_own_venv():
    """The test command installs deblur editable with the test extras: in the first command's venv it would
    replace the installed package without a word."""
    venvs = [
        re.search(r"-m venv (\S+) && \. (\S+)/bin/activate", command).groups() for command in quick_start_commands()
    ]
    assert all(made == activated for made, activated in venvs)
    assert venvs[0][0] != venvs[1][0]


def test_a_skipped_test_says_why_in_the_summary(tmp_path):
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\n\ndef test_it():\n    pytest.skip('no browser here')\n"
    )
    options = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "-p", "no:cacheprovider"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *options, str(tmp_path / "test_skipping.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert re.search(r"SKIPPED \[1\] \S*test_skipping.py:5: no browser here", result.stdout), result.stdout


def _commands(group, prefix=()):
    """Every command path the CLI has, e.g. ("train",), ("data", "check")."""
    import typer.main

    click_group = typer.main.get_command(group) if not hasattr(group, "commands") else group
    for name, command in click_group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def documentation() -> str:
    """The README and every page of the documentation site."""
    pages = sorted((ROOT / "docs").glob("*.md"))
    return "\n".join(path.read_text() for path in [ROOT / "README.md", *pages])


def options(path: tuple[str, ...]) -> set[str]:
    """The --options a command's help lists."""
    help_text = CliRunner().invoke(app, [*path, "--help"], terminal_width=200).output
    return set(re.findall(r"--[a-z][a-z0-9-]+", help_text)) - {"--help"}


def test_the_docs_mention_every_option_of_every_command():
    docs = documentation()
    commands = list(_commands(app))
    assert {("timings",), ("export",), ("serve",)} <= set(commands)
    for path in commands:
        assert f"deblur {' '.join(path)}" in docs, f"the docs do not show deblur {' '.join(path)}"
        for option in options(path):
            assert option in docs, f"the docs do not mention deblur {' '.join(path)} {option}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deblur" / "weights" / "MODEL_CARD.md"]


def test_every_option_the_docs_give_a_command_is_one_it_has():
    """The other way round: an option renamed or dropped leaves no example behind (`deblur evaluate --data`,
    two pages after DIR became evaluate's argument). A command's options run to the end of its line, a comment or
    the end of its code span."""
    known = {" ".join(path): options(path) for path in _commands(app)}
    names = "|".join(re.escape(name) for name in sorted(known, key=len, reverse=True))
    stale = []
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in re.finditer(rf"deblur ({names})(?![\w-])([^`#|;)]*)", line):
                for option in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", match.group(2))) - {"--help"}:
                    if option not in known[match.group(1)]:
                        stale.append(f"{page.relative_to(ROOT)}:{number}: deblur {match.group(1)} {option}")
    assert not stale, "options no command has:\n" + "\n".join(stale)


def test_links_point_at_files_that_exist():
    """mkdocs --strict checks the site's links between pages; this checks every relative link, the README's too."""
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            assert (page.parent / target.split("#")[0]).exists(), f"{page.name} links to {target}: not there"


def test_repository_files_the_docs_name_exist():
    pattern = r"`((?:deblur|tests|benchmarks|configs|data_scripts|docs)/[\w./-]+\.(?:py|yaml|md|json|png))`"
    for page in pages():
        for path in re.findall(pattern, page.read_text()):
            assert (ROOT / path).exists(), f"{page.name} names {path}: not in the repository"
