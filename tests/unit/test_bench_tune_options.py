"""`bench.retrieval_tune` reads its options with argparse: `--help` prints them and
exits (it used to start the whole bench, minutes of indexing), a misspelt option is an
error naming it, and the options reach the ranking."""

from __future__ import annotations

import pytest

from bench.retrieval_tune import main, parse_args, ranking_from


def test_help_lists_the_options_and_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "--no-context" in out and "--set NAME=V,..." in out


def test_a_misspelt_option_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--no-contxt"])
    assert exited.value.code == 2
    assert "--no-contxt" in capsys.readouterr().err


def test_options_reach_the_ranking_and_the_context_switch() -> None:
    args = parse_args(["--set", "bm25_b=0.75,chain_weight=0", "--no-context", "--realmem"])
    ranking = ranking_from(args)
    assert (ranking.bm25_b, ranking.chain_weight) == (0.75, 0.0)
    assert args.no_context and args.realmem and not args.quick
    assert ranking_from(parse_args([])).bm25_b == 0.3
