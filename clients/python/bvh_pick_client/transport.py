"""The request layer both clients share: what to send, when to send it again, what an error is.

An operation of the API is written once, as a generator (:func:`operation`):
it yields the :class:`Call` objects it needs and receives each one's
``httpx.Response``, then returns its typed result. :class:`SyncTransport`
and :class:`AsyncTransport` drive such generators over ``httpx.Client`` and
``httpx.AsyncClient``, with the same retry policy (:class:`RetryPolicy`): so
``Client`` and ``AsyncClient`` differ only in how they wait.

A write (POST, PATCH, PUT, DELETE that changes something) carries an
``Idempotency-Key`` made once per logical write, when its :class:`Call` is
made, and sent again unchanged on every retry: the service answers a repeat
with the first answer instead of applying the write again.
"""

import asyncio
import functools
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import httpx

#: Transport failures after which a request is sent again: the connection was refused, dropped or
#: broke before an answer came. A read timeout is not among them (the request may still be running).
RETRIED_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError,
                  httpx.WriteError, httpx.PoolTimeout)

#: Answers after which a request is sent again (the service is starting, or its store does not answer).
RETRIED_STATUSES = frozenset({503})


class ApiError(Exception):
    """A 4xx or 5xx answer: ``status``, the service's ``detail`` (its words) and the response."""

    def __init__(self, status: int, detail: Any, response: httpx.Response | None = None):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.response = response


def new_idempotency_key() -> str:
    """A fresh key for one logical write (32 hex digits)."""
    return uuid.uuid4().hex


@dataclass
class Call:
    """One HTTP request of an operation.

    ``write`` marks a request that changes the scene store: it gets an
    ``Idempotency-Key`` (``idempotency_key``, made here unless given) that
    every retry repeats. ``expect`` lists the statuses that are answers, not
    errors (404 for a lookup that may find nothing, say).
    """

    method: str
    path: str
    json: Any = None
    content: bytes | None = None
    params: dict | None = None
    headers: dict = field(default_factory=dict)
    files: dict | None = None
    data: dict | None = None
    write: bool = False
    idempotency_key: str | None = None
    expect: tuple[int, ...] = ()

    def __post_init__(self):
        if self.write and self.idempotency_key is None:
            self.idempotency_key = new_idempotency_key()

    def request_arguments(self) -> dict:
        """Keyword arguments of ``httpx.Client.request`` for this call."""
        headers = dict(self.headers)
        if self.idempotency_key is not None:
            headers["Idempotency-Key"] = self.idempotency_key
        if self.content is not None and "Content-Type" not in headers:
            headers["Content-Type"] = "application/octet-stream"
        arguments = {"method": self.method, "url": self.path, "headers": headers}
        if self.params:
            arguments["params"] = {name: value for name, value in self.params.items() if value is not None}
        if self.json is not None:
            arguments["json"] = self.json
        if self.content is not None:
            arguments["content"] = self.content
        if self.files is not None:
            arguments["files"] = self.files
        if self.data is not None:
            arguments["data"] = self.data
        return arguments


@dataclass
class RetryPolicy:
    """How often and how long to wait before sending a request again.

    Parameters
    ----------
    attempts : int
        Tries in all (1: never retry).
    backoff : float
        Seconds before the first retry, doubled after each, up to ``max_wait``.
    max_wait : float
        The longest wait, also for a ``Retry-After`` the service asks for.
    """

    attempts: int = 5
    backoff: float = 0.1
    max_wait: float = 5.0

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait after failed try number ``attempt`` (0-based)."""
        delay = self.backoff * 2 ** attempt
        if response is not None:
            try:
                delay = max(delay, float(response.headers.get("Retry-After", 0)))
            except ValueError:
                pass
        return min(delay, self.max_wait)


def error_of(response: httpx.Response) -> ApiError:
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    except AttributeError:          # a JSON answer that is not an object
        detail = response.text
    return ApiError(response.status_code, detail, response)


#: An operation: yields Calls, receives their responses, returns the result.
Plan = Generator[Call, httpx.Response, Any]


def operation(method: Callable[..., Plan]) -> Callable[..., Any]:
    """Make a generator method an operation of both clients: calling it hands the generator to
    ``self.transport.run``, which returns the result (``Client``) or a coroutine of it
    (``AsyncClient``)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        return self.transport.run(method(self, *args, **kwargs))

    return run


class SyncTransport:
    """Sends an operation's calls with ``httpx.Client``, retrying as :class:`RetryPolicy` says."""

    def __init__(self, http: httpx.Client, retry: RetryPolicy):
        self.http = http
        self.retry = retry

    def run(self, plan: Plan):
        try:
            call = next(plan)
            while True:
                call = plan.send(self.send(call))
        except StopIteration as done:
            return done.value

    def send(self, call: Call) -> httpx.Response:
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            try:
                response = self.http.request(**call.request_arguments())
            except RETRIED_ERRORS:
                if last:
                    raise
                time.sleep(self.retry.wait(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last:
                time.sleep(self.retry.wait(attempt, response))
                continue
            return checked(call, response)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


class AsyncTransport:
    """Sends an operation's calls with ``httpx.AsyncClient``; the same policy as :class:`SyncTransport`."""

    def __init__(self, http: httpx.AsyncClient, retry: RetryPolicy):
        self.http = http
        self.retry = retry

    async def run(self, plan: Plan):
        try:
            call = next(plan)
            while True:
                call = plan.send(await self.send(call))
        except StopIteration as done:
            return done.value

    async def send(self, call: Call) -> httpx.Response:
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            try:
                response = await self.http.request(**call.request_arguments())
            except RETRIED_ERRORS:
                if last:
                    raise
                await asyncio.sleep(self.retry.wait(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last:
                await asyncio.sleep(self.retry.wait(attempt, response))
                continue
            return checked(call, response)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        await self.http.aclose()


def checked(call: Call, response: httpx.Response) -> httpx.Response:
    """The response, or :class:`ApiError` when its status is an error the call does not expect."""
    if response.status_code >= 400 and response.status_code not in call.expect:
        raise error_of(response)
    return response
