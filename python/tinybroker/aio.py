"""The asyncio client, on grpc.aio: the threaded client's API with
coroutines for what waits (connect, publish, subscribe, join, close, the
unary calls, `get`) and async iteration of subscriptions. Answers (`ack`,
`nack`, `reject`, `in_progress`) and `unsubscribe` only queue a frame, so
they stay plain methods; call them on the client's event loop.

    import tinybroker.aio

    async with tinybroker.aio.connect() as client:
        await client.publish("jobs.resize", b"a")
        async for job in await client.join("workers", "jobs.>"):
            job.ack()
"""

import asyncio
import inspect
from typing import (Any, AsyncIterator, Awaitable, Callable, Generator, List,
                    Optional, Sequence, Tuple)

import grpc

from ._admin import AsyncAdmin
from ._check import named
from ._core import Core
from ._proto import tinybroker_pb2 as pb
from ._proto import tinybroker_pb2_grpc as pb_grpc
from ._publishing import AsyncPublishing
from ._reaching import AsyncReaching
from ._requests import AsyncRequests
from ._servers import ServerSpec
from ._settings import Settings, make_aio_channel, resolve
from ._types import END, merge_queued_answers
from .subscription import (AsyncDeliveryCallback, AsyncSubscription,
                           DroppedCallback, check_patterns,
                           check_subscribe, fanout_maker)

# Re-exported (`as`): names importable from here before the publish
# methods moved to _publishing.py, so that such imports go on working.
from ._types import Delivery as Delivery, Message as Message
from ._types import MessageLike as MessageLike, PublishResult as PublishResult
from .errors import AuthError as AuthError, ConnectError as ConnectError

__all__ = ["connect", "AsyncClient", "AsyncSubscription"]

async def _frames(out: "asyncio.Queue[Any]") -> AsyncIterator["pb.ClientFrame"]:
    """The frames of one stream, runs of answers merged (as in client.py)."""
    held: Any = None
    while True:
        frame = held if held is not None else await out.get()
        if frame is END:
            return
        held = merge_queued_answers(frame, out)
        yield frame


class AsyncClient(AsyncReaching, Core, AsyncPublishing, AsyncAdmin, AsyncRequests):
    """The asyncio counterpart of tinybroker.Client (make one with
    `tinybroker.aio.connect`). Use it from one event loop."""

    def __init__(self, settings: Settings, *,
                 reconnect_initial_backoff: float = 0.1,
                 reconnect_max_backoff: float = 2.0,
                 reconnect_max_attempts: int = 20, max_queued: int = 4096,
                 close_timeout: float = 5.0, lazy: bool = False,
                 on_error: Optional[Callable[[BaseException], None]] = None,
                 max_pending_publishes: int = 16384,
                 publish_block: float = 10.0,
                 idempotent: bool = False,
                 randomize_servers: bool = True) -> None:
        super().__init__(settings, reconnect_initial_backoff,
                         reconnect_max_backoff, reconnect_max_attempts,
                         max_queued, close_timeout, on_error,
                         max_pending_publishes, publish_block, idempotent,
                         randomize_servers)
        # A channel per address (issue 30), as tinybroker.Client.
        self._channels = [make_aio_channel(settings, server)
                          for server in self._servers]
        self._stubs = [pb_grpc.BrokerStub(channel)
                       for channel in self._channels]
        self._changed = asyncio.Event()
        self._room = asyncio.Event()  # set (and replaced) when room frees
        self._closing = asyncio.Event()
        self._call: Any = None
        self._callbacks: "asyncio.Queue[Any]" = asyncio.Queue(max_queued)
        self._callback_task: "Optional[asyncio.Future[None]]" = None
        self._task: "Optional[asyncio.Future[None]]" = None
        #: Whether the stream opens on first need rather than at connect.
        self.lazy = lazy
        self._raises_first = not lazy

    @property
    def _channel(self) -> "grpc.aio.Channel":
        return self._channels[self._current]

    @property
    def _stub(self) -> pb_grpc.BrokerStub:
        return self._stubs[self._current]

    # -- Core's hooks --------------------------------------------------------

    def _set_state(self, state: str) -> None:
        self._state = state
        self._changed.set()
        self._changed = asyncio.Event()

    def _new_future(self) -> "asyncio.Future[Any]":
        return asyncio.get_running_loop().create_future()

    def _room_freed(self) -> None:
        self._room.set()
        self._room = asyncio.Event()

    def _closing_requested(self) -> bool:
        return self._closing.is_set()

    # -- connection ----------------------------------------------------------

    def _start(self) -> None:
        """Starts the tasks (and the stream) once, on first need."""
        if self._task is None:
            self._callback_task = asyncio.ensure_future(self._run_callbacks())
            self._task = asyncio.ensure_future(self._run())

    async def _wait_first(self, timeout: float) -> None:
        try:
            while self._state == "connecting":
                await asyncio.wait_for(self._changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        if self._state == "connected":
            await self._learn_limits()
            return
        error = self._final
        await self.close()
        raise self._first_failure(error, timeout)

    async def _run(self) -> None:
        while True:
            got_frame, code, details = await self._serve_one_stream()
            delay = self._next_attempt(got_frame, code, details,
                                       self._closing.is_set())
            if delay is None:
                return
            try:
                await asyncio.wait_for(self._closing.wait(), delay)
                return
            except asyncio.TimeoutError:
                pass

    async def _serve_one_stream(self) -> Tuple[bool, grpc.StatusCode, str]:
        if self._connections > 0 and not await self._channel_ready():
            self._connections += 1
            return False, grpc.StatusCode.UNAVAILABLE, \
                await self._connect_error() or \
                f"the broker at {self.server} does not accept connections"
        out: "asyncio.Queue[Any]" = asyncio.Queue()
        generation = self._open(out)
        self._call = call = self._stub.Session(
            _frames(out), metadata=self._settings.metadata)
        got_frame = False
        code, details = grpc.StatusCode.OK, "the broker ended the stream"
        try:
            async for frame in call:
                if not got_frame:
                    got_frame = True
                    self._on_established(generation)
                for target, item in self._handle(frame, generation):
                    if isinstance(target, AsyncSubscription) and \
                            target.callback is None:
                        await target._queue.put(item)  # full: stop reading
                    else:
                        await self._callbacks.put((target, item))
        except grpc.RpcError as err:
            code, details = err.code(), err.details() or ""
        except asyncio.CancelledError:  # the loop is ending: no reconnect
            call.cancel()
            self._call = None
            self._ended(out, grpc.StatusCode.CANCELLED, "cancelled")
            raise
        self._call = None
        self._ended(out, code, details)
        return got_frame, code, details

    async def _run_callbacks(self) -> None:
        while True:
            item = await self._callbacks.get()
            if item is END:
                return
            target, arg = item
            try:
                if isinstance(target, AsyncSubscription):
                    if not target.active:
                        arg.nack()  # unsubscribed meanwhile
                        continue
                    target = target.callback
                result = target(arg)
                if inspect.isawaitable(result):
                    await result
            except Exception as err:
                self._report(err)

    async def subscribe(self, pattern: str,
                        callback: Optional[AsyncDeliveryCallback] = None, *,
                        on_dropped: Optional[DroppedCallback] = None,
                        timeout: Optional[float] = 10.0) -> AsyncSubscription:
        """Fan-out subscription (see Client.subscribe)."""
        return await self._subscribe(pattern, "", 0, (), callback, on_dropped,
                                     timeout)

    async def subscribe_many(self, patterns: Sequence[str],
                             callback: Optional[AsyncDeliveryCallback] = None,
                             *, on_dropped: Optional[DroppedCallback] = None,
                             timeout: Optional[float] = 10.0
                             ) -> List[AsyncSubscription]:
        """Subscribes to each of `patterns` in SubscribeBatch frames (see
        Client.subscribe_many)."""
        patterns = check_patterns(patterns)
        self._check_open()
        self._start()
        subs = self._add_subscriptions([
            fanout_maker(AsyncSubscription, self, pattern, callback,
                         on_dropped, self._max_queued) for pattern in patterns])
        if timeout is not None and timeout > 0:
            try:
                await asyncio.wait_for(asyncio.gather(
                    *(sub.wait_subscribed(None) for sub in subs)), timeout)
            except asyncio.TimeoutError:
                for sub in subs:
                    sub.unsubscribe()
                raise TimeoutError(f"no answer to {len(subs)} subscribes "
                                   f"within {timeout} s") from None
            except BaseException:
                for sub in subs:
                    sub.unsubscribe()
                raise
        return subs

    async def join(self, group: str, pattern: str,
                   callback: Optional[AsyncDeliveryCallback] = None, *,
                   max_in_flight: int = 256, tags: Sequence[str] = (),
                   timeout: Optional[float] = 10.0) -> AsyncSubscription:
        """Joins a consumer group (see Client.join)."""
        return await self._subscribe(pattern, group, max_in_flight, tags,
                                     callback, None, timeout)

    async def _subscribe(self, pattern: str, group: str, max_in_flight: int,
                         tags: Sequence[str],
                         callback: Optional[AsyncDeliveryCallback],
                         on_dropped: Optional[DroppedCallback],
                         timeout: Optional[float]) -> AsyncSubscription:
        pattern, group, tags = check_subscribe(pattern, group, tags)
        self._check_open()
        self._start()
        sub = self._add_subscription(lambda sub_id: AsyncSubscription(
            self, sub_id, pattern, group, max_in_flight, tags, callback,
            on_dropped, self._max_queued))
        if timeout is not None and timeout > 0:
            await sub.wait_subscribed(timeout)
        return sub

    # -- close ---------------------------------------------------------------

    async def wait_closed(self, timeout: Optional[float] = None) -> None:
        """Waits until the client is closed. Returns after close(); raises
        the error it closed itself with for good (the ConnectionLostError of
        giving up reconnecting, an AuthError, ...; see Client.wait_closed),
        or TimeoutError after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._state != "closed" or self._reporting:
            left = None if deadline is None else deadline - loop.time()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                raise TimeoutError(f"the client of {self.server} is still "
                                   f"open after {timeout} s") from None
        error = self._closed_error()
        if error is not None:
            raise error

    async def close(self) -> None:
        """Half-closes, waits up to close_timeout for the last confirms, ends
        every subscription and the tasks. Idempotent; not from a callback."""
        if self._closing.is_set():
            return
        self._closing.set()
        if self._out is not None:
            self._out.put_nowait(END)
        if self._state != "connected" and self._call is not None:
            self._call.cancel()
        if self._task is not None:
            done, _ = await asyncio.wait([self._task],
                                         timeout=self._close_timeout)
            if not done:
                if self._call is not None:
                    self._call.cancel()
                await asyncio.wait([self._task])
        if self._state != "closed":
            self._shut_down(None)
        if self._callback_task is not None:
            self._callback_task.cancel()
            await asyncio.wait([self._callback_task])
        for channel in self._channels:
            await channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _Connecting:
    """What `connect` returns: await it for the client, or use it directly
    in `async with` (the client is closed on exit)."""

    def __init__(self, make: Callable[[], Awaitable[AsyncClient]]) -> None:
        self._make = make
        self._client: Optional[AsyncClient] = None

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._make().__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await self._make()
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()


def connect(server: Optional[ServerSpec] = None, *, token: Optional[str] = None,
            token_file: Optional[str] = None, ca: Optional[str] = None,
            cert: Optional[str] = None, key: Optional[str] = None,
            tls_server_name: Optional[str] = None, timeout: float = 5.0,
            lazy: bool = False, name: Optional[str] = None,
            **options: Any) -> _Connecting:
    """Connects like tinybroker.connect, on asyncio: `client = await
    connect(...)` or `async with connect(...) as client:`. The client is
    ready once the broker answered; raises ConnectError, AuthError,
    SecurityError (and InvalidRequestError for a bad `name`)."""
    settings = named(resolve(server, token=token, token_file=token_file,
                             ca=ca, cert=cert, key=key,
                             tls_server_name=tls_server_name), name)

    async def make() -> AsyncClient:
        client = AsyncClient(settings, lazy=lazy, **options)
        if not lazy:
            client._start()
            await client._wait_first(timeout)
        return client
    return _Connecting(make)
