"""The Messages API through the ``anthropic`` SDK: streaming, retries, cancellation.

The SDK sends each request (auth, headers, timeouts, an HTTP error as its ``APIStatusError``); the body is
encoded here (``request_body``) and the streamed reply read from its raw events (``sidecar.model.stream``),
not through the SDK's ``messages.stream`` (docs/performance.md, issue 29, "Fourth pass").

The SDK's own retries are off (``max_retries=0``): a stream can fail after it started, which the SDK
does not retry, so one policy here covers both cases — 429 (honouring ``retry-after``), 529, 5xx, SSE
``overloaded_error`` events and dropped connections, with exponential backoff. A retried request only
repeats the model call; tools run after a complete message, so none runs twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sys
import threading
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sidecar.model import capabilities
from sidecar.model.capabilities import ModelCapabilities
from sidecar.model.credentials import Credentials, missing_key_message, refused_key_message, resolve
from sidecar.model.settings import ModelSettings
from sidecar.model.stream import BlockSink, MessageBuilder, TextSink
from sidecar.secrets import redact
from sidecar.session import ServiceKey

if TYPE_CHECKING:
    import anthropic
    from pydantic import BaseModel

log = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
MAX_RETRY_AFTER_S = 120.0
RETRYABLE_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error"}


class ModelError(Exception):
    """The model could not be reached or refused the request; the message is safe to show.

    ``status`` is the HTTP status (None when no answer came), ``error_type`` the provider's error type
    (``overloaded_error``, ``authentication_error``, …) or the connection failure's kind
    (``connection_error``, ``timeout``; ``auth_missing`` when no key was there to send), ``detail`` the
    provider's own message, ``key_source`` where a refused key came from (``sidecar.model.credentials``).
    """

    def __init__(self, message: str, *, status: int | None = None, error_type: str | None = None,
                 detail: str = "", attempts: int = 1, key_source: str | None = None) -> None:
        super().__init__(message)
        self.key_source = key_source
        self.status = status
        self.error_type = error_type
        self.detail = detail
        self.attempts = attempts


@dataclass
class RetryInfo:
    """A failed attempt about to be retried (``_sidecar/model_retry``, docs/protocol.md)."""

    attempt: int  # the attempt that failed, 1-based
    max_attempts: int
    delay_s: float
    status: int | None
    error_type: str
    detail: str

    def message(self) -> str:
        what = f"HTTP {self.status} {self.error_type}" if self.status else self.error_type.replace("_", " ")
        return (f"The model API failed ({what}{': ' + self.detail if self.detail else ''}); "
                f"retrying {_wait_text(self.delay_s)} (attempt {self.attempt + 1} of {self.max_attempts})")


def _wait_text(delay_s: float) -> str:
    """"in 3 s", "in 0.4 s" (a sub-second wait said as it is, never "in 0 s"), "now"."""
    if delay_s < 0.05:
        return "now"
    if delay_s < 9.95:
        return f"in {delay_s:.1f} s".replace(".0 s", " s")
    return f"in {delay_s:.0f} s"


@dataclass
class StreamCallbacks:
    on_text: TextSink | None = None
    on_thinking: TextSink | None = None
    # A content block finished (tool_use blocks are announced to the editor from here).
    on_block: BlockSink | None = None
    # A content block began (for a tool_use block: the tool's name is known, its input still streams).
    on_block_start: BlockSink | None = None
    # A failed attempt will be retried after ``delay_s`` (the editor shows it while it waits).
    on_retry: Callable[[RetryInfo], Awaitable[None]] | None = None


class _ShownOnce:
    """A text sink across a call's attempts: each attempt's deltas are passed on only beyond what an
    earlier attempt already passed on (its replay of the same start is not shown twice)."""

    def __init__(self, sink: TextSink | None) -> None:
        self.sink = sink
        self.shown = 0  # characters passed on, across attempts
        self.attempt = 0  # characters of this attempt so far

    def new_attempt(self) -> None:
        self.attempt = 0

    async def add(self, delta: str) -> None:
        start = self.attempt
        self.attempt += len(delta)
        if self.attempt > self.shown and self.sink is not None:
            await self.sink(delta[max(0, self.shown - start):])
            self.shown = self.attempt


@dataclass
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1


def make_client(settings: ModelSettings, credentials: Credentials | None = None) -> anthropic.AsyncAnthropic:
    import anthropic  # heavy (seconds): imported on first use, not at startup
    # A long answer may take minutes; a connection that cannot be made is known in seconds.
    kwargs: dict[str, Any] = {"max_retries": 0, "timeout": anthropic.Timeout(600.0, connect=10.0)}
    # Passed explicitly: ``capture_secrets`` took them out of the environment the SDK would read, and a
    # keychain key (``sidecar login``) was never in it.
    creds = credentials or resolve()
    api_key, auth_token = creds.api_key, creds.auth_token
    if api_key:
        kwargs["api_key"] = api_key
    if auth_token:
        kwargs["auth_token"] = auth_token
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
        if not (api_key or auth_token):
            kwargs["api_key"] = "unused"  # a local endpoint that wants no key; the SDK insists on one
    return anthropic.AsyncAnthropic(**kwargs)


def warm_up(client: ModelClient) -> None:
    """Create the HTTP client (its TLS context loads the CA store) and look up the default model's
    capabilities (``prefetch_capabilities``): the warm-up thread's last step, after its imports, so the
    first prompt costs what the tenth does."""
    client.client  # noqa: B018  # created here, not on the first request
    prefetch_capabilities(client.settings)


def reply_types() -> list[type[BaseModel]]:
    """The SDK's pydantic types its ``MessageStream`` builds or dumps for a streamed reply: the message,
    its usage, every kind of content block and the stream's events. ``ModelClient.stream`` reads the raw
    events (``sidecar.model.stream``), so a turn builds none of them and the warm-up no longer does
    (~20 ms of its CPU, ~1.5 MB of idle memory); the warm-up's test checks that a turn still builds none."""
    from anthropic.lib.streaming import ParsedMessageStreamEvent
    from anthropic.types import ContentBlock, Message, ParsedContentBlock, ParsedMessage, Usage
    from pydantic import BaseModel

    found: dict[type[BaseModel], None] = {}

    def walk(tp: Any) -> None:  # a class, or a Union / Annotated / generic alias of them
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            found[tp] = None
        elif isinstance(origin, type) and issubclass(origin, BaseModel):
            found[origin] = None
        else:
            for arg in typing.get_args(tp):
                walk(arg)

    for tp in (Message, Usage, ParsedMessage, ContentBlock, ParsedContentBlock, ParsedMessageStreamEvent):
        walk(tp)
    return list(found)


def prefetch_capabilities(settings: ModelSettings) -> None:
    """The default model's Models API lookup, from the warm-up thread (its own event loop and client):
    the first prompt then finds the answer remembered instead of waiting a round trip (and the SDK's
    first error-type build, ~0.3 s here, when the endpoint has no Models API)."""
    creds = resolve()
    if not creds.present and not settings.base_url:
        return  # nothing to ask with: the first prompt says how to set a key (``check_credentials``)

    async def lookup() -> None:
        sdk = make_client(settings, creds)
        try:
            await capabilities.fetch(sdk, settings.model, settings.endpoint)
        finally:
            await sdk.close()

    asyncio.run(lookup())


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _retryable(exc: BaseException) -> tuple[bool, float | None]:
    import anthropic

    # httpx (the web tools' client; its import pulls in its CLI, ~7 MB) is not imported for this: when no
    # tool has imported it, no httpx error can have been raised.
    httpx = sys.modules.get("httpx")
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err_type = (body.get("error") or {}).get("type") if isinstance(body.get("error"), dict) else None
        if exc.status_code in RETRYABLE_STATUS or err_type in RETRYABLE_ERROR_TYPES:
            return True, _retry_after(exc)
        return False, None
    if isinstance(exc, (anthropic.APIConnectionError, anthropic.APITimeoutError)) or (
            httpx is not None and isinstance(exc, httpx.TransportError)):
        return True, None
    # The SDK's own HTTP stack (httpx2/httpcore) raises its transport errors mid-stream unwrapped.
    if type(exc).__module__.split(".")[0] in ("httpx2", "httpcore", "h11") or isinstance(exc, ConnectionError):
        return True, None
    return False, None


def _failure(exc: BaseException) -> tuple[int | None, str, str]:
    """(HTTP status or None, the provider's error type or the failure's kind, the provider's message)."""
    import anthropic
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        error_type = str(error.get("type") or "api_error") if isinstance(error, dict) else "api_error"
        detail = str(error.get("message") or "") if isinstance(error, dict) else ""
        return exc.status_code, error_type, redact(detail or str(exc.message))
    if isinstance(exc, anthropic.APITimeoutError) or "timeout" in type(exc).__name__.lower():
        return None, "timeout", "no answer in time"
    if not _retryable(exc)[0]:  # not a transport failure: a fault of ours, named as such
        return None, "client_error", redact(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, anthropic.APIConnectionError) and exc.__cause__ is not None:
        exc = exc.__cause__
    detail = str(exc) or type(exc).__name__
    return None, "connection_error", redact(detail)


def _what_to_check(status: int | None, error_type: str, base_url: str | None) -> str:
    endpoint = base_url or "https://api.anthropic.com"
    if status in (401, 403) or error_type in ("authentication_error", "permission_error"):
        return "Check the API key (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN) and its permissions."
    if status == 404 or error_type == "not_found_error":
        return f"Check the model name (sidecar.model) and the base URL ({endpoint})."
    if status == 400 or error_type == "invalid_request_error":
        return "The request was refused as invalid; the message above says why."
    if status == 429 or error_type == "rate_limit_error":
        return "The rate limit was reached; wait a little and retry."
    if status is None:
        return (f"Check the network and that {endpoint} is reachable "
                "(ANTHROPIC_BASE_URL or sidecar.apiBaseUrl set to the right endpoint, a proxy if you need one).")
    return f"The provider at {endpoint} is failing; retry later, or check its status page."


def model_error(exc: BaseException, attempts: int, base_url: str | None, key_source: str | None = None) -> ModelError:
    """The final failure as one readable message: what happened, after how many attempts, what to check.
    A refused key (401, ``authentication_error``) names the endpoint and which key it refused."""
    status, error_type, detail = _failure(exc)
    if status == 401 or error_type == "authentication_error":
        endpoint = base_url or "https://api.anthropic.com"
        return ModelError(refused_key_message(endpoint, key_source, status, detail), status=status,
                          error_type="authentication_error", detail=detail, attempts=attempts, key_source=key_source)
    if status is not None:
        head = f"The model API answered HTTP {status} ({error_type}): {detail}"
    elif error_type == "client_error":
        return ModelError(f"The model request could not be sent: {detail}", error_type=error_type, detail=detail)
    elif error_type == "timeout":
        head = f"The model API at {base_url or 'https://api.anthropic.com'} did not answer in time"
    else:
        head = f"The model API at {base_url or 'https://api.anthropic.com'} is unreachable ({detail})"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    message = f"{head.rstrip('.')}{tries}. {_what_to_check(status, error_type, base_url)}"
    return ModelError(message, status=status, error_type=error_type, detail=detail, attempts=attempts)


def _describe(exc: BaseException) -> str:
    status, error_type, detail = _failure(exc)
    return f"HTTP {status} {error_type}: {detail}" if status else f"{error_type}: {detail}"


MESSAGES_PATH = "/v1/messages"
# The body's keys in the order ``messages.create`` sends them (the same bytes as the SDK would send); any other
# key follows. ``extra_*`` and ``timeout`` are the SDK's request options, not body keys.
BODY_ORDER = ("max_tokens", "messages", "model", "cache_control", "container", "diagnostics", "inference_geo",
              "metadata", "output_config", "service_tier", "speed", "stop_sequences", "stream", "system", "thinking",
              "tool_choice", "tools")
JSON_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


STREAM_HELPER_HEADER = "x-stainless-helper-method"  # anthropic.lib._stainless_helpers, not exported


class EncodedParts:
    """The JSON of a conversation's messages (and of its fixed tool list), kept between requests by
    identity: a step's request re-encoded the whole history (1 ms a step in a 20-step turn, growing with
    the session), of which only the newest messages are new. A message is never changed once it is in
    the history (a changed one is a new dict: the request's last message, with its cache breakpoint, is a
    copy); the two newest are encoded afresh all the same. ``request_body`` joins the pieces exactly as
    ``JSON_ENCODER`` would write the whole (tests/model/test_stream.py compares them)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[object, str]] = {}

    def messages(self, messages: list[dict[str, Any]]) -> list[str]:
        """Each message's JSON; what left the history (compaction, rewind) is forgotten."""
        recent = len(messages) - 2
        memo: dict[int, tuple[object, str]] = {}
        out: list[str] = []
        for i, message in enumerate(messages):
            known = self._memo.get(id(message))
            text = known[1] if known is not None and known[0] is message and i < recent \
                else JSON_ENCODER.encode(message)
            memo[id(message)] = (message, text)
            out.append(text)
        tools = self._memo.get(_TOOLS)
        if tools is not None:
            memo[_TOOLS] = tools
        self._memo = memo
        return out

    def tools(self, tools: list[dict[str, Any]]) -> str:
        """The tool list's JSON: the same list object (an agent's, fixed for its life) is looked up once,
        each of its definitions in the process's ``definition_json``."""
        known = self._memo.get(_TOOLS)
        if known is not None and known[0] is tools:
            return known[1]
        text = "[" + ",".join(map(definition_json, tools)) + "]"
        self._memo[_TOOLS] = (tools, text)
        return text


_TOOLS = -1  # ``EncodedParts``' key of the tool list (no object has a negative id)

_Scalar = str | int | float | bool | None
# A tool definition's JSON by its scalar values and the identity of its other values, with those objects:
# kept alive by the entry, no other object can take their id while it is here, so an equal key is the
# same definition.
_DEFINITION_JSON: dict[tuple[tuple[str, type, object], ...], tuple[tuple[object, ...], str]] = {}
_DEFINITION_JSON_MAX = 256


def definition_json(definition: dict[str, Any]) -> str:
    """One tool definition's JSON, kept for the process. Every prompt's agent (one per prompt, in every
    session) builds its tool list afresh from the same parts: the same name and description strings and
    the same cached schema objects (``Tool.api_definition``), which are never changed; the whole list was
    encoded again each time (~0.6 ms, 22 tools, 40 KB). A definition made of new objects (an MCP tool's
    schema, copied per call) is simply a new entry; the table is emptied when full."""
    # The type too: ``True == 1 == 1.0`` as keys, not as JSON.
    key = tuple((k, type(v), v if isinstance(v, _Scalar) else id(v)) for k, v in definition.items())
    found = _DEFINITION_JSON.get(key)
    if found is not None:
        return found[1]
    text = JSON_ENCODER.encode(definition)
    if len(_DEFINITION_JSON) >= _DEFINITION_JSON_MAX:
        _DEFINITION_JSON.clear()
    _DEFINITION_JSON[key] = (tuple(v for v in definition.values() if not isinstance(v, _Scalar)), text)
    return text


def request_body(params: dict[str, Any], parts: EncodedParts | None = None) -> tuple[bytes, dict[str, str]]:
    """A streamed Messages request's JSON body and its extra headers, from ``messages.create``'s keyword
    arguments. Encoded here, as the SDK's encoder does, because the SDK's ``messages.create`` first copies
    the whole of its params (``copy_tree``: every dict and list of the history, the tools' schemas) to
    prepare values they never hold here (files, models, dates): ~10 % of the event loop's profiled CPU in
    the 50-session burst (docs/performance.md, issue 29, "Fourth pass"). Values are plain JSON, as the
    loop builds them."""
    rest = dict(params)
    # What the SDK's ``messages.stream`` sends besides the body (its helper telemetry), then the caller's.
    headers = {STREAM_HELPER_HEADER: "stream",
               **{str(k): str(v) for k, v in (rest.pop("extra_headers", None) or {}).items()}}
    unsupported = [k for k in ("extra_query", "extra_body", "timeout") if k in rest]
    if unsupported:
        raise TypeError(f"request option(s) {unsupported} are not supported by ModelClient.stream")
    rest["stream"] = True
    body = {k: rest.pop(k) for k in BODY_ORDER if k in rest}
    body.update(rest)
    if parts is None:
        return JSON_ENCODER.encode(body).encode(), headers
    # The same text as encoding ``body`` whole: "{", then '"key":value' joined by ",", then "}".
    pieces = []
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            text = "[" + ",".join(parts.messages(value)) + "]"
        elif key == "tools" and isinstance(value, list):
            text = parts.tools(value)
        else:
            text = JSON_ENCODER.encode(value)
        pieces.append(JSON_ENCODER.encode(key) + ":" + text)
    return ("{" + ",".join(pieces) + "}").encode(), headers


class ModelClient:
    def __init__(self, settings: ModelSettings, *, shared: ModelClient | None = None) -> None:
        self.settings = settings
        self._client: anthropic.AsyncAnthropic | None = None
        self._credentials = Credentials()  # what ``_client`` was made with
        self._lock = threading.Lock()
        # The server-wide client whose connections this one uses (see ``for_session``).
        self._shared = shared

    def for_session(self) -> ModelClient:
        """A client with its own copy of the settings, sharing this one's HTTP connections: a session
        that changes its model (``/model``, the Config tool) changes no other session's."""
        return ModelClient(replace(self.settings), shared=self._shared or self)

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        if self._shared is not None:
            return self._shared.client
        with self._lock:  # the warm-up thread may be creating it
            if self._client is None:
                self._credentials = resolve()
                self._client = make_client(self.settings, self._credentials)
            return self._client

    def check_credentials(self) -> Credentials:
        """The credentials requests go out with; a ``ModelError`` (``auth_missing``) when there are none and
        no custom endpoint (``ANTHROPIC_BASE_URL``, which may want no key). A key saved with ``sidecar
        login`` after the client was made is picked up here (the client is made again with it)."""
        root = self._shared or self
        root.client  # noqa: B018  # made (and its credentials resolved) if it was not yet
        if root._credentials.present or self.settings.base_url:
            return root._credentials
        fresh = resolve()
        if not fresh.present:
            raise ModelError(missing_key_message(self.settings.endpoint), error_type="auth_missing")
        with root._lock:
            root._client, root._credentials = make_client(root.settings, fresh), fresh
        return fresh

    async def ensure_capabilities(self, model: str | None = None) -> ModelCapabilities:
        """The model's capabilities from the Models API (asked once per endpoint and model), else the table."""
        return await capabilities.fetch(self.client, model or self.settings.model, self.settings.endpoint)

    async def stream(self, params: dict[str, Any], callbacks: StreamCallbacks | None = None,
                     parts: EncodedParts | None = None) -> ModelReply:
        """One model call, streamed, retried as a whole on transient failure. ``parts``: the caller's
        conversation's JSON kept between its requests.

        Text and thinking already shown to the user from a failed attempt are not shown twice: the next
        attempt's are passed on only beyond what was already sent.
        """
        cb = callbacks or StreamCallbacks()
        key_source = self.check_credentials().source
        text = _ShownOnce(cb.on_text)
        thinking = _ShownOnce(cb.on_thinking)
        attempt_cb = replace(cb, on_thinking=thinking.add if cb.on_thinking else None)

        attempt = 0
        while True:
            attempt += 1
            text.new_attempt()
            thinking.new_attempt()
            try:
                return await self._attempt(params, attempt_cb, text.add, attempt, parts)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                retry, after = _retryable(exc)
                if not retry or attempt > self.settings.max_retries:
                    raise model_error(exc, attempt, self.settings.base_url, key_source) from None
                if after is not None:  # the server said when: honour it (within reason)
                    delay = min(after, MAX_RETRY_AFTER_S)
                else:
                    delay = min(self.settings.max_backoff_s, 0.5 * 2 ** (attempt - 1)) * (0.8 + 0.4 * random.random())
                log.warning("model request failed (%s); retry %d in %.1fs", _describe(exc), attempt, delay)
                if cb.on_retry is not None:
                    status, error_type, detail = _failure(exc)
                    try:
                        await cb.on_retry(RetryInfo(attempt, self.settings.max_retries + 1, delay, status,
                                                    error_type, detail))
                    except Exception:
                        log.debug("retry callback failed", exc_info=True)
                await asyncio.sleep(delay)

    async def _attempt(self, params: dict[str, Any], cb: StreamCallbacks, on_text: TextSink,
                       attempt: int, parts: EncodedParts | None = None) -> ModelReply:
        """One request: sent by the SDK (auth, headers, timeouts; an HTTP error raises its ``APIStatusError``
        here) with the body encoded by ``request_body``, its events read raw into a ``MessageBuilder``; an
        ``error`` event raises what the SDK's stream raised for it."""
        import anthropic

        builder = MessageBuilder(on_text, cb.on_thinking, cb.on_block, cb.on_block_start)
        content, headers = request_body(params, parts)
        stream = await self.client.post(MESSAGES_PATH, cast_to=object, content=content, options={"headers": headers},
                                        stream=True, stream_cls=anthropic.AsyncStream[object])
        response = stream.response
        try:
            async for sse in anthropic.AsyncStream.raw_events(response):
                kind = sse.event
                if kind is None or kind == "ping":
                    continue
                if kind == "error":  # mid-stream (overloaded_error, …): the error the SDK's stream raised
                    body: object = sse.data
                    try:
                        body = json.loads(sse.data)
                        message = f"{body}"
                    except ValueError:
                        message = sse.data or f"Error code: {response.status_code}"
                    raise anthropic.APIStatusError(message, response=response, body=body)
                if not sse.data:
                    continue
                await builder.feed(kind, json.loads(sse.data))
        finally:
            await stream.close()
        blocks, stop_reason, usage = builder.final()
        return ModelReply(content=blocks, stop_reason=stop_reason, usage=usage, attempts=attempt)

    async def complete(self, params: dict[str, Any]) -> ModelReply:
        """A non-interactive call (small-model extraction, titles, summaries): streamed, no callbacks."""
        return await self.stream(params)

    async def count_tokens(self, params: dict[str, Any]) -> int:
        self.check_credentials()
        keep = {k: v for k, v in params.items() if k in ("model", "system", "messages", "tools")}
        result = await self.client.messages.count_tokens(**keep)
        return int(result.input_tokens)


# The session's own client (``ModelClient.for_session``): /model or Config in one session leaves every other
# session's model as it was.
MODEL = ServiceKey[ModelClient]("model")
