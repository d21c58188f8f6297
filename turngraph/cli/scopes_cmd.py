"""``turngraph scopes``: the workspaces and sessions in the memory, with hints a person
recognises (folder name, first turn, turn count), so the hashed ids can be found."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.scopes import Scope
from turngraph.scope_keys import raw_workspace, scope_id
from turngraph.settings import Settings
from turngraph.workers.graph.inventory import scope_counts

__all__ = [
    "SessionRow", "WorkspaceRow", "list_scopes", "local_scopes", "register", "render",
    "run_scopes",
]  # fmt: skip


@dataclass
class SessionRow:
    id: str
    turns: int | None
    """Turns the graph holds; None: not known here (a tenant's producer has no graph)."""
    first_turn: str | None
    last_turn: str | None


@dataclass
class WorkspaceRow:
    id: str
    folder: str | None
    turns: int | None
    first_turn: str | None
    last_turn: str | None
    here: bool = False
    sessions: list[SessionRow] = field(default_factory=list)


def _time(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:16].replace("T", " ")  # minutes are enough to recognise a chat


def local_scopes(settings: Settings, *, here: str | None = None) -> list[WorkspaceRow]:
    """The workspaces and sessions this machine published, from its hints only (a tenant's
    producer has no graph to ask): the ids to give the operator for a forget."""
    hints = ScopeHints(settings.data_dir).load()
    rows = {
        key: WorkspaceRow(
            id=key, folder=hint.get("folder"), turns=None,
            first_turn=_time(hint.get("first_seen")), last_turn=None, here=key == here,
        )
        for key, hint in hints["workspaces"].items()
    }  # fmt: skip
    for key, hint in hints["sessions"].items():
        workspace = rows.get(hint.get("workspace"))
        if workspace is not None:
            # what this machine knows: when it first published the session
            first = _time(hint.get("first_seen"))
            workspace.sessions.append(
                SessionRow(id=key, turns=None, first_turn=first, last_turn=None)
            )
    for row in rows.values():
        row.sessions.sort(key=lambda s: s.first_turn or "", reverse=True)
    return list(rows.values())


def list_scopes(settings: Settings, *, here: str | None = None) -> list[WorkspaceRow]:
    """Every workspace in the graph with its sessions, newest first; ``here`` (a hashed
    workspace id) is flagged. With a tenant credential: :func:`local_scopes`."""
    from turngraph.cli.graph_cmd import _clients

    if settings.tenant:
        return local_scopes(settings, here=here)
    hints = ScopeHints(settings.data_dir).load()
    with _clients(settings) as clients:
        workspaces, sessions = scope_counts(clients.graph, clients.graph_database)
    rows = {
        counted.key: WorkspaceRow(
            id=counted.key,
            folder=hints["workspaces"].get(counted.key, {}).get("folder"),
            turns=counted.turns,
            first_turn=_time(counted.first),
            last_turn=_time(counted.last),
            here=counted.key == here,
        )
        for counted in workspaces
    }
    for counted in sessions:
        workspace = rows.get(counted.workspace or "")
        if workspace is not None:
            workspace.sessions.append(
                SessionRow(
                    id=counted.key,
                    turns=counted.turns,
                    first_turn=_time(counted.first),
                    last_turn=_time(counted.last),
                )
            )
    for row in rows.values():
        row.sessions.sort(key=lambda s: s.last_turn or "", reverse=True)
    return sorted(rows.values(), key=lambda w: w.last_turn or "", reverse=True)


def _count(turns: int | None) -> str:
    return "-" if turns is None else str(turns)


def render(rows: list[WorkspaceRow]) -> str:
    """A table: one line per workspace, its sessions indented under it."""
    if not rows:
        return "no workspaces in the memory yet"
    lines = [f"{'SCOPE ID':36}  {'FOLDER':20}  {'FIRST TURN':16}  {'LAST TURN':16}  TURNS"]
    for w in rows:
        folder = (w.folder or "?") + (" (here)" if w.here else "")
        lines.append(
            f"{w.id:36}  {folder[:20]:20}  {w.first_turn or '-':16}  "
            f"{w.last_turn or '-':16}  {_count(w.turns)}"
        )
        for s in w.sessions:
            lines.append(
                f"  {s.id:34}  {'':20}  {s.first_turn or '-':16}  {s.last_turn or '-':16}  "
                f"{_count(s.turns)}"
            )
    if any(w.turns is None for w in rows):
        lines.append("TURNS -: the graph counts them, and a tenant's producer cannot ask it")
    lines.append(
        "folder names come from this machine's publishes; "
        "any command taking a scope accepts the id, or the folder / session id itself"
    )
    return "\n".join(lines)


def run_scopes(args: argparse.Namespace) -> int:
    settings = Settings()
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    here = hasher.workspace(raw_workspace(os.getcwd()))
    rows = list_scopes(settings, here=here)  # failures: one line, from turngraph.cli.main
    if args.workspace:
        wanted = scope_id(hasher, Scope.WORKSPACE, args.workspace)
        rows = [row for row in rows if row.id == wanted]
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        print(render(rows))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scopes = subparsers.add_parser(
        "scopes",
        help="list workspaces and sessions with their folder names, first turn and counts",
        description="List the workspaces and sessions in the memory. Their ids are hashed "
        "before they leave the editor; the folder names shown are kept on this machine only "
        "(the data folder's scope-hints.json) when turns are published from it.",
    )
    scopes.add_argument(
        "--workspace", help="only this workspace: its folder (e.g. .) or its id (w_...)"
    )
    scopes.add_argument("--json", action="store_true", help="print JSON instead of a table")
    scopes.set_defaults(handler=run_scopes)
