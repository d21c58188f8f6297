"""Hook events over the endpoint's warm clients.

The logic of ``turngraph hook`` (``producers.hooks``) with the endpoint's recall and
distill clients instead of new ones per call. Capture events are answered at once, their
work returned as a callable the server runs after the reply; every failure is counted in
the hooks' counters and answered with ``{}`` (fail open).
"""

from __future__ import annotations

import contextlib
import getpass
import time
from collections.abc import Callable
from typing import Any

import structlog

from turngraph.clients import producer_redis_url
from turngraph.producers.connection import open_publisher
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.hooks.call import CAPTURE_ACTIONS, hook_target, read_call
from turngraph.producers.hooks.editors import EDITORS
from turngraph.producers.hooks.payload import HookCall
from turngraph.producers.hooks.runner import HookRunner, HookServices
from turngraph.producers.hooks.state import HookState
from turngraph.producers.operations import Operations
from turngraph.producers.publisher import Publisher
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings

__all__ = ["HookAnswer", "HookEvents"]

log = structlog.get_logger(__name__)

CONNECT_TIMEOUT_S = 0.25
"""A capture's publisher takes a Redis that does not accept a connection this fast as away."""

HookAnswer = tuple[dict[str, Any], Callable[[], None] | None]
"""What to reply now, and the work to do after the reply (capture events)."""


class HookEvents:
    """Answers ``POST /v1/hooks/{editor}/{event}`` for one data folder."""

    def __init__(self, settings: Settings, operations: Operations) -> None:
        self._settings = settings
        self._operations = operations
        self.state = HookState(settings.data_dir)
        self._hasher = ScopeHasher.for_data_dir(settings.data_dir)
        self._consent = ConsentStore(settings.data_dir).checker(
            consent_endpoint(settings.redis_url, settings.data_dir)
        )
        self._user = getpass.getuser()

    def answer(
        self, editor: str, event: str, raw: bytes, *, project_dir: str | None = None
    ) -> HookAnswer:
        """The reply to one hook event (never raises)."""
        started = time.monotonic()
        try:
            target = hook_target(event, editor)
            if target is None:
                self.state.count(error_bad_arguments=1)
                return {}, None
            action, editor = target
            call = read_call(self.state, action, raw, project_dir=project_dir)
            if call is None:
                return {}, None
            if action in CAPTURE_ACTIONS:

                def after() -> None:
                    self._run(editor, call, started)

                return {}, after
            return self._run(editor, call, started) or {}, None
        except Exception as exc:  # the editor must never see a failure
            self._failed(exc)
            return {}, None

    def _run(self, editor: str, call: HookCall, started: float) -> dict[str, Any] | None:
        try:
            return self._runner(editor, started).run(call)
        except Exception as exc:
            self._failed(exc)
            return None

    def _failed(self, exc: Exception) -> None:
        log.error("hook_failed", error=type(exc).__name__)
        with contextlib.suppress(Exception):  # a read-only data folder: still fail open
            self.state.count(error_internal=1)

    def _runner(self, editor: str, started: float) -> HookRunner:
        settings = self._settings
        backend = self._operations.backend

        def recaller() -> Any:
            backend.ensure()
            return backend.recaller

        def distiller() -> Any:
            backend.ensure()
            return backend.distiller

        return HookRunner(
            spec=EDITORS[editor],
            state=self.state,
            hasher=self._hasher,
            user=self._user,
            consent=self._consent,
            services=HookServices(
                publisher=self._publisher, recaller=recaller, distiller=distiller
            ),
            deadline_ms=settings.hook_deadline_ms,
            start_budget_tokens=settings.hook_start_budget_tokens,
            started_at=started,
        )

    def _publisher(self) -> Publisher | None:
        """A publisher of the capture's own (the runner closes it when its turns are in:
        its counters are the call's)."""
        url = producer_redis_url(self._settings)
        if url is None:
            return None
        return open_publisher(self._settings, redis_url=url, connect_timeout_s=CONNECT_TIMEOUT_S)
