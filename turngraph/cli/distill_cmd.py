"""``turngraph recap SESSION``, ``turngraph summarize SESSION``, ``turngraph compact``:
distilled memory from the command line, computed in this process from the graph (no
maintenance worker needed). SESSION and ``--workspace`` take a raw key (the editor's chat
id, the folder) or its id as ``turngraph scopes`` lists it, like every command."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from turngraph.app import build_distiller
from turngraph.cli.graph_cmd import _clients
from turngraph.logs import configure_logging
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.scopes import Scope
from turngraph.schemas.summaries import render_decision_record, render_summary
from turngraph.scope_keys import scope_id
from turngraph.settings import Settings
from turngraph.workers.maintenance.compaction import compact_due, compact_topic
from turngraph.workers.maintenance.recaps import recap_session
from turngraph.workers.maintenance.summaries import summarize_last_turns

__all__ = ["SESSION_HELP", "register", "run_compact", "run_recap", "run_summarize"]


def _session(args: argparse.Namespace, settings: Settings) -> str:
    return scope_id(ScopeHasher.for_data_dir(settings.data_dir), Scope.SESSION, args.session)


def run_recap(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # to stderr: stdout carries only the output
    session = _session(args, settings)
    with _clients(settings) as clients:
        distiller = build_distiller(clients)
        budget = args.budget or settings.recap_budget_tokens
        recap = recap_session(distiller, session, budget, store=args.store)
    if recap is None:
        print(f"no turns stored for session {session}")
        return 1
    print(recap.model_dump_json(indent=2) if args.json else recap.text)
    return 0


def run_summarize(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # to stderr: stdout carries only the output
    session = _session(args, settings)
    with _clients(settings) as clients:
        summary = summarize_last_turns(build_distiller(clients), session, args.last)
    if summary is None:
        print(f"no turns stored for session {session}")
        return 1
    print(summary.model_dump_json(indent=2) if args.json else render_summary(summary))
    return 0


def run_compact(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # to stderr: stdout carries only the output
    with _clients(settings) as clients:
        distiller = build_distiller(clients)
        if args.topic:
            if not args.workspace:
                print("--topic needs --workspace")
                return 2
            hasher = ScopeHasher.for_data_dir(settings.data_dir)
            workspace = scope_id(hasher, Scope.WORKSPACE, args.workspace)
            record = compact_topic(distiller, workspace, args.topic)
            records = [record] if record else []
        else:
            records = compact_due(distiller)
    for record in records:
        print(
            json.dumps(record.model_dump(mode="json"))
            if args.json
            else render_decision_record(record)
        )
        print()
    print(f"{len(records)} decision record(s) written")
    return 0


SESSION_HELP = "the session: its raw key (the editor's chat id) or its id (s_...)"


def _between(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high], the bounds the bridge and the MCP
    tools take (``DistillRequest``); out of range is a usage error naming them (it was
    ``internal error: ValueError`` for ``--last 0``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value

    return parse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recap = subparsers.add_parser("recap", help="a budgeted recap of a session")
    recap.add_argument("session", help=SESSION_HELP)
    recap.add_argument(
        "--budget", type=_between(100, 20_000), default=None, help="token budget (default 1000)"
    )
    recap.add_argument("--store", action="store_true", help="also keep it as the recap memory")
    recap.add_argument("--json", action="store_true", help="print the SessionRecap as JSON")
    recap.set_defaults(handler=run_recap)

    summarize = subparsers.add_parser(
        "summarize", help="summarize and store the last N turns of a session"
    )
    summarize.add_argument("session", help=SESSION_HELP)
    summarize.add_argument(
        "--last", type=_between(1, 500), default=10, help="how many turns (default 10)"
    )
    summarize.add_argument("--json", action="store_true", help="print the summary as JSON")
    summarize.set_defaults(handler=run_summarize)

    compact = subparsers.add_parser(
        "compact", help="merge summaries into decision records (due topics, or one topic)"
    )
    compact.add_argument(
        "--workspace", help="the workspace: its folder (e.g. .) or its id (w_...), with --topic"
    )
    compact.add_argument("--topic", help="a topic id (with --workspace): compact it now")
    compact.add_argument("--json", action="store_true", help="print the records as JSON lines")
    compact.set_defaults(handler=run_compact)
