"""The summary of a sampling profile's collapsed stacks (``bench/profile_stacks.py``)."""

from __future__ import annotations

from pathlib import Path

from bench.profile_stacks import shortened, summarise

SITE = "/x/.venv/lib/python3.11/site-packages"
STACKS = (
    f"main (/repo/turngraph/cli/__init__.py:10);search (/repo/workers/recall/search.py:80);"
    f"Session.run ({SITE}/onnxruntime/capi/session.py:220) 6\n"
    f"main (/repo/turngraph/cli/__init__.py:10);search (/repo/workers/recall/search.py:95) 3\n"
    f"main (/repo/turngraph/cli/__init__.py:10);pop ({SITE}/redis/client.py:5) 1\n"
)


def test_shares_inclusive_and_own(tmp_path: Path) -> None:
    collapsed = tmp_path / "p.stacks"
    collapsed.write_text(STACKS)
    summary = summarise(collapsed)
    assert summary.startswith("samples: 10\n")
    inclusive, own = summary.split("## own")
    # the two lines of search count as one function, wherever the path was
    assert " 90.0 %  search (/repo/workers/recall/search.py)" in inclusive
    assert " 60.0 %  Session.run (onnxruntime/capi/session.py)" in inclusive
    assert " 30.0 %  search (/repo/workers/recall/search.py)" in own
    assert " 10.0 %  pop (redis/client.py)" in own


def test_shortened_stacks_summarise_alike(tmp_path: Path) -> None:
    full, short = tmp_path / "full.stacks", tmp_path / "short.stacks"
    full.write_text(STACKS)
    short.write_text(shortened(STACKS))
    assert len(short.read_text()) < len(STACKS)
    assert ":220" not in short.read_text() and SITE not in short.read_text()
    assert summarise(short) == summarise(full)


def test_no_samples(tmp_path: Path) -> None:
    empty = tmp_path / "e.stacks"
    empty.write_text("")
    assert summarise(empty) == "no samples\n"
