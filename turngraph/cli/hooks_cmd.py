"""``turngraph hooks install|uninstall|status`` and ``turngraph hook EVENT``: editors'
lifecycle hooks (docs/hooks.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from turngraph.producers.hooks.config import (
    config_file,
    default_executable,
    install,
    status,
    uninstall,
)
from turngraph.producers.hooks.editors import EDITORS
from turngraph.producers.hooks.payload import HookAction
from turngraph.producers.hooks.state import HookState
from turngraph.settings import Settings


def _target(args: argparse.Namespace) -> Path:
    spec = EDITORS[args.editor]
    project = None if args.user else Path(args.folder).expanduser().resolve()
    return config_file(spec, project=project, home=Path.home())


def run_hooks(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    if not args.editor:
        print(f"turngraph hooks {args.action}: name an editor ({', '.join(EDITORS)})")
        return 2
    spec = EDITORS[args.editor]
    path = _target(args)
    if args.action == "install":
        executable = args.command or default_executable(
            sys.executable, Path(sys.executable).parent / "turngraph"
        )
        report = install(spec, path, executable)
    else:
        report = uninstall(spec, path)
    print(
        json.dumps(
            {
                "success": True,
                "editor": report.editor,
                "file": str(report.path),
                "action": report.action,
                "events": report.events,
                "backup": str(report.backup) if report.backup else None,
            }
        )
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    settings = Settings()
    found = status(project=Path(args.folder).expanduser().resolve(), home=Path.home())
    if args.editor:
        found = [f for f in found if f.editor == args.editor]
    counters = HookState(settings.data_dir).counters()
    if args.json:
        rows = [{"editor": f.editor, "scope": f.scope, "file": str(f.path), "events": f.events}
                for f in found]  # fmt: skip
        print(json.dumps({"installed": rows, "counters": counters}))
        return 0
    if not found:
        print("no turngraph hooks installed here or for this user")
    for f in found:
        print(f"{f.editor:12} {f.scope:8} {f.path}  ({', '.join(f.events)})")
    shared = {f.path.parent for f in found if f.editor in ("vscode", "copilot-cli")}
    if len([f for f in found if f.editor in ("vscode", "copilot-cli")]) > 1 and len(shared) == 1:
        print("note: VS Code and Copilot CLI both read every file in", next(iter(shared)))
    if counters:
        print("counters: " + ", ".join(f"{k}={v}" for k, v in sorted(counters.items())))
    return 0


def run_hook_command(args: argparse.Namespace) -> int:
    from turngraph.cli.hook_cmd import run_hook

    return run_hook([args.event, "--editor", args.editor])


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hooks = subparsers.add_parser(
        "hooks", help="install, remove or show editor hooks (capture and recall, no MCP needed)"
    )
    hooks.add_argument(
        "action",
        choices=["install", "uninstall", "status"],
        help="add our hooks to the editor's configuration, remove exactly them, or show them",
    )
    hooks.add_argument("editor", nargs="?", choices=sorted(EDITORS), help="the editor")
    scope = hooks.add_mutually_exclusive_group()
    scope.add_argument(
        "--project", action="store_true", help="the project's own configuration (default)"
    )
    scope.add_argument("--user", action="store_true", help="the user's configuration")
    hooks.add_argument("--folder", default=".", help="the project folder (default: here)")
    hooks.add_argument(
        "--command", help="how editors start turngraph (default: this installation's path)"
    )
    hooks.add_argument("--json", action="store_true", help="status as JSON")
    hooks.set_defaults(handler=run_hooks)

    hook = subparsers.add_parser(
        "hook", help="run one hook (editors call this; reads the payload on stdin, exits 0)"
    )
    hook.add_argument(
        "event", choices=[a.value for a in HookAction], help="what the editor's event asks for"
    )
    hook.add_argument(
        "--editor", required=True, choices=sorted(EDITORS), help="whose payload and format"
    )
    hook.set_defaults(handler=run_hook_command)
