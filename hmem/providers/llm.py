"""OpenAI-compatible chat LLM (OpenAI, vLLM, Ollama, DeepSeek, Qwen, … any ``/v1`` endpoint).

The ``openai`` package is imported on first use, never at import of hmem. The
client's own retries are switched off: this class makes up to ``max_attempts``
attempts with exponential backoff on transient failures only (timeouts, connection
errors, HTTP 429 and 5xx) and raises :class:`hmem.errors.LLMError` at once on the
rest: any other 4xx, and an answer that is empty, malformed or, in JSON mode, not
JSON (the same request would get the same kind of answer, and every attempt is billed).
Token usage of every call is recorded (``calls``) and summed (``usage_total``).

Example::

    >>> from hmem.testing.llm_server import ScriptedLLMServer
    >>> from hmem.types import Message
    >>> with ScriptedLLMServer() as server:
    ...     _ = server.reply("Hi!", prompt_tokens=9, completion_tokens=2)
    ...     llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="k", model="m")
    ...     llm.complete([Message(role="user", content="hello")]).text
    'Hi!'
    >>> llm.usage_total.total_tokens, len(llm.calls)
    (11, 1)
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hmem._secrets import mask_url, redact
from hmem.errors import ConfigError, LLMError
from hmem.protocols import LLMReply
from hmem.providers._endpoint import client_options, endpoint_secrets, mask_client_logs
from hmem.types import Message, Usage

__all__ = ["LLMCall", "OpenAICompatibleLLM"]

log = logging.getLogger(__name__)

#: With 5xx, the only statuses another attempt may fix (Too Many Requests); any other 4xx is final.
_RETRYABLE_STATUS = frozenset({429})


@dataclass(frozen=True, slots=True)
class LLMCall:
    """The record of one ``complete()`` call (all of its attempts)."""

    model: str
    usage: Usage
    attempts: int
    latency_s: float
    ok: bool
    error: str | None = None


class _AttemptFailed(Exception):
    """An attempt failed (``usage``: what it still billed)."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class _Retryable(_AttemptFailed):
    """An attempt failed in a way another attempt may fix."""


class _Unusable(_AttemptFailed):
    """An answer came back but cannot be used (empty, malformed, not JSON): not retried."""


class OpenAICompatibleLLM:
    """An :class:`hmem.protocols.LLM` over any OpenAI-compatible endpoint.

    ``base_url`` None means the OpenAI default; ``api_key`` None is sent as a
    placeholder (local servers such as Ollama or vLLM ignore it); a query in
    ``base_url`` (``?api_key=…``) goes with every request. ``client`` may be a
    pre-built ``openai.OpenAI`` (for custom HTTP settings); otherwise one is built on
    first use with ``timeout`` and the SDK's retries off. Errors, warnings and the
    ``repr`` name the endpoint without its secrets.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = 60.0,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        client: Any = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("LLM model name is empty: set HMEM_LLM_MODEL (e.g. gpt-4o-mini, qwen2.5:7b)")
        if not (timeout > 0):
            raise ConfigError(f"LLM timeout must be > 0 seconds, got {timeout!r}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ConfigError(f"LLM max_attempts must be an int >= 1, got {max_attempts!r}")
        if not (backoff_s >= 0):
            raise ConfigError(f"LLM backoff_s must be >= 0, got {backoff_s!r}")
        self.base_url = base_url
        self.model = model
        self.timeout = float(timeout)
        self.max_attempts = max_attempts
        self.backoff_s = float(backoff_s)
        self._api_key = api_key
        self._secrets = endpoint_secrets(base_url, api_key)  # never in an error or a log line
        self._client = client
        self._lock = threading.Lock()
        self._calls: list[LLMCall] = []

    def __repr__(self) -> str:  # never show the key
        shown = mask_url(self.base_url) if self.base_url else None  # nor a password in the URL
        return f"OpenAICompatibleLLM(base_url={shown!r}, model={self.model!r})"

    # -- usage -------------------------------------------------------------------------

    @property
    def calls(self) -> list[LLMCall]:
        """Every call made so far, oldest first (a copy)."""
        with self._lock:
            return list(self._calls)

    @property
    def usage_total(self) -> Usage:
        """Tokens used by every call so far (failed attempts that reported usage included)."""
        with self._lock:
            total = Usage()
            for call in self._calls:
                total = total + call.usage
            return total

    # -- the port ----------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> LLMReply:
        """One chat completion; retried on transient failures only, else :class:`LLMError`."""
        use_model = model or self.model
        payload: dict[str, Any] = {
            "model": use_model,
            "messages": [m.to_openai() for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if json_mode:
            payload["response_format"] = {"type": "json_object"}
        client = self._get_client()
        started = time.monotonic()
        usage = Usage()
        last_error = "no attempt made"
        for attempt in range(1, self.max_attempts + 1):
            try:
                reply = self._attempt(client, payload, json_mode)
            except _Retryable as exc:
                last_error = str(exc)
                log.warning("LLM attempt %d/%d to %s failed: %s", attempt, self.max_attempts, use_model, exc)
                usage = usage + exc.usage
                if attempt < self.max_attempts and self.backoff_s:
                    time.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            except LLMError as exc:
                self._record(LLMCall(use_model, usage, attempt, time.monotonic() - started, False, str(exc)))
                raise
            except _Unusable as exc:
                usage = usage + exc.usage
                self._record(LLMCall(use_model, usage, attempt, time.monotonic() - started, False, str(exc)))
                raise LLMError(
                    f"LLM {use_model!r} gave an answer hmem cannot use ({exc}); not retried, as the same request "
                    "gets the same kind of answer. Use a model that answers in the OpenAI chat-completions format "
                    "(and supports JSON mode, for extraction)."
                ) from None
            usage = usage + reply.usage
            self._record(LLMCall(use_model, usage, attempt, time.monotonic() - started, True))
            return LLMReply(text=reply.text, model=reply.model, usage=reply.usage)
        self._record(LLMCall(use_model, usage, self.max_attempts, time.monotonic() - started, False, last_error))
        where = mask_url(self.base_url) if self.base_url else "the OpenAI API"
        raise LLMError(
            f"LLM {use_model!r} at {where} failed after {self.max_attempts} "
            f"attempt(s): {last_error}. Check that the server is up and the model name is right; "
            "hmem falls back to offline summaries when no LLM is configured."
        )

    # -- internals ---------------------------------------------------------------------

    def _record(self, call: LLMCall) -> None:
        with self._lock:
            self._calls.append(call)

    def _get_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    try:
                        import openai
                    except ImportError as exc:
                        raise ConfigError(
                            "the OpenAI-compatible LLM needs the openai package: pip install 'hmem[llm]'"
                        ) from exc
                    mask_client_logs()
                    self._client = openai.OpenAI(
                        **client_options(self.base_url),
                        api_key=self._api_key or "not-needed",
                        timeout=self.timeout,
                        max_retries=0,  # we retry ourselves, with our own accounting
                    )
        return self._client

    def _redact(self, text: object) -> str:
        return redact(text, self._secrets)

    def _attempt(self, client: Any, payload: dict[str, Any], json_mode: bool) -> LLMReply:
        import openai

        try:
            response = client.chat.completions.create(**payload)
        # The server's words (and the client's) may echo the key or the URL: redacted, and
        # the LLMError chains no cause whose traceback would show them.
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise _Retryable(self._redact(f"{type(exc).__name__}: {exc}")) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in _RETRYABLE_STATUS:
                raise _Retryable(f"HTTP {exc.status_code}: {self._redact(exc.message)}") from exc
            raise LLMError(
                f"LLM request rejected with HTTP {exc.status_code}: {self._redact(exc.message)}. "
                "Check HMEM_LLM_API_KEY, HMEM_LLM_BASE_URL and the model name."
            ) from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            # A 200 with a body that is not the chat-completion JSON (broken proxy, truncated body).
            raise _Unusable(f"malformed response: {self._redact(exc)}") from None
        usage = _usage_of(response)
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise _Unusable("malformed response: no choices[0].message", usage) from exc
        if not isinstance(text, str) or not text.strip():
            raise _Unusable("empty answer", usage)
        if json_mode:
            try:
                json.loads(text)
            except ValueError:
                raise _Unusable("json_mode answer is not valid JSON", usage) from None
        return LLMReply(text=text, model=str(getattr(response, "model", "") or payload["model"]), usage=usage)


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    return Usage(int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
