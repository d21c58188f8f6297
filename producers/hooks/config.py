"""``turngraph hooks install|uninstall|status``: our entries in the editors' own files.

Install merges (entries not ours are kept; installing twice changes nothing) and keeps
the file as it was beside it (``<file>.turngraph-backup``); uninstall removes exactly our
entries, restoring the backup's bytes when nothing else changed. docs/hooks.md
("Install, per editor").
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turngraph.producers.hooks.editors import (
    EDITORS,
    EditorSpec,
    HttpTarget,
    entry_commands,
    entry_urls,
    hook_entry,
)
from turngraph.schemas.errors import ConfigurationError

__all__ = [
    "BACKUP_SUFFIX", "CREATED_SUFFIX", "FORWARDER", "InstallReport", "Installed", "config_file",
    "default_executable", "forwarder_executable", "hook_command", "http_target", "install",
    "install_forwarder", "is_our_url", "is_ours", "status", "uninstall",
]  # fmt: skip

BACKUP_SUFFIX = ".turngraph-backup"
CREATED_SUFFIX = ".turngraph-created"
"""Beside a file install created: the folders it created too (removed on uninstall)."""

_OURS = re.compile(
    r"turngraph\S*\s.*\bhook (session-start|prompt|capture|summarize|session-end) --editor [a-z-]+"
)


_OUR_URL = re.compile(
    r"^https?://[^/]+/v1/hooks/[a-z-]+/(session-start|prompt|capture|summarize|session-end)$"
)

FORWARDER = "turngraph-forward.py"
"""What editors run in ``<data folder>/hooks/``: :data:`FORWARDER_STUB`."""
FORWARDER_MODULE = "turngraph_forward.py"
"""The forwarder itself beside it (``forward.py`` of this package)."""

FORWARDER_STUB = b'''"""turngraph's hook forwarder as editors run it (from turngraph hooks install).

The forwarder is turngraph_forward.py beside this file, imported so that its cached
bytecode (__pycache__) is used: a script run by path is compiled on every run, which cost
more than the rest of the forwarder. Fails open: on any failure, no output and exit 0.
"""
import sys

try:
    sys.path.append(__file__[: max(__file__.rfind("/"), __file__.rfind("\\\\"), 0)] or ".")
    from turngraph_forward import main
except BaseException:
    sys.exit(0)
sys.exit(main())
'''


def is_ours(command: str) -> bool:
    """True for a command ``turngraph hooks install`` wrote."""
    return bool(_OURS.search(command))


def is_our_url(url: str) -> bool:
    """True for an ``http`` hook's URL ``turngraph hooks install`` wrote."""
    return bool(_OUR_URL.match(url))


def _ours(entry: Any) -> bool:
    return any(is_ours(c) for c in entry_commands(entry)) or any(
        is_our_url(u) for u in entry_urls(entry)
    )


def install_forwarder(data_dir: Path) -> Path:
    """The forwarder in ``<data folder>/hooks/`` (files rewritten only when they changed):
    the path of what editors run."""
    hooks = data_dir / "hooks"
    module = Path(__file__).with_name("forward.py").read_bytes()
    for name, content in ((FORWARDER_MODULE, module), (FORWARDER, FORWARDER_STUB)):
        target = hooks / name
        try:
            if target.read_bytes() == content:
                continue
        except OSError:
            pass
        hooks.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{name}.{os.getpid()}")
        partial.write_bytes(content)
        partial.replace(target)
    return hooks / FORWARDER


def forwarder_executable(python: str, forwarder: Path) -> str:
    """How editors start the forwarder: the interpreter, isolated and without ``site``."""
    return f"{shlex.quote(python)} -I -S {shlex.quote(str(forwarder))}"


def http_target(data_dir: Path) -> HttpTarget | None:
    """The running endpoint's URL and token from the data folder (None: not there)."""
    try:
        described = json.loads((data_dir / "endpoint.json").read_text())
        token = (data_dir / "endpoint.token").read_text().strip()
    except (OSError, ValueError):
        return None
    url = described.get("url") if isinstance(described, dict) else None
    if not isinstance(url, str) or not url.startswith("http://") or not token:
        return None
    return HttpTarget(url, token)


def hook_command(executable: str, action: str, editor: str) -> str:
    """The shell command an editor runs for one of our hooks."""
    return f"{executable} hook {action} --editor {editor}"


def default_executable(python: str, console_script: Path | None) -> str:
    """The console script when it is installed, else ``python -m turngraph``."""
    if console_script is not None and console_script.exists():
        return shlex.quote(str(console_script))
    return f"{shlex.quote(python)} -m turngraph"


def config_file(spec: EditorSpec, *, project: Path | None, home: Path) -> Path:
    """The file ``--project`` (``project`` given) or ``--user`` installs into."""
    return project / spec.project_file if project is not None else home / spec.user_file


def _load(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise ConfigurationError(f"{path} cannot be read: {exc.strerror}") from None
    if not raw.strip():
        return raw, {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ConfigurationError(
            f"{path} is not valid JSON: fix it or move it away first"
        ) from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} does not hold a JSON object: fix it first")
    return raw, data


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


def _without_ours(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A copy of ``data`` without our entries (and the lists they leave empty)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data, 0
    removed = 0
    kept_hooks: dict[str, Any] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            kept_hooks[event] = entries
            continue
        kept = []
        for entry in entries:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if isinstance(inner, list):
                others = [h for h in inner if not _ours(h)]
                removed += len(inner) - len(others)
                if others or not inner:
                    kept.append({**entry, "hooks": others} if len(others) != len(inner) else entry)
            elif _ours(entry):
                removed += 1
            else:
                kept.append(entry)
        if kept or not entries:
            kept_hooks[event] = kept
    cleaned = dict(data)
    if kept_hooks or not hooks:
        cleaned["hooks"] = kept_hooks
    else:
        del cleaned["hooks"]
    return cleaned, removed


@dataclass
class InstallReport:
    editor: str
    path: Path
    events: list[str] = field(default_factory=list)
    backup: Path | None = None
    action: str = ""


def install(
    spec: EditorSpec, path: Path, executable: str, http: HttpTarget | None = None
) -> InstallReport:
    """Add our entries to ``path`` (see the module docstring): commands that start
    ``executable``, or ``http`` hooks to ``http`` for the events that take one."""
    raw, data = _load(path)
    cleaned, removed = _without_ours(data)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    created_marker = path.with_name(path.name + CREATED_SUFFIX)
    if raw is None:
        created = [str(p) for p in [path.parent, *path.parent.parents] if not p.exists()]
        created += _created_beside(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        deepest_first = sorted(set(created), key=lambda p: len(Path(p).parts), reverse=True)
        created_marker.write_text(json.dumps(deepest_first))
    elif removed == 0 and not backup.exists() and not created_marker.exists():
        backup.write_bytes(raw)
    merged = dict(cleaned)
    if spec.version_key:
        merged.setdefault("version", 1)
    hooks = merged.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    for binding in spec.bindings:
        command = hook_command(executable, binding.action.value, spec.name)
        existing = hooks.get(binding.event)
        entries = list(existing) if isinstance(existing, list) else []
        entries.append(hook_entry(spec, binding, command, http))
        hooks[binding.event] = entries
    merged["hooks"] = hooks
    if http is not None:  # the token is in it: readable by the user only
        path.touch(mode=0o600)
        path.chmod(0o600)
    path.write_bytes(_dump(merged))
    return InstallReport(
        spec.name,
        path,
        [b.event for b in spec.bindings],
        backup if backup.exists() else None,
        "reinstalled" if removed else "installed",
    )


def _created_beside(path: Path) -> list[str]:
    """The folders another of our installs in the same folder created (VS Code and Copilot
    CLI share ``.github/hooks/``): whichever is uninstalled last removes them."""
    found: list[str] = []
    for marker in path.parent.glob("*" + CREATED_SUFFIX) if path.parent.is_dir() else []:
        try:
            listed = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        found.extend(str(p) for p in listed if isinstance(p, str))
    return found


def uninstall(spec: EditorSpec, path: Path) -> InstallReport:
    """Remove our entries from ``path`` (see the module docstring)."""
    report = InstallReport(spec.name, path)
    raw, data = _load(path)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    created_marker = path.with_name(path.name + CREATED_SUFFIX)
    if raw is None:
        report.action = "not installed"
        return report
    cleaned, removed = _without_ours(data)
    if removed == 0:
        report.action = "not installed"
        return report
    if backup.exists() and json.loads(backup.read_bytes() or b"{}") == cleaned:
        path.write_bytes(backup.read_bytes())
        backup.unlink()
        report.action = "restored"
    elif created_marker.exists() and _only_scaffolding(cleaned, spec):
        folders = json.loads(created_marker.read_text())
        path.unlink()
        created_marker.unlink()
        for folder in folders:  # deepest first, as install listed them
            try:
                Path(folder).rmdir()
            except OSError:
                break  # not empty (something else lives there now) or already gone
        report.action = "removed"
    else:
        path.write_bytes(_dump(cleaned))
        report.action = "removed our entries"
    return report


def _only_scaffolding(cleaned: dict[str, Any], spec: EditorSpec) -> bool:
    rest = {k: v for k, v in cleaned.items() if not (k == "version" and spec.version_key)}
    return rest in ({}, {"hooks": {}})


@dataclass
class Installed:
    editor: str
    scope: str
    path: Path
    events: list[str]


def status(*, project: Path, home: Path) -> list[Installed]:
    """Our entries in every known file of ``project`` and of the user."""
    found: list[Installed] = []
    for spec in EDITORS.values():
        for scope, path in (
            ("project", config_file(spec, project=project, home=home)),
            ("user", config_file(spec, project=None, home=home)),
        ):
            try:
                _, data = _load(path)
            except ConfigurationError:
                continue
            hooks = data.get("hooks")
            events = [
                event
                for event, entries in (hooks.items() if isinstance(hooks, dict) else [])
                if isinstance(entries, list)
                and any(
                    (is_ours(c) and f"--editor {spec.name}" in c)
                    or (is_our_url(c) and f"/v1/hooks/{spec.name}/" in c)
                    for e in entries
                    for c in [*entry_commands(e), *entry_urls(e)]
                )
            ]
            if events:
                found.append(Installed(spec.name, scope, path, events))
    return found
