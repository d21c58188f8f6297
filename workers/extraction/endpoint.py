"""One OpenAI-compatible endpoint as this process found it: the output mode it accepts,
whether its chat template keeps system messages, and how fast it reads.

In ``auto`` mode the first call tries the strongest output mode and steps down on a
rejection naming ``response_format`` (not retried: :func:`final_refusal`); the mode found
is shared by extraction and summaries (one :class:`LLMEndpoint` per process) and by the
deployment (:class:`SharedMode`, in Redis). A server that reports far fewer prompt tokens
than sent dropped the system message, which is then merged into the first user message.
docs/llm.md ("Output modes", "System prompt").
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import openai
import structlog

from turngraph.workers.extraction.errors import LLM_ERRORS, LLMUnavailableError
from turngraph.workers.extraction.llm_calls import server_text
from turngraph.workers.extraction.shared_mode import SharedMode
from turngraph.workers.llm_provider import ENDPOINT_COUNTERS, Provider, ProviderStats, convert_error

if TYPE_CHECKING:
    import httpx
    from openai.types.chat import ChatCompletion

__all__ = [
    "DROPPED_SYSTEM_CHARS_PER_TOKEN", "REFUSAL_STATUSES", "SCHEMA_IN_PROMPT", "STEP_DOWN",
    "Answer", "LLMEndpoint", "Messages", "OutputMode", "SystemPrompt", "final_refusal", "merged",
    "refuses_response_format",
]  # fmt: skip

log = structlog.get_logger(__name__)

Messages = list[dict[str, str]]


class OutputMode(str, Enum):
    """How the answer's JSON Schema reaches the server, strongest first."""

    AUTO = "auto"
    JSON_SCHEMA = "json_schema"
    """``response_format`` ``json_schema`` (OpenAI structured output, vLLM, Ollama ≥ 0.5)."""
    JSON_OBJECT_SCHEMA = "json_object_schema"
    """``{"type": "json_object", "schema": …}`` (llama.cpp / llama-cpp-python grammars)."""
    JSON_OBJECT = "json_object"
    """JSON mode; the schema goes into the prompt."""
    PROMPT_ONLY = "prompt_only"
    """No ``response_format``; the schema goes into the prompt."""


STEP_DOWN = {
    OutputMode.JSON_SCHEMA: OutputMode.JSON_OBJECT_SCHEMA,
    OutputMode.JSON_OBJECT_SCHEMA: OutputMode.JSON_OBJECT,
    OutputMode.JSON_OBJECT: OutputMode.PROMPT_ONLY,
}

SCHEMA_IN_PROMPT = frozenset({OutputMode.JSON_OBJECT, OutputMode.PROMPT_ONLY})
"""Modes in which the server does not enforce the schema: the prompt carries it."""


class SystemPrompt(str, Enum):
    AUTO = "auto"
    """A system message, merged into the first user message once the server drops it."""
    SYSTEM = "system"
    MERGE = "merge"
    """Always in the first user message (gemma, and templates without a system role)."""


DROPPED_SYSTEM_CHARS_PER_TOKEN = 6.0
"""Tokenizers read 3-4.5 characters per token; a server that reports fewer tokens than
one per 6 characters did not read all the messages."""

REFUSAL_STATUSES = frozenset({400, 422, 500})


def refuses_response_format(err: openai.OpenAIError) -> bool:
    """A rejection that names ``response_format`` (llama-cpp-python: a 500 with a
    pydantic ``literal_error`` on ``response_format.type``; vLLM and proxies: 400/422)."""
    if not isinstance(err, openai.APIStatusError) or err.status_code not in REFUSAL_STATUSES:
        return False
    body = err.body
    text = f"{err.message} {body!s}" if body is not None else err.message
    return "response_format" in text or "json_schema" in text


def final_refusal(response: httpx.Response) -> None:
    """An httpx response hook (``turngraph.clients.build_llm``): a refusal that names
    ``response_format`` is final (``x-should-retry: false``, which the openai client
    obeys), so the client does not send the refused request again (llama-cpp-python's 500
    was retried twice); every other error keeps the client's retries."""
    if response.status_code not in REFUSAL_STATUSES:
        return
    response.read()
    text = response.text[:8_192]
    if "response_format" in text or "json_schema" in text:
        response.headers["x-should-retry"] = "false"


@dataclass
class Answer:
    text: str
    truncated: bool
    """Cut at the output limit (``finish_reason == "length"``)."""
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def merged(messages: Messages) -> Messages:
    """The system message(s) put in front of the first user message."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for message in rest:
        if message["role"] == "user":
            message["content"] = f"{system}\n\n{message['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]


class LLMEndpoint(Provider):
    """The process's view of one endpoint; thread-safe; built once from settings.

    ``client`` carries the per-request ``timeout`` and ``max_retries``; a call may ask
    for a shorter timeout (what is left of a budget).
    """

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        output_mode: OutputMode = OutputMode.AUTO,
        system_prompt: SystemPrompt = SystemPrompt.AUTO,
        max_tokens_parameter: str = "max_tokens",
        temperature: float | None = 0.0,
        stats: ProviderStats | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self._model = model
        self.configured_mode = output_mode
        self.mode: OutputMode = (
            OutputMode.JSON_SCHEMA if output_mode is OutputMode.AUTO else output_mode
        )
        """The mode calls use now (stepped down on refusal in ``auto``)."""
        self.mode_confirmed = output_mode is not OutputMode.AUTO
        self.system_prompt = system_prompt
        self.merge_system = system_prompt is SystemPrompt.MERGE
        self.max_tokens_parameter = max_tokens_parameter
        self.temperature = temperature
        self.stats = stats if stats is not None else ProviderStats(ENDPOINT_COUNTERS)
        self.observer: Callable[[Answer], None] | None = None
        """Told of every answer (a bench's per-call figures)."""
        self.shared: SharedMode | None = None
        """Where the mode found is kept for every process (``auto`` only; set by the
        application once it has Redis)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    @property
    def timeout_s(self) -> float:
        timeout = self.client.timeout
        return float(timeout) if isinstance(timeout, int | float) else 600.0

    def reported_context_tokens(self, timeout_s: float = 2.0) -> int | None:
        """The context window the server reports, where it reports one (llama.cpp's
        ``GET /props``: ``default_generation_settings.n_ctx``); None otherwise."""
        base = str(self.client.base_url).rstrip("/")
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        try:
            with urllib.request.urlopen(f"{root}/props", timeout=timeout_s) as response:
                props = json.loads(response.read(65_536))
        except (OSError, ValueError):
            return None
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = (settings or {}).get("n_ctx") if isinstance(settings, dict) else None
        if n_ctx is None and isinstance(props, dict):
            n_ctx = props.get("n_ctx")
        return int(n_ctx) if isinstance(n_ctx, int) and n_ctx > 0 else None

    def request_limits(self, remaining_s: float) -> tuple[float, int]:
        """Timeout and retries of one request with ``remaining_s`` left of a budget: the
        client's own, cut so that every attempt ends inside the budget."""
        timeout = min(self.timeout_s, remaining_s)
        attempts = max(1, int(remaining_s // timeout)) if timeout > 0 else 1
        return timeout, max(0, min(self.client.max_retries, attempts - 1))

    def complete(
        self,
        messages: Messages,
        *,
        schema_name: str,
        schema: dict[str, Any],
        max_output_tokens: int | None,
        bounded_schema: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        max_retries: int | None = None,
    ) -> Answer:
        """One answer, in the strongest output mode the endpoint accepts; ``messages``
        must not carry the schema (added here for the modes that need it).
        ``bounded_schema`` (with ``maxItems``/``maxLength``) replaces ``schema`` in the
        modes that take such keywords (all but strict ``json_schema``)."""
        while True:
            if not self.mode_confirmed:
                self._adopt_shared()
            mode = self.mode
            sent_schema = schema
            if mode is not OutputMode.JSON_SCHEMA and bounded_schema is not None:
                sent_schema = bounded_schema
            args = (messages, mode, schema_name, sent_schema, max_output_tokens)
            try:
                if self.mode_confirmed:
                    return self._call(*args, timeout_s, max_retries)
                # the probe: one request at a time (in the process, and across processes)
                # until a mode is found, so parallel calls do not all meet the same refusal
                if not self._probe_lock.acquire(timeout=-1 if timeout_s is None else timeout_s):
                    raise LLMUnavailableError("LLM endpoint busy with its first request")
                try:
                    if self.mode_confirmed or self.mode is not mode:
                        continue
                    if not self._claim_probe(timeout_s):
                        continue  # another process found it meanwhile (or gave up)
                    try:
                        return self._call(*args, timeout_s, max_retries)
                    finally:
                        if self.shared is not None:
                            self.shared.release_probe()
                finally:
                    self._probe_lock.release()
            except openai.OpenAIError as err:
                if (
                    self.configured_mode is OutputMode.AUTO
                    and mode in STEP_DOWN
                    and refuses_response_format(err)
                ):
                    self._step_down(mode, err)
                    continue
                raise self._converted(err) from err

    def _adopt_shared(self) -> None:
        """The mode another process found for this endpoint and model, if kept."""
        if self.shared is None or self.configured_mode is not OutputMode.AUTO:
            return
        found = self.shared.get()
        if found is None or found not in OutputMode._value2member_map_:
            return
        with self._lock:
            if self.mode_confirmed:
                return
            self.mode = OutputMode(found)
            self.mode_confirmed = True
        log.info("llm_output_mode_shared", mode=found)

    def _claim_probe(self, timeout_s: float | None) -> bool:
        """True when this process probes now; else it waited for another's finding (then
        adopted, if there was one)."""
        if self.shared is None or self.configured_mode is not OutputMode.AUTO:
            return True
        hold_s = self.timeout_s if timeout_s is None else timeout_s
        if self.shared.claim_probe(hold_s + 5):
            return True
        self.shared.await_finding(hold_s + 5)
        self._adopt_shared()
        return False

    def _call(
        self,
        messages: Messages,
        mode: OutputMode,
        schema_name: str,
        schema: dict[str, Any],
        max_output_tokens: int | None,
        timeout_s: float | None,
        max_retries: int | None,
    ) -> Answer:
        sent = list(messages)
        if mode in SCHEMA_IN_PROMPT:
            sent = _with_schema(sent, schema)
        if self.merge_system:
            sent = merged(sent)
        kwargs: dict[str, Any] = {"model": self.model, "messages": sent}
        if mode is OutputMode.JSON_SCHEMA:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": True, "schema": schema},
            }
        elif mode is OutputMode.JSON_OBJECT_SCHEMA:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif mode is OutputMode.JSON_OBJECT:
            kwargs["response_format"] = {"type": "json_object"}
        if max_output_tokens is not None:
            kwargs[self.max_tokens_parameter] = max_output_tokens
        if self.temperature is not None:  # None: reasoning models take only their default
            kwargs["temperature"] = self.temperature
        options: dict[str, Any] = {}
        if timeout_s is not None:
            options["timeout"] = timeout_s
        if max_retries is not None:
            options["max_retries"] = max_retries
        client = self.client.with_options(**options) if options else self.client
        if mode is OutputMode.JSON_SCHEMA:
            self.stats.add(strict_requests=1)
        started = self._clock()
        completion: ChatCompletion = client.chat.completions.create(**kwargs)
        seconds = self._clock() - started
        found = False
        with self._lock:
            if not self.mode_confirmed and self.mode is mode:
                self.mode_confirmed = found = True
        if found:
            log.info("llm_output_mode_found", mode=mode.value)
            if self.shared is not None and self.configured_mode is OutputMode.AUTO:
                self.shared.put(mode.value)
        usage = completion.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        self._check_system_read(sent, prompt_tokens)
        choice = completion.choices[0] if completion.choices else None
        answer = Answer(
            (choice.message.content or "") if choice else "",
            choice is not None and choice.finish_reason == "length",
            prompt_tokens,
            completion_tokens,
            seconds,
        )
        if self.observer is not None:
            self.observer(answer)
        return answer

    def _check_system_read(self, sent: Messages, prompt_tokens: int) -> None:
        """Merge the system prompt from now on when the server did not read it."""
        if self.system_prompt is not SystemPrompt.AUTO or self.merge_system or not prompt_tokens:
            return
        system_chars = sum(len(m["content"]) for m in sent if m["role"] == "system")
        total_chars = sum(len(m["content"]) for m in sent)
        if not system_chars or system_chars * 3 < total_chars:
            return  # too small a share to tell
        if prompt_tokens * DROPPED_SYSTEM_CHARS_PER_TOKEN >= total_chars:
            return
        with self._lock:
            if self.merge_system:
                return
            self.merge_system = True
        self.stats.add(system_prompt_dropped=1)
        log.warning(
            "llm_system_prompt_dropped",
            prompt_tokens=prompt_tokens,
            message_chars=total_chars,
            now="merged into the first user message",
        )

    def _step_down(self, refused: OutputMode, err: openai.OpenAIError) -> None:
        with self._lock:
            if self.mode is not refused:
                return  # another thread already did
            self.mode = STEP_DOWN[refused]
            # the next request probes (and shares what it finds): a mode kept in Redis
            # that the server refuses now (it changed) is forgotten
            self.mode_confirmed = False
        if self.shared is not None:
            self.shared.forget(refused.value)
        self.stats.add(mode_downgrades=1)
        log.warning(
            "llm_output_mode_refused",
            refused=refused.value,
            now=self.mode.value,
            status=getattr(err, "status_code", None),
            server_error=server_text(err),
        )

    def _converted(self, err: openai.OpenAIError) -> Exception:
        converted = convert_error(err, LLM_ERRORS)
        if isinstance(err, openai.APIStatusError) and refuses_response_format(err):
            converted = type(converted)(
                f"{converted} (it refused response_format {self.mode.value}: set "
                "TURNGRAPH_LLM_OUTPUT_MODE=auto or a weaker mode)"
            )
        return converted


def _with_schema(messages: Messages, schema: dict[str, Any]) -> Messages:
    instruction = (
        "Answer with one JSON object and nothing else (no code fence, no prose). "
        "It must match this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )
    out = [dict(m) for m in messages]
    for message in out:
        if message["role"] == "system":
            message["content"] = f"{message['content']}\n\n{instruction}"
            return out
    return [{"role": "system", "content": instruction}, *out]
