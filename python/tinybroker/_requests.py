"""Request/reply for both clients (docs/client.md, "Request and reply"):
`request` sends one request with the unary Request call and returns the
first reply; `serve` answers the requests to a pattern (or as a member of a
consumer group) with a handler's return value, on the Session stream that
carried each request (only that stream's session may answer it)."""

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Tuple, Union

import grpc

from . import _check
from ._admin import to_error
from ._proto import tinybroker_pb2 as pb
from ._types import Delivery, Message, Payload
from .errors import NoRespondersError, RequestTimeoutError, TinybrokerError

#: What a handler of `serve` returns: the reply's payload, or (payload,
#: headers).
ReplyLike = Union[Payload, Tuple[Payload, Mapping[str, str]]]

#: A handler of `serve`: called with each request, returns the reply.
Handler = Callable[[Delivery], ReplyLike]

#: A handler of the asyncio `serve`: may also be a coroutine function.
AsyncHandler = Callable[[Delivery], Union[ReplyLike, Awaitable[ReplyLike]]]

# The time a request call may take beyond the request's own timeout: the
# broker answers DEADLINE_EXCEEDED itself; this only bounds a lost broker.
_CALL_SLACK = 1.0


@dataclass(frozen=True)
class Reply:
    """The reply to a request."""

    #: The reply's payload.
    payload: bytes
    #: The reply's headers.
    headers: Dict[str, str] = field(default_factory=dict)
    #: The broker's id of the request message.
    message_id: int = 0

    @property
    def text(self) -> str:
        """The payload decoded as UTF-8."""
        return self.payload.decode("utf-8")


def make_request(topic: str, payload: Payload, headers: Optional[Mapping[str, str]],
                 key: str, timeout: float, group: str) -> "pb.Request":
    """Returns the wire form of a request; raises TypeError/ValueError for
    bad arguments (nothing is sent)."""
    if timeout <= 0 or timeout > 600:
        raise ValueError(f"timeout must be above 0 and at most 600 s, not {timeout}")
    message = Message(topic, payload, headers or {}, key).to_proto("request")
    return pb.Request(message=message, timeout_ms=int(round(timeout * 1000)),
                      group=_check.text("group", group))


def to_reply(response: "pb.Response") -> Reply:
    """Returns the Reply of a Response."""
    return Reply(response.payload, dict(response.headers), response.message_id)


def request_error(err: grpc.RpcError, topic: str, timeout: float
                  ) -> TinybrokerError:
    """Returns the error of a failed request call: NoRespondersError,
    RequestTimeoutError, or as any unary call's."""
    code, details = err.code(), err.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE and details.startswith("no_responders"):
        return NoRespondersError(f"{code.name}: {details}", code, "no_responders")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return RequestTimeoutError(
            f"DEADLINE_EXCEEDED: no reply to the request to {topic!r} within "
            f"{timeout} s", code, "request_timeout")
    return to_error(err)


def split_reply(value: ReplyLike) -> Tuple[bytes, Dict[str, str]]:
    """Returns payload and headers of a handler's return value."""
    if isinstance(value, tuple):
        payload, headers = value
        return (_check.payload("reply", payload),
                _check.headers("reply.headers", headers))
    return _check.payload("reply", value), {}


def reply_frame(handle: int, payload: bytes, headers: Mapping[str, str]
                ) -> "pb.ClientFrame":
    """Returns the Reply frame answering `handle`."""
    return pb.ClientFrame(reply=pb.Reply(reply_handle=handle, payload=payload,
                                         headers=dict(headers)))


class Requests:
    """request() and serve() of the threaded client (mixed into Client)."""

    _stub: Any
    _settings: Any
    subscribe: Any
    join: Any

    def request(self, topic: str, payload: Payload = b"", *,
                headers: Optional[Mapping[str, str]] = None, key: str = "",
                timeout: float = 5.0, group: str = "") -> Reply:
        """Sends a request and waits for the first reply (at most `timeout`
        seconds). Without `group` every fan-out subscriber of `topic` gets
        it; with `group`, one member of that consumer group. Raises
        NoRespondersError at once when nobody listens, RequestTimeoutError
        when no reply came in time, BrokerError/AuthError when refused."""
        req = make_request(topic, payload, headers, key, timeout, group)
        try:
            return to_reply(self._stub.Request(
                req, metadata=self._settings.metadata,
                timeout=timeout + _CALL_SLACK))
        except grpc.RpcError as err:
            raise request_error(err, topic, timeout) from None

    def serve(self, pattern: str, handler: Handler, *, group: str = "",
              max_in_flight: int = 256, timeout: Optional[float] = 10.0) -> Any:
        """Answers the requests to `pattern` with `handler(delivery)`, which
        returns the reply's payload or (payload, headers); it runs on the
        callback thread. With `group`, as a member of that consumer group
        (each request to one member; the reply acks it). Plain messages on
        the pattern are passed over. A handler that raises sends no reply (a
        group request is nacked) and its error goes to on_error. Returns the
        Subscription; unsubscribe() stops serving."""
        def answer(delivery: Delivery) -> None:
            if not delivery.is_request:
                return
            try:
                payload, headers = split_reply(handler(delivery))
            except BaseException:
                delivery.nack()
                raise
            delivery.reply(payload, headers)
        if group:
            return self.join(group, pattern, answer,
                             max_in_flight=max_in_flight, timeout=timeout)
        return self.subscribe(pattern, answer, timeout=timeout)


class AsyncRequests:
    """request() and serve() of the asyncio client (mixed into
    AsyncClient)."""

    _stub: Any
    _settings: Any
    subscribe: Any
    join: Any

    async def request(self, topic: str, payload: Payload = b"", *,
                      headers: Optional[Mapping[str, str]] = None,
                      key: str = "", timeout: float = 5.0,
                      group: str = "") -> Reply:
        """Sends a request and waits for the first reply (see
        Client.request)."""
        req = make_request(topic, payload, headers, key, timeout, group)
        try:
            return to_reply(await self._stub.Request(
                req, metadata=self._settings.metadata,
                timeout=timeout + _CALL_SLACK))
        except grpc.RpcError as err:
            raise request_error(err, topic, timeout) from None

    async def serve(self, pattern: str, handler: AsyncHandler, *,
                    group: str = "", max_in_flight: int = 256,
                    timeout: Optional[float] = 10.0) -> Any:
        """Answers the requests to `pattern` (see Client.serve); `handler`
        may be a coroutine function."""
        async def answer(delivery: Delivery) -> None:
            if not delivery.is_request:
                return
            try:
                value: Any = handler(delivery)
                if inspect.isawaitable(value):
                    value = await value
                payload, headers = split_reply(value)
            except BaseException:
                delivery.nack()
                raise
            delivery.reply(payload, headers)
        if group:
            return await self.join(group, pattern, answer,
                                   max_in_flight=max_in_flight,
                                   timeout=timeout)
        return await self.subscribe(pattern, answer, timeout=timeout)
