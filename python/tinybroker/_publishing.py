"""The publish path of both clients: the queue of publishes they share
(`PublishQueue`, part of _core.Core: at most max_pending_publishes messages
queued or awaiting their confirm, each publish split into frames by
_limits.frames and held until the stream is established), and the public
publish methods of the threaded client (`Publishing`, mixed into Client) and
of the asyncio one (`AsyncPublishing`, mixed into AsyncClient)."""

import asyncio
import threading
from concurrent.futures import Future
from typing import (Any, Awaitable, Callable, ContextManager, Dict, Iterable,
                    List, Optional, Tuple)

import grpc

from ._limits import LimitCache, check_sizes, frames
from ._proto import tinybroker_pb2 as pb
from ._types import (Message, MessageLike, PublishResult, check_results,
                     generated_msg_id, to_proto_messages)
from .errors import PublishQueueFullError


def number_from_base(chunk: List["pb.Message"], numbers: List[int],
                     prefix: bytes) -> bytes:
    """The frame's Publish.msg_id_base when the ids of `chunk` are all
    generated and consecutive (`numbers`, 0 for a user's own id): the
    first, its messages' own ids cleared (the broker numbers them from it,
    docs/protocol.md); else b"" and every id stays in its message."""
    if not numbers or numbers[0] == 0 or any(
            n != numbers[0] + k for k, n in enumerate(numbers)):
        return b""
    for proto in chunk:
        proto.ClearField("msg_id")
    return generated_msg_id(prefix, numbers[0])


def fail(future: Any, error: BaseException) -> None:
    """Fails a publish's future with `error` unless it is done."""
    if not future.done():
        future.set_exception(error)


def resolve(future: Any, results: List[PublishResult]) -> None:
    """Gives a publish's future its `results` unless it is done."""
    if not future.done():
        future.set_result(results)


class PublishQueue:
    """Core's publish bookkeeping. Core provides the state it reads:
    `_guard()`, `_check_open()`, `_closing_requested()`, `_next_request_id()`,
    `_new_future()`, `_state`, `_out` (the current stream's frame queue, or
    None), `_pending` (request_id -> future of the frames sent),
    `_unsent` (the frames held until the stream is established), the
    counters and the limits."""

    server: str
    _state: str
    _out: Any
    _pending: Dict[int, Any]
    _unsent: List[Tuple[int, "pb.ClientFrame", Any]]
    _pending_publishes: int
    _max_pending_publishes: int
    _limit_cache: LimitCache
    _guard: Callable[[], ContextManager[Any]]
    _check_open: Callable[[], None]
    _closing_requested: Callable[[], bool]
    _next_request_id: Callable[[], int]
    _new_future: Callable[[], Any]
    _idempotent: bool
    _id_prefix: bytes
    _next_msg_id: int

    def _room_freed(self) -> None:
        """Wakes the publishes waiting for room (under the guard)."""

    def _has_room(self, count: int) -> bool:
        """Whether a publish of `count` messages may be queued now: at most
        max_pending_publishes messages are queued or await their confirm (a
        larger batch goes alone, into an empty queue). True once closed, so
        that the waiter sees the close."""
        return (self._state == "closed" or self._closing_requested()
                or self._pending_publishes == 0
                or self._pending_publishes + count
                <= self._max_pending_publishes)

    def _release(self, count: int) -> None:
        """A publish of `count` messages ended (confirmed or failed)."""
        with self._guard():
            self._pending_publishes -= count
            self._room_freed()

    def _queue_publish(self, protos: List["pb.Message"]) -> List[Any]:
        """Queues publish frames (see _limits.frames) and returns their
        futures; held until the stream is established. Raises
        MessageTooLargeError for a message over the broker's
        max_message_bytes, and PublishQueueFullError when there is no room
        (see _has_room; the caller waited for it up to publish_block);
        nothing is queued then."""
        futures = []
        numbers = [0] * len(protos)  # of the ids generated here, 0: none
        if self._idempotent:
            for i, proto in enumerate(protos):
                if not proto.msg_id:
                    self._next_msg_id += 1
                    numbers[i] = self._next_msg_id
                    proto.msg_id = generated_msg_id(self._id_prefix,
                                                    self._next_msg_id)
        limits = self._limit_cache.known()
        check_sizes(protos, limits, self.server)
        with self._guard():
            self._check_open()
            if not self._has_room(len(protos)):
                raise PublishQueueFullError(
                    f"the client's publish queue is full "
                    f"({self._pending_publishes} messages await sending or a "
                    f"confirm; max_pending_publishes="
                    f"{self._max_pending_publishes})",
                    grpc.StatusCode.RESOURCE_EXHAUSTED)
            offset = 0
            for chunk in frames(protos, limits):
                base = number_from_base(
                    chunk, numbers[offset:offset + len(chunk)],
                    self._id_prefix)
                offset += len(chunk)
                request_id = self._next_request_id()
                frame = pb.ClientFrame(request_id=request_id, publish=pb.Publish(
                    messages=chunk, confirm=True, msg_id_base=base))
                future = self._new_future()
                future.count = len(chunk)
                if self._idempotent:  # kept to be sent again (_core._ended)
                    future.frame = frame
                self._pending_publishes += len(chunk)
                future.add_done_callback(
                    lambda _, count=len(chunk): self._release(count))
                futures.append(future)
                if self._state == "connected" and self._out is not None:
                    self._pending[request_id] = future
                    self._out.put_nowait(frame)
                else:
                    self._unsent.append((request_id, frame, future))
        return futures


class Publishing:
    """The publish methods of the threaded client (mixed into Client)."""

    server: str
    _lock: threading.Condition
    _publish_block: float
    _start: Callable[[], None]
    _learn_limits: Callable[[], None]
    _has_room: Callable[[int], bool]
    _queue_publish: Callable[[List["pb.Message"]], List[Any]]

    def publish_nowait(self, messages: Iterable[MessageLike]
                       ) -> "Future[List[PublishResult]]":
        """Sends `messages` as one publish frame (several past 4096) and
        returns; the future gives every message's result, or raises
        ConnectionLostError / ClientClosedError. Publishes made while the
        client reconnects are sent, in order, once it is back. When
        max_pending_publishes messages are queued or await their confirm, it
        waits up to publish_block seconds for room, then raises
        PublishQueueFullError. Raises MessageTooLargeError (nothing sent)
        for a message over the broker's limits.max_message_bytes, TypeError
        and InvalidRequestError for what is not a message."""
        protos = to_proto_messages(messages)
        self._start()
        self._learn_limits()
        with self._lock:
            self._lock.wait_for(lambda: self._has_room(len(protos)),
                                self._publish_block)
            futures = self._queue_publish(protos)
        return futures[0] if len(futures) == 1 else _join_futures(futures)

    def publish_results(self, messages: Iterable[MessageLike],
                        timeout: Optional[float] = 10.0) -> List[PublishResult]:
        """Publishes `messages` in one batch and returns every message's
        result, refused ones included (never raises for those). Raises
        ConnectionLostError, ClientClosedError, or TimeoutError when no
        confirm came within `timeout` seconds."""
        future = self.publish_nowait(messages)
        try:
            return future.result(timeout)
        except TimeoutError:
            raise TimeoutError(f"no confirm from {self.server} within "
                               f"{timeout} s") from None

    def publish_many(self, messages: Iterable[MessageLike],
                     timeout: Optional[float] = 10.0) -> List[int]:
        """Publishes `messages` in one batch; returns their ids. Raises
        PublishError (with every message's result) if the broker refused
        any; the others were routed."""
        return check_results(self.publish_results(messages, timeout))

    def publish(self, topic: str, payload: "bytes | str" = b"", *,
                headers: Optional[Dict[str, str]] = None, key: str = "",
                timeout: Optional[float] = 10.0, ttl: float = 0,
                delay: float = 0, not_before: Any = None,
                priority: int = 0, msg_id: "bytes | str" = b"") -> int:
        """Publishes one message and returns its id once confirmed (with
        `msg_id`, a duplicate's id is the first message's). Raises
        PublishError when the broker refused it. `ttl`, `delay`,
        `not_before`, `priority` and `msg_id` as in Message."""
        return self.publish_many(
            [Message(topic, payload, headers or {}, key, ttl, delay,
                     not_before, priority, msg_id)], timeout)[0]


def _join_futures(futures: List[Future]) -> Future:
    """One future for the concatenated results of `futures`."""
    joined: Future = Future()
    lock = threading.Lock()
    remaining = [len(futures)]

    def done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0]:
                return
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            joined.set_exception(errors[0])
        else:
            joined.set_result([r for f in futures for r in f.result()])

    for f in futures:
        f.add_done_callback(done)
    return joined


class AsyncPublishing:
    """The publish methods of the asyncio client (mixed into AsyncClient)."""

    server: str
    _room: asyncio.Event
    _publish_block: float
    _check_open: Callable[[], None]
    _start: Callable[[], None]
    _learn_limits: Callable[[], Awaitable[None]]
    _has_room: Callable[[int], bool]
    _queue_publish: Callable[[List["pb.Message"]], List[Any]]

    def publish_nowait(self, messages: Iterable[MessageLike]
                       ) -> "asyncio.Future[List[PublishResult]]":
        """Queues `messages` as one batch; the future gives every result.
        Raises PublishQueueFullError at once when max_pending_publishes
        messages are queued or await their confirm (the coroutines wait up
        to publish_block for room)."""
        protos = to_proto_messages(messages)
        self._check_open()
        self._start()
        return self._joined(self._queue_publish(protos))

    async def _publish_when_room(self, messages: Iterable[MessageLike]
                                 ) -> "asyncio.Future[List[PublishResult]]":
        """publish_nowait after waiting up to publish_block for room (and
        for the broker's limits, if not known yet)."""
        protos = to_proto_messages(messages)
        self._check_open()
        self._start()
        await self._learn_limits()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._publish_block
        while not self._has_room(len(protos)) and loop.time() < deadline:
            try:
                await asyncio.wait_for(self._room.wait(),
                                       deadline - loop.time())
            except asyncio.TimeoutError:
                break
        return self._joined(self._queue_publish(protos))

    @staticmethod
    def _joined(futures: "List[asyncio.Future[List[PublishResult]]]"
                ) -> "asyncio.Future[List[PublishResult]]":
        if len(futures) == 1:
            return futures[0]

        async def joined() -> List[PublishResult]:
            return [r for f in futures for r in await f]
        return asyncio.ensure_future(joined())

    async def publish_results(self, messages: Iterable[MessageLike],
                              timeout: Optional[float] = 10.0
                              ) -> List[PublishResult]:
        """Every message's result, refused ones included (see
        Client.publish_results)."""
        future = await self._publish_when_room(messages)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no confirm from {self.server} within "
                               f"{timeout} s") from None

    async def publish_many(self, messages: Iterable[MessageLike],
                           timeout: Optional[float] = 10.0) -> List[int]:
        """The ids; raises PublishError if the broker refused any."""
        return check_results(await self.publish_results(messages, timeout))

    async def publish(self, topic: str, payload: "bytes | str" = b"", *,
                      headers: Optional[Dict[str, str]] = None, key: str = "",
                      timeout: Optional[float] = 10.0, ttl: float = 0,
                      delay: float = 0, not_before: Any = None,
                      priority: int = 0, msg_id: "bytes | str" = b"") -> int:
        """Publishes one message; its id, or PublishError (with `msg_id`, a
        duplicate's id is the first message's). `ttl`, `delay`, `not_before`,
        `priority` and `msg_id` as in Message."""
        ids = await self.publish_many(
            [Message(topic, payload, headers or {}, key, ttl, delay,
                     not_before, priority, msg_id)], timeout)
        return ids[0]
