"""A real OpenAI-compatible HTTP server on loopback whose replies a test scripts.

Tests of anything that calls an LLM (summarizer, extractors) talk to it through the
real ``openai`` client, so retries, timeouts and broken answers are exercised on
the wire, not by mocking the client object.

Each ``POST /v1/chat/completions`` consumes the next scripted reply, in order:

=====================  ==================================================
``reply(text, …)``     200 with ``text`` and the given token usage
``error(500)``         an HTTP error status with an OpenAI-style error body
``stall(seconds)``     waits (so the client times out), then answers
``empty()``            200 with an empty assistant message
``malformed()``        200 whose body is not valid JSON
``cut(text, after)``   with ``stream=true``: ``after`` events, then hang up
``refuse(text)``       200 whose message has ``content: null`` and ``refusal``
``trickle(text, …)``   the answer in small pieces, one every ``every_s``
=====================  ==================================================

``reply(text, tool_calls=[...])`` answers with tool calls. A request with
``stream=true`` gets the answer as server-sent events, one chunk per word
(see :mod:`hmem.testing._llm_stream`), with a usage chunk when
``stream_options.include_usage`` asks for it.

``POST /v1/embeddings`` is not scripted: it answers every text with a deterministic
vector (:func:`fake_embedding`: the same text always gets the same vector, different
texts different ones, deliberately *not* unit length), as floats or, when the client asks
for ``encoding_format="base64"`` (the ``openai`` client does by default), as base64
float32. Input that is not a string or a list of strings gets a 400.

When the script runs out, ``respond_with(fn)`` decides (``fn(request) -> ScriptedReply``);
without it the server answers 500 "no scripted reply left", so a test that makes
more calls than it scripted fails loudly. Every request is recorded.

Example::

    >>> from hmem.providers.llm import OpenAICompatibleLLM
    >>> from hmem.types import Message
    >>> with ScriptedLLMServer() as server:
    ...     _ = server.error(500).reply("Paris", prompt_tokens=12, completion_tokens=1)
    ...     llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="test",
    ...                               model="test-model", backoff_s=0.0)
    ...     answer = llm.complete([Message(role="user", content="Capital of France?")])
    ...     (answer.text, answer.usage.total_tokens, len(server.requests))
    ('Paris', 13, 2)
    >>> server.requests[-1].body["messages"][0]["content"]
    'Capital of France?'
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from hmem.errors import ConfigError
from hmem.testing._llm_stream import message_body, stream_events

__all__ = ["RecordedRequest", "ScriptedLLMServer", "ScriptedReply", "fake_embedding"]

ReplyKind = Literal["text", "error", "empty", "malformed", "refusal"]


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One scripted answer. Build them with the server's helper methods."""

    kind: ReplyKind = "text"
    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int | None = None  # None: one per whitespace-separated word
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    cut_after: int | None = None  # streamed: close after this many events (no finish, no [DONE])
    trickle_s: float = 0.0  # > 0: the body goes out in ``pieces`` parts, this long before each
    pieces: int = 1


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request the server received: ``headers`` with lower-case names,
    ``body`` the parsed JSON (None if absent or not JSON)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float = field(default_factory=time.monotonic)


Responder = Callable[[RecordedRequest], ScriptedReply]


def fake_embedding(text: str, dimension: int) -> list[float]:
    """The vector :class:`ScriptedLLMServer` returns for ``text``: derived from its
    sha256, no component zero, length between 1 and 5 times a unit vector's.

    Example::

        >>> v = fake_embedding("hello", 4)
        >>> len(v), v == fake_embedding("hello", 4), v == fake_embedding("hello!", 4)
        (4, True, False)
    """
    raw = b""
    counter = 0
    while len(raw) < dimension:
        raw += hashlib.sha256(f"{counter}:{text}".encode("utf-8", "surrogatepass")).digest()
        counter += 1
    scale = 1.0 + raw[0] % 5  # not unit length: a client that promises unit vectors must normalise
    return [scale * (b - 127.5) / 127.5 for b in raw[:dimension]]


class ScriptedLLMServer:
    """An OpenAI-compatible chat-completions server on ``127.0.0.1`` and a free port.

    Use it as a context manager (or call :meth:`start` / :meth:`close`).
    ``base_url`` (``http://127.0.0.1:<port>/v1``) goes to the ``openai`` client.
    Script methods return the server, so they chain.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, embedding_dimension: int = 16) -> None:
        if isinstance(embedding_dimension, bool) or not isinstance(embedding_dimension, int) or embedding_dimension < 1:
            raise ConfigError(f"embedding_dimension must be an int >= 1, got {embedding_dimension!r}")
        self.embedding_dimension = embedding_dimension
        self._host = host
        self._port = port
        self._script: deque[ScriptedReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._responder: Responder | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            return self
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer((self._host, self._port), handler)
        self._httpd.daemon_threads = True  # a stalled reply must not keep the process alive
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-llm-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes stalled handlers so shutdown is quick
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ScriptedLLMServer is not started: use it in a `with` block or call start()")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to pass as the ``openai`` client's ``base_url``."""
        return f"http://{self._host}:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------

    def push(self, *replies: ScriptedReply) -> ScriptedLLMServer:
        with self._lock:
            self._script.extend(replies)
        return self

    def reply(
        self,
        text: str,
        *,
        prompt_tokens: int = 10,
        completion_tokens: int | None = None,
        delay_s: float = 0.0,
        tool_calls: Sequence[Mapping[str, Any]] = (),
    ) -> ScriptedLLMServer:
        """A normal answer with ``text``, the given usage and optional ``tool_calls``
        (``{"id", "function": {"name", "arguments"}}`` each)."""
        return self.push(ScriptedReply("text", text, 200, delay_s, prompt_tokens=prompt_tokens,
                                       completion_tokens=completion_tokens, tool_calls=tuple(tool_calls)))

    def cut(self, text: str, after: int = 2) -> ScriptedLLMServer:
        """A streamed answer that stops after ``after`` events, as if the upstream died."""
        return self.push(ScriptedReply("text", text, 200, cut_after=after))

    def refuse(self, text: str = "I can't help with that.") -> ScriptedLLMServer:
        """A 200 answer that is a refusal: ``content`` null and ``refusal`` set (streamed:
        ``refusal`` deltas), as OpenAI's models answer what they decline."""
        return self.push(ScriptedReply("refusal", text))

    def trickle(self, text: str, *, every_s: float = 0.25, pieces: int = 20) -> ScriptedLLMServer:
        """A normal answer (JSON, or the event stream with ``stream=true``) sent in ``pieces``
        parts cut at arbitrary bytes, one every ``every_s``: never silent long enough for a
        per-read timeout, yet slow as a whole."""
        if pieces < 1 or every_s < 0:
            raise ConfigError(f"trickle needs pieces >= 1 and every_s >= 0, got {pieces}, {every_s}")
        return self.push(ScriptedReply("text", text, 200, trickle_s=every_s, pieces=pieces))

    def error(self, status: int = 500, message: str = "scripted failure") -> ScriptedLLMServer:
        """An HTTP error (500, 429, 401 …) with an OpenAI-style error body."""
        return self.push(ScriptedReply("error", message, status))

    def stall(self, seconds: float = 30.0, text: str = "too late") -> ScriptedLLMServer:
        """Wait ``seconds`` before answering, so a client with a shorter timeout gives up."""
        return self.push(ScriptedReply("text", text, 200, seconds))

    def empty(self) -> ScriptedLLMServer:
        """A 200 answer whose assistant message is empty."""
        return self.push(ScriptedReply("empty"))

    def malformed(self) -> ScriptedLLMServer:
        """A 200 answer whose body is truncated, invalid JSON."""
        return self.push(ScriptedReply("malformed"))

    def respond_with(self, responder: Responder | None) -> ScriptedLLMServer:
        """Decide replies with ``responder(request)`` once the script is used up."""
        self._responder = responder
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/embeddings")]

    # -- serving (called from handler threads) --------------------------------------------

    def _next_reply(self, request: RecordedRequest) -> ScriptedReply:
        with self._lock:
            self._requests.append(request)
            if self._script:
                return self._script.popleft()
        if self._responder is not None:
            return self._responder(request)
        return ScriptedReply("error", "ScriptedLLMServer: no scripted reply left", 500)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _wait(self, seconds: float) -> None:
        self._closing.wait(seconds)


def _completion_body(reply: ScriptedReply, model: str, n: int) -> dict[str, Any]:
    text = "" if reply.kind == "empty" else reply.text
    message, finish = message_body(text, reply.tool_calls, refusal=reply.kind == "refusal")
    return {
        "id": f"chatcmpl-scripted-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply, text),
    }


def _usage(reply: ScriptedReply, text: str) -> dict[str, int]:
    completion = reply.completion_tokens if reply.completion_tokens is not None else len(text.split())
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": completion,
            "total_tokens": reply.prompt_tokens + completion}


def _embedding_body(body: Any, dimension: int) -> dict[str, Any] | None:
    """The ``/v1/embeddings`` answer, or None when the input is not text."""
    texts = body.get("input") if isinstance(body, dict) else None
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return None
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for i, text in enumerate(texts):
        vector = fake_embedding(text, dimension)
        encoded: Any = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    tokens = sum(max(1, len(t.split())) for t in texts)
    return {"object": "list", "data": data, "model": str(body.get("model", "scripted")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    return {key.lower(): value for key, value in handler.headers.items()}


def _make_handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "ScriptedLLM/1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def _send(self, status: int, payload: bytes, content_type: str = "application/json",
                  reply: ScriptedReply | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self._write(payload, reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): nothing to deliver

        def _write(self, payload: bytes, reply: ScriptedReply | None) -> None:
            """``payload`` at once, or trickled as ``reply`` says."""
            if reply is None or reply.trickle_s <= 0:
                self.wfile.write(payload)
                return
            size = -(-len(payload) // reply.pieces)
            for start in range(0, len(payload), size):
                server._wait(reply.trickle_s)
                self.wfile.write(payload[start:start + size])
                self.wfile.flush()

        def _stream(self, reply: ScriptedReply, model: str, options: Any) -> None:
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            events = stream_events(reply.text, reply.tool_calls, model, f"chatcmpl-scripted-{len(server.requests)}",
                                   reply.cut_after, include_usage=include_usage, usage=_usage(reply, reply.text),
                                   refusal=reply.kind == "refusal")
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")  # no length: the end of the stream is the close
                self.end_headers()
                if reply.trickle_s > 0:
                    self._write("".join(f"{event}\n\n" for event in events).encode(), reply)
                else:
                    for event in events:
                        self.wfile.write(f"{event}\n\n".encode())
                        self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _send_json(self, status: int, obj: object) -> None:
            self._send(status, json.dumps(obj).encode())

        def do_GET(self) -> None:
            server._record(RecordedRequest("GET", self.path, _headers(self), None))
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = None
            request = RecordedRequest("POST", self.path, _headers(self), body)
            if self.path.rstrip("/").endswith("/embeddings"):
                server._record(request)
                answer = _embedding_body(body, server.embedding_dimension)
                if answer is None:
                    self._send_json(400, {"error": {"message": "input must be a string or a list of strings",
                                                    "type": "invalid_request_error"}})
                else:
                    self._send_json(200, answer)
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                server._record(request)
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                server._record(request)
                self._send_json(400, {"error": {"message": "body must be JSON with messages", "type": "invalid"}})
                return
            reply = server._next_reply(request)
            if reply.delay_s:
                server._wait(reply.delay_s)
            if reply.kind == "error":
                error = {"error": {"message": reply.text, "type": "server_error", "code": reply.status}}
                self._send_json(reply.status, error)
            elif reply.kind == "malformed":
                self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "cut')
            elif body.get("stream") is True:
                self._stream(reply, str(body.get("model", "scripted")), body.get("stream_options"))
            else:
                n = len(server.requests)
                answer = _completion_body(reply, str(body.get("model", "scripted")), n)
                self._send(200, json.dumps(answer).encode(), reply=reply)

    return Handler
