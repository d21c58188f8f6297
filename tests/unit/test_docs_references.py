"""What README.md and docs/ name exists: every ``python -m bench.X`` and its options, every
``turngraph`` command, subcommand and option, every ``make`` target, every relative link
and its anchor; and every setting is documented outside the history."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from turngraph.cli import build_parser
from turngraph.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_BENCH = re.compile(r"python -m bench\.([a-z_]+)\b([^;|`\n]*)")
_COMMAND = re.compile(r"(?:^|[\s(;|&$])turngraph ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?([^;|&`\n]*)")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
_MAKE = re.compile(r"(?:^|[\s(;|&])make ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _code(text: str) -> list[str]:
    """The text of every fenced block and inline code span."""
    blocks = _FENCE.findall(text)
    rest = _FENCE.sub("", text)
    return blocks + _SPAN.findall(rest)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _named(pattern: re.Pattern[str]) -> list[tuple[str, re.Match[str]]]:
    return [
        (doc.relative_to(ROOT).as_posix(), match)
        for doc in DOCS
        for code in _code(doc.read_text(encoding="utf-8"))
        for match in pattern.finditer(code)
    ]


def test_the_docs_name_benches_and_commands() -> None:
    # The checks below must have something to check.
    assert len(_named(_BENCH)) > 10 and len(_named(_COMMAND)) > 20


def test_every_bench_named_exists() -> None:
    missing = sorted(
        {
            f"{doc}: python -m bench.{m[1]}"
            for doc, m in _named(_BENCH)
            if not (ROOT / "bench" / f"{m[1]}.py").is_file()
        }
    )
    assert missing == []


def test_every_bench_option_named_exists() -> None:
    sources = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "bench").glob("*.py"))
    missing = {
        f"{doc}: python -m bench.{m[1]} {option}"
        for doc, m in _named(_BENCH)
        for option in _OPTION.findall(m[2])
        if f'"{option}"' not in sources
    }
    assert sorted(missing) == []


def test_every_turngraph_command_named_exists() -> None:
    commands = _subcommands(build_parser())
    missing = set()
    for doc, m in _named(_COMMAND):
        command, sub, rest = m[1], m[2], m[3]
        if command not in commands:
            missing.add(f"{doc}: turngraph {command}")
            continue
        parser = commands[command]
        subs = _subcommands(parser)
        if subs and sub is not None:
            if sub not in subs:
                missing.add(f"{doc}: turngraph {command} {sub}")
                continue
            parser = subs[sub]
        options = {option for action in parser._actions for option in action.option_strings}
        missing.update(
            f"{doc}: turngraph {command} {option}"
            for option in _OPTION.findall(rest)
            if option not in options
        )
    assert sorted(missing) == []


def test_every_make_target_named_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:", makefile, re.M))
    missing = {
        f"{doc}: make {target}"
        for doc, m in _named(_MAKE)
        for target in m[1].split()
        if target not in targets
    }
    assert sorted(missing) == []


def test_every_setting_is_documented() -> None:
    reference = "\n".join(
        doc.read_text(encoding="utf-8") for doc in DOCS if doc.name != "history.md"
    )
    undocumented = [name for name in Settings.model_fields if name.upper() not in reference]
    assert undocumented == []


def test_every_procfile_process_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = (ROOT / "Procfile").read_text(encoding="utf-8").splitlines()
    processes = [line.split(":", 1) for line in lines if line.strip()]
    missing = [
        name for name, command in processes if f"| `{name}` | `{command.strip()}` |" not in readme
    ]
    assert processes and missing == []


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        exists = resolved.exists()
        if not exists or (anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)):
            broken.append(target)
    assert broken == []
