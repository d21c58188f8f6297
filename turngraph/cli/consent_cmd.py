"""``turngraph consent enable|disable|status``: publishing is off until enabled (SPEC §8)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from turngraph.clients import producer_consent_endpoint
from turngraph.producers.consent import ConsentStore, endpoint_id
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings, url_problem

__all__ = ["register", "run_consent"]


def run_consent(args: argparse.Namespace) -> int:
    settings = Settings()
    problem = url_problem("redis_url", args.endpoint) if args.endpoint else None
    if problem:  # the rule of TURNGRAPH_REDIS_URL
        print(f"turngraph consent: error: invalid --endpoint: {problem}", file=sys.stderr)
        return 1
    workspace_key = str(Path(args.workspace).resolve())
    workspace = ScopeHasher.for_data_dir(settings.data_dir).workspace(workspace_key)
    endpoint = endpoint_id(args.endpoint) if args.endpoint else producer_consent_endpoint(settings)
    store = ConsentStore(settings.data_dir)
    if args.action == "enable":
        store.enable(workspace, endpoint)
    elif args.action == "disable":
        store.disable(workspace, endpoint)
    enabled = store.is_enabled(workspace, endpoint)
    print(
        json.dumps(
            {
                "success": True,
                "workspace": workspace_key,
                "workspace_id": workspace,
                "endpoint": endpoint,
                "publishing_enabled": enabled,
            }
        )
    )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    consent = subparsers.add_parser(
        "consent", help="enable, disable or show publishing for a workspace"
    )
    consent.add_argument(
        "action",
        choices=["enable", "disable", "status"],
        help="enable or disable publishing for the workspace, or show the grant",
    )
    consent.add_argument("--workspace", default=".", help="workspace folder (default: here)")
    consent.add_argument(
        "--endpoint", help="Redis URL the grant is for (default: the configured or embedded one)"
    )
    consent.set_defaults(handler=run_consent)
