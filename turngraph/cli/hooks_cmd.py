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
    forwarder_executable,
    http_target,
    install,
    install_forwarder,
    status,
    uninstall,
)
from turngraph.producers.hooks.editors import EDITORS
from turngraph.producers.hooks.payload import HookAction
from turngraph.producers.hooks.state import HookState
from turngraph.settings import Settings

__all__ = ["register", "run_hook_command", "run_hooks"]


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
    if args.action == "uninstall":
        report = uninstall(spec, path)
        print(json.dumps({"success": True, "editor": report.editor, "file": str(report.path),
                          "action": report.action, "events": report.events,
                          "backup": str(report.backup) if report.backup else None}))  # fmt: skip
        return 0
    settings = Settings()
    via = _via(args)
    if via == "http" and not args.user:
        print("turngraph hooks install: http hooks carry the endpoint's token: install them "
              "with --user (a project's file gets the forwarder: --via forwarder)",
              file=sys.stderr)  # fmt: skip
        return 2
    http = http_target(settings.data_dir) if via == "http" else None
    if via == "http" and http is None:
        print("turngraph hooks install: the endpoint is not running (no endpoint.json or "
              "endpoint.token in the data folder): start `turngraph up` first, or install "
              "the forwarder (--via forwarder)", file=sys.stderr)  # fmt: skip
        return 1
    if args.command:
        executable = args.command
    elif via == "command":
        executable = default_executable(sys.executable, Path(sys.executable).parent / "turngraph")
    else:
        executable = forwarder_executable(sys.executable, install_forwarder(settings.data_dir))
    report = install(spec, path, executable, http)
    folder = Path(args.folder).expanduser().resolve()
    consented = _consent(settings, folder, enable=args.consent)
    print(json.dumps({"success": True, "editor": report.editor, "file": str(report.path),
                      "action": report.action, "events": report.events, "via": via,
                      "backup": str(report.backup) if report.backup else None,
                      "consent": consented}))  # fmt: skip
    if via == "forwarder" and http_target(settings.data_dir) is None:
        print("turngraph hooks install: the endpoint is not running: the hooks do nothing "
              "until `turngraph up` (or `turngraph endpoint`) serves it",
              file=sys.stderr)  # fmt: skip
    if not consented:
        print(f"turngraph hooks install: publishing is not enabled for {folder}: every hook "
              "does nothing there until you run `turngraph consent enable --workspace "
              f"{folder}` (or install again with --consent)", file=sys.stderr)  # fmt: skip
    return 0


def _via(args: argparse.Namespace) -> str:
    """``--via``, else: a command when ``--command`` names one, http hooks for Claude Code at
    user level when the endpoint runs, the forwarder elsewhere."""
    if args.via:
        return str(args.via)
    if args.command:
        return "command"
    if args.user and EDITORS[args.editor].shape == "claude":
        return "http" if http_target(Settings().data_dir) is not None else "forwarder"
    return "forwarder"


def _consent(settings: Settings, folder: Path, *, enable: bool) -> bool:
    """Whether publishing is enabled for ``folder`` (enabled first with ``--consent``)."""
    from turngraph.clients import producer_consent_endpoint
    from turngraph.producers.consent import ConsentStore
    from turngraph.producers.scopes import ScopeHasher

    workspace = ScopeHasher.for_data_dir(settings.data_dir).workspace(str(folder))
    endpoint = producer_consent_endpoint(settings)
    store = ConsentStore(settings.data_dir)
    if enable:
        store.enable(workspace, endpoint)
    return store.is_enabled(workspace, endpoint)


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
    hooks.add_argument(
        "--via",
        choices=["http", "forwarder", "command"],
        help="how the editor reaches turngraph: Claude Code's http hooks (--user only), the "
        "forwarder (a small script handing the payload to `turngraph up`'s endpoint), or a "
        "`turngraph hook` command (a full start-up per event, no endpoint needed); default: http "
        "for claude-code --user when the endpoint runs, else the forwarder",
    )
    hooks.add_argument(
        "--consent", action="store_true", help="also enable publishing for the folder"
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
