"""Distilled memory: ``python -m bench.distill`` (on the embedded defaults).

Measures, through the real graph and Redis:

- summaries per 100 turns with the default triggers (every N turns, semantic triggers),
  on the labelled conversations (``tests/data/distill_conversations.jsonl``);
- offline summary time per summarized turn;
- decisions: coverage (the share of the decisions stated in the conversations that a
  Decisions bullet of their summaries names) and precision (the share of Decisions
  bullets that name a stated decision), per split (tune / score), against a reference
  measured in the same run: a lead summary (each segment's first three user sentences as
  its "decisions"). A bullet that lists every option ("RQ, Celery or dramatiq?") names
  none;
- LLM calls and prompt/completion tokens per summary, counted at a local
  OpenAI-compatible server that answers every call with a valid summary (the plumbing:
  one structured call per summary, a re-ask for every answer that does not validate);
  with ``--llm`` and a configured endpoint (``TURNGRAPH_LLM_BASE_URL`` …), the LLM's
  decision coverage on the score split instead;
- the time to recap a 1,000-turn session (half of it tool calls) within 1000 tokens.

Ends with one line ``RESULT distill key=value …``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.distill_data import SUBJECTS
from bench.report import result_line, table
from turngraph.app import build_distiller, build_pipeline
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.logs import configure_logging
from turngraph.schemas.summaries import ConversationSummary
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.settings import Settings
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.recaps import recap_session
from turngraph.workers.maintenance.summaries import summarize_session
from turngraph.workers.maintenance.text import sentences
from turngraph.workers.maintenance.triggers import summary_due

DATA = Path("tests/data/distill_conversations.jsonl")
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
RECAP_TURNS = 1_000


def load(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events_of(conversation: dict[str, Any], start: datetime) -> list[TurnEvent]:
    return [
        TurnEvent(
            session_id=f"bench-{conversation['id']}",
            workspace=f"bench-w-{conversation['id']}",
            user="bench-u",
            turn_index=index,
            role=turn["role"],
            speaker=turn.get("speaker", ""),
            content=turn["content"],
            occurred_at=start + timedelta(minutes=index),
            client=ClientInfo(name="bench", version="1"),
        )
        for index, turn in enumerate(conversation["turns"])
    ]


def reset(clients: Clients) -> None:
    clients.redis.flushdb()
    clients.graph.execute_query("MATCH (n) DETACH DELETE n", database_=clients.graph_database)


def converse(
    clients: Clients, distiller: Distiller, conversation: dict[str, Any]
) -> tuple[list[ConversationSummary], float, int]:
    """Ingest turn by turn; summarize when a trigger fires (as the follow-up jobs do) and
    at the end. Returns the summaries, seconds spent summarizing, turns summarized."""
    pipeline = build_pipeline(clients, extractor=OfflineExtractor())
    extractor = OfflineExtractor()
    events = events_of(conversation, T0)
    made: list[ConversationSummary] = []
    spent = 0.0
    for event in events:
        pipeline.ingest([event])
        (extraction,) = extractor.extract([event])
        due = summary_due(event, extraction, distiller.options.summary_every_n_turns)
        if due or event is events[-1]:
            started = time.perf_counter()
            made += summarize_session(distiller, event.session_id, through_turn=event.turn_index)
            spent += time.perf_counter() - started
    return made, spent, sum(len(s.source_event_ids) for s in made)


def _options(subject: str) -> list[str]:
    return next(options for name, options, _ in SUBJECTS if name == subject)


def names_choice(bullet: str, subject: str, choice: str) -> bool:
    """The bullet names ``choice`` and does not list every option of the subject (a
    question such as "RQ, Celery or dramatiq?" names them all and decides nothing)."""
    lowered = bullet.casefold()
    options = _options(subject)
    return choice.casefold() in lowered and not all(o.casefold() in lowered for o in options)


def covered(conversation: dict[str, Any], decided: list[str]) -> tuple[int, int, int]:
    """(decisions some bullet names, decisions stated, bullets that name a stated one)."""
    stated = conversation["decisions"]
    hits = sum(any(names_choice(b, d["subject"], d["choice"]) for b in decided) for d in stated)
    precise = sum(any(names_choice(b, d["subject"], d["choice"]) for d in stated) for b in decided)
    return hits, len(stated), precise


def lead_reference(conversation: dict[str, Any], summaries: list[ConversationSummary]) -> list[str]:
    """The reference summary: each segment's first three user sentences as "decisions"."""
    turns = conversation["turns"]
    out: list[str] = []
    for summary in summaries:
        said = [
            s
            for turn in turns[summary.first_turn : summary.last_turn + 1]
            if turn["role"] == "user"
            for s in sentences(turn["content"])
        ]
        out += said[:3]
    return out


@contextmanager
def services() -> Iterator[Clients]:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        settings = with_endpoints(Settings(_env_file=None, data_dir=Path(tmp) / "data"), endpoints)
        clients = build_clients(settings)
        try:
            yield clients
        finally:
            clients.close()


def offline_run(clients: Clients, conversations: list[dict[str, Any]]) -> dict[str, Any]:
    reset(clients)
    distiller = build_distiller(clients)
    out: dict[str, Any] = {"turns": 0, "summaries": 0, "seconds": 0.0, "summarized": 0}
    for split in ("tune", "score"):
        for key in ("hits", "stated", "lead_hits", "bullets", "precise", "lead_bullets",
                    "lead_precise"):  # fmt: skip
            out[f"{split}_{key}"] = 0
    for conversation in conversations:
        made, spent, summarized = converse(clients, distiller, conversation)
        out["turns"] += len(conversation["turns"])
        out["summaries"] += len(made)
        out["seconds"] += spent
        out["summarized"] += summarized
        split = conversation["split"]
        ours = [d for s in made for d in s.content.decisions]
        lead = lead_reference(conversation, made)
        hits, stated, precise = covered(conversation, ours)
        lead_hits, _, lead_precise = covered(conversation, lead)
        out[f"{split}_hits"] += hits
        out[f"{split}_stated"] += stated
        out[f"{split}_lead_hits"] += lead_hits
        out[f"{split}_bullets"] += len(ours)
        out[f"{split}_precise"] += precise
        out[f"{split}_lead_bullets"] += len(lead)
        out[f"{split}_lead_precise"] += lead_precise
    return out


def llm_run(
    clients: Clients, conversations: list[dict[str, Any]], base_url: str | None
) -> dict[str, Any]:
    """Summaries through an OpenAI-compatible endpoint: the local counting server unless
    ``base_url`` names a real one."""
    reset(clients)
    fake = None
    if base_url is None:
        from tests.support.fake_openai import FakeOpenAI, answer

        fake = FakeOpenAI().__enter__()
        generic = {
            "topic": "Segment",
            "context": ["What the segment was about."],
            "decisions": ["A decision."],
            "rationale": [],
            "open_questions": [],
            "next_steps": [],
        }
        fake.add(*[answer(generic, prompt_tokens=0, completion_tokens=0) for _ in range(2_000)])
        base_url = fake.base_url
    settings = clients.settings.model_copy(update={"llm_base_url": base_url, "llm_max_retries": 0})
    llm_clients = build_clients(settings)
    try:
        distiller = build_distiller(llm_clients)
        assert distiller.summarizer is not None
        hits = stated = summaries = 0
        for conversation in conversations:
            made, _, _ = converse(llm_clients, distiller, conversation)
            summaries += len(made)
            if conversation["split"] == "score":
                h, s, _ = covered(conversation, [d for m in made for d in m.content.decisions])
                hits, stated = hits + h, stated + s
        stats = distiller.summarizer.stats.snapshot()
        prompt_chars = (
            sum(len(json.dumps(r.body.get("messages", []))) for r in fake.requests) if fake else 0
        )
    finally:
        llm_clients.close()
        if fake is not None:
            fake.__exit__(None, None, None)
    return {
        "summaries": summaries,
        "calls": stats["calls"],
        "reasks": stats["reasks"],
        "prompt_tokens": stats["prompt_tokens"] or prompt_chars // 4,
        "completion_tokens": stats["completion_tokens"],
        "hits": hits,
        "stated": stated,
        "real": fake is None,
    }


def recap_run(clients: Clients, session_turns: int = RECAP_TURNS) -> tuple[float, float, int]:
    """(seconds to recap a 1,000-turn session from the graph, of which building, tokens)."""
    reset(clients)
    pipeline = build_pipeline(clients, extractor=OfflineExtractor())
    turns: list[dict[str, Any]] = []
    for index in range(session_turns):
        if index % 2:
            path = f"src/pkg/module_{index % 13}.py"
            body = "\n".join(f"{n:4d}  code line {n}" for n in range(150))
            turns.append({"role": "tool", "speaker": ["read_file", "edit", "bash"][index % 3],
                          "content": f"{path}\n{body}"})  # fmt: skip
        elif index % 4 == 0:
            turns.append(
                {"role": "user", "content": f"Step {index}: now look at part {index // 40}."}
            )
        else:
            turns.append(
                {"role": "assistant", "content": f"Part {index // 40}: handler {index} fixed."}
            )
    events = events_of({"id": "recap", "turns": turns}, T0)
    for start in range(0, len(events), 100):
        pipeline.ingest(events[start : start + 100])
    distiller = build_distiller(clients)
    started = time.perf_counter()
    recap = recap_session(distiller, "bench-recap", 1_000, store=False)
    total = time.perf_counter() - started
    assert recap is not None
    from turngraph.workers.maintenance.recap import build_recap

    stored = distiller.store.session_turns("bench-recap")
    started = time.perf_counter()
    build_recap(stored, 1_000)
    building = time.perf_counter() - started
    return total, building, recap.tokens


def _share(hits: int, stated: int) -> float:
    return round(hits / stated, 3) if stated else 0.0


def measure(
    clients: Clients,
    conversations: list[dict[str, Any]],
    *,
    recap_turns: int = RECAP_TURNS,
    llm_base_url: str | None = None,
) -> dict[str, Any]:
    """Every figure of the bench, on ``clients`` (emptied between runs)."""
    offline = offline_run(clients, conversations)
    llm = llm_run(clients, conversations, llm_base_url)
    recap_s, recap_build_s, recap_tokens = recap_run(clients, recap_turns)
    return {"offline": offline, "llm": llm, "recap": (recap_s, recap_build_s, recap_tokens),
            "conversations": len(conversations)}  # fmt: skip


def report(figures: dict[str, Any]) -> None:
    """Print the tables and the ``RESULT distill …`` line."""
    offline, llm = figures["offline"], figures["llm"]
    recap_s, recap_build_s, recap_tokens = figures["recap"]
    per_100 = offline["summaries"] / offline["turns"] * 100
    ms_per_turn = offline["seconds"] / max(1, offline["summarized"]) * 1000
    rows = []
    for split in ("tune", "score"):
        stated = offline[f"{split}_stated"]
        rows.append(
            [
                split,
                stated,
                _share(offline[f"{split}_hits"], stated),
                _share(offline[f"{split}_precise"], offline[f"{split}_bullets"]),
                _share(offline[f"{split}_lead_hits"], stated),
                _share(offline[f"{split}_lead_precise"], offline[f"{split}_lead_bullets"]),
            ]
        )
    print(f"conversations: {figures['conversations']}, turns: {offline['turns']}")
    headers = ["split", "decisions", "coverage", "precision", "lead3_coverage", "lead3_precision"]
    print(table(headers, rows))
    calls_per = llm["calls"] / max(1, llm["summaries"])
    print(
        table(
            ["measure", "value"],
            [
                ["summaries per 100 turns", round(per_100, 2)],
                ["offline summary ms per summarized turn", round(ms_per_turn, 3)],
                ["LLM calls per summary", round(calls_per, 3)],
                [
                    "LLM prompt tokens per summary",
                    round(llm["prompt_tokens"] / max(1, llm["summaries"]), 1),
                ],
                ["recap of 1,000 turns, s (graph read + build)", round(recap_s, 3)],
                ["recap of 1,000 turns, s (build only)", round(recap_build_s, 3)],
                ["recap tokens (budget 1000)", recap_tokens],
            ],
        )
    )
    llm_coverage = _share(llm["hits"], llm["stated"]) if llm["real"] else "n/a"
    score_stated = offline["score_stated"]
    print(
        result_line(
            "distill",
            summaries_per_100_turns=round(per_100, 2),
            offline_summary_ms_per_turn=round(ms_per_turn, 3),
            llm_calls_per_summary=round(calls_per, 3),
            llm_prompt_tokens_per_summary=round(llm["prompt_tokens"] / max(1, llm["summaries"]), 1),
            recap_1000_turns_ms=round(recap_s * 1000, 1),
            recap_tokens=recap_tokens,
            decision_coverage_offline_score=_share(offline["score_hits"], score_stated),
            decision_coverage_offline_tune=_share(offline["tune_hits"], offline["tune_stated"]),
            decision_precision_offline_score=_share(
                offline["score_precise"], offline["score_bullets"]
            ),
            decision_coverage_lead3_score=_share(offline["score_lead_hits"], score_stated),
            decision_precision_lead3_score=_share(
                offline["score_lead_precise"], offline["score_lead_bullets"]
            ),
            decision_coverage_llm_score=llm_coverage,
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llm", action="store_true", help="use the configured LLM endpoint")
    args = parser.parse_args(argv)
    configure_logging(Settings(_env_file=None, log_level="WARNING"))
    conversations = load()
    base_url = Settings().llm_base_url if args.llm else None
    if args.llm and base_url is None:
        raise SystemExit("--llm needs TURNGRAPH_LLM_BASE_URL")
    with services() as clients:
        report(measure(clients, conversations, llm_base_url=base_url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
