"""A small conversation graph in the shape the graph writer produces, for the scope tools.

Two workspaces; in ``ws-a`` two sessions of one user, in ``ws-b`` one session of another
user; entities resolved per workspace (and a user-scoped preference), mentions, facts
with provenance, and a decision that supersedes an older one.
"""

from __future__ import annotations

from typing import Any

import neo4j

TURNS: list[dict[str, Any]] = [
    # (session, workspace, user, turn, role, content, mentions)
    {
        "session": "s-1",
        "workspace": "ws-a",
        "user": "u-1",
        "turn": 0,
        "role": "user",
        "content": "decision: retry with exponential backoff in src/app.py",
        "mentions": [("Decision", "retry with backoff", "ws-a"), ("File", "src/app.py", "ws-a")],
    },
    {
        "session": "s-1",
        "workspace": "ws-a",
        "user": "u-1",
        "turn": 1,
        "role": "assistant",
        "content": "Done: src/app.py now retries, using tenacity.",
        "mentions": [("File", "src/app.py", "ws-a"), ("Tool", "tenacity", "ws-a")],
    },
    {
        "session": "s-2",
        "workspace": "ws-a",
        "user": "u-1",
        "turn": 0,
        "role": "user",
        "content": "decision: retry with a fixed delay instead. preference: short answers",
        "mentions": [
            ("Decision", "retry with fixed delay", "ws-a"),
            ("Preference", "short answers", "u-1"),
        ],
    },
    {
        "session": "s-3",
        "workspace": "ws-b",
        "user": "u-2",
        "turn": 0,
        "role": "user",
        "content": "src/app.py in the other repo uses tenacity too",
        "mentions": [("File", "src/app.py", "ws-b"), ("Tool", "tenacity", "ws-b")],
    },
]

FACTS: list[tuple[tuple[str, str, str], str, tuple[str, str, str], str]] = [
    (
        ("Decision", "retry with backoff", "ws-a"),
        "APPLIES_TO",
        ("File", "src/app.py", "ws-a"),
        "s-1:0",
    ),
    (("File", "src/app.py", "ws-a"), "USES_TOOL", ("Tool", "tenacity", "ws-a"), "s-1:1"),
    (("File", "src/app.py", "ws-b"), "USES_TOOL", ("Tool", "tenacity", "ws-b"), "s-3:0"),
]


def event_id(session: str, turn: int, role: str) -> str:
    return f"{session}-{turn}-{role}"


def uid(entity: tuple[str, str, str]) -> str:
    label, name, scope_key = entity
    return f"{scope_key}|{label}|{name.casefold()}"


def build(driver: neo4j.Driver, database: str | None) -> None:
    """Write the conversation; returns nothing, the graph is the result."""
    for i, turn in enumerate(TURNS):
        at = f"2026-11-0{i + 1}T10:00:00.000000Z"
        eid = event_id(turn["session"], turn["turn"], turn["role"])
        driver.execute_query(
            """
            MERGE (w:Workspace {key: $workspace}) ON CREATE SET w.created_at = $at
            MERGE (s:Session {key: $session})
              ON CREATE SET s.workspace = $workspace, s.user = $user, s.started_at = $at
            MERGE (s)-[:IN_WORKSPACE]->(w)
            MERGE (u:User {key: $user})
            CREATE (e:Episode {event_id: $eid, session_id: $session, workspace: $workspace,
              user: $user, turn_index: $turn, role: $role, content: $content,
              occurred_at: $at, tags: ['t'], importance: 0.5})
            MERGE (e)-[:IN_SESSION]->(s)
            WITH e
            OPTIONAL MATCH (p:Episode {session_id: $session, turn_index: $turn - 1})
            FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:NEXT]->(e))
            """,
            workspace=turn["workspace"],
            session=turn["session"],
            user=turn["user"],
            eid=eid,
            turn=turn["turn"],
            role=turn["role"],
            content=turn["content"],
            at=at,
            database_=database,
        )
        for label, name, scope_key in turn["mentions"]:
            scope = "user" if label == "Preference" else "workspace"
            driver.execute_query(
                f"""
                MERGE (n:{label} {{uid: $uid}})
                ON CREATE SET n.name = $name, n.name_key = $key, n.type = $label,
                  n.scope = $scope, n.scope_key = $scope_key, n.status = 'Active',
                  n.valid_at = $at, n.mentions = 0, n.first_episode_id = $eid
                WITH n
                MATCH (e:Episode {{event_id: $eid}})
                MERGE (e)-[:MENTIONS]->(n)
                SET n.mentions = n.mentions + 1
                """,
                uid=uid((label, name, scope_key)),
                name=name,
                key=name.casefold(),
                label=label,
                scope=scope,
                scope_key=scope_key,
                at=at,
                eid=eid,
                database_=database,
            )
    for source, rel, target, where in FACTS:
        session, turn = where.split(":")
        role = "user" if turn == "0" else "assistant"
        driver.execute_query(
            f"""
            MATCH (a:{source[0]} {{uid: $a}}) MATCH (b:{target[0]} {{uid: $b}})
            MERGE (a)-[f:{rel}]->(b)
            ON CREATE SET f.valid_at = '2026-11-01T10:00:00.000000Z', f.status = 'Active',
              f.episode_ids = [$eid], f.statement = 'stated', f.scope_key = $scope_key
            """,
            a=uid(source),
            b=uid(target),
            eid=event_id(session, int(turn), role),
            scope_key=source[2],
            database_=database,
        )
    driver.execute_query(
        """
        MATCH (new:Decision {uid: $new}) MATCH (old:Decision {uid: $old})
        SET old.status = 'Superseded', old.invalid_at = new.valid_at
        MERGE (new)-[s:SUPERSEDES]->(old)
        ON CREATE SET s.valid_at = new.valid_at, s.episode_ids = [$eid]
        """,
        new=uid(("Decision", "retry with fixed delay", "ws-a")),
        old=uid(("Decision", "retry with backoff", "ws-a")),
        eid=event_id("s-2", 0, "user"),
        database_=database,
    )
