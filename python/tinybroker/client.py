"""The threaded client: one Session stream per client, reopened after a loss
with every live subscription sent again (as the C++ async_client does).

Threads: an I/O thread opens streams and reads frames (gRPC's own thread
writes them); a callback thread runs subscription callbacks in order."""

import queue
import threading
import time
from concurrent.futures import Future
from typing import (Any, Callable, ContextManager, Iterable, List, Optional,
                    Sequence, Tuple)

import grpc

from ._admin import Admin
from ._check import named
from ._core import Core
from ._inbox import Inbox
from ._proto import tinybroker_pb2 as pb
from ._proto import tinybroker_pb2_grpc as pb_grpc
from ._publishing import Publishing
from ._reaching import Reaching
from ._requests import Requests
from ._servers import ServerSpec
from ._settings import Settings, make_channel, resolve
from ._types import END, Delivery, merge_queued_answers
from .subscription import (DeliveryCallback, DroppedCallback, Subscription,
                           check_patterns, check_subscribe,
                           fanout_maker)

# Re-exported (`as`): names importable from here before the publish
# methods moved to _publishing.py, so that such imports go on working.
from ._types import Message as Message, MessageLike as MessageLike
from ._types import PublishResult as PublishResult
from .errors import AuthError as AuthError, ConnectError as ConnectError


def _frames(out: "queue.Queue[Any]") -> Iterable["pb.ClientFrame"]:
    """Yields the frames queued for one stream, merging runs of answers of
    one kind into one frame (answers are coalesced while the stream is
    busy)."""
    held: Any = None
    while True:
        frame = held if held is not None else out.get()
        if frame is END:
            return
        held = merge_queued_answers(frame, out)
        yield frame


class Client(Reaching, Core, Publishing, Admin, Requests):
    """A connection to a broker (make one with `tinybroker.connect`). Thread
    safe. Publishes wait for their confirm; subscriptions deliver to an
    iterator or a callback; the stream is reopened after a loss and every
    live subscription is made again."""

    def __init__(self, settings: Settings, *, connect_timeout: float = 5.0,
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
        # A channel per address (issue 30); `_channel` and `_stub` are the
        # current address's.
        self._channels = [make_channel(settings, server)
                          for server in self._servers]
        self._stubs = [pb_grpc.BrokerStub(channel)
                       for channel in self._channels]
        self._lock = threading.Condition()  # reentrant
        self._closing = False
        self._call: Any = None
        self._callbacks = Inbox(max_queued)
        self._stop = threading.Event()
        self._callback_thread = threading.Thread(
            target=self._run_callbacks, name="tinybroker-callbacks", daemon=True)
        self._io_thread = threading.Thread(
            target=self._run, name="tinybroker-io", daemon=True)
        self._started = False
        self._raises_first = not lazy
        if not lazy:
            self._start()
            self._wait_first(connect_timeout)

    @property
    def _channel(self) -> grpc.Channel:
        return self._channels[self._current]

    @property
    def _stub(self) -> pb_grpc.BrokerStub:
        return self._stubs[self._current]

    # -- Core's hooks --------------------------------------------------------

    def _guard(self) -> ContextManager[Any]:
        return self._lock

    def _set_state(self, state: str) -> None:
        with self._lock:
            self._state = state
            self._lock.notify_all()

    def _new_future(self) -> Future:
        return Future()

    def _room_freed(self) -> None:
        self._lock.notify_all()

    def _closing_requested(self) -> bool:
        return self._closing

    # -- connection ----------------------------------------------------------

    def _start(self) -> None:
        """Starts the threads (and the stream) once, on first need."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self._callback_thread.start()
        self._io_thread.start()

    def _wait_first(self, timeout: float) -> None:
        with self._lock:
            self._lock.wait_for(lambda: self._state != "connecting", timeout)
            connected = self._state == "connected"
            error = self._final
        if connected:
            self._learn_limits()
            return
        self.close()
        raise self._first_failure(error, timeout)

    def _run(self) -> None:
        while True:
            got_frame, code, details = self._serve_one_stream()
            delay = self._next_attempt(got_frame, code, details, self._closing)
            if delay is None:
                return
            with self._lock:
                if self._lock.wait_for(lambda: self._closing, delay):
                    return

    def _serve_one_stream(self) -> Tuple[bool, grpc.StatusCode, str]:
        if self._connections > 0 and not self._channel_ready():
            self._connections += 1
            return False, grpc.StatusCode.UNAVAILABLE, \
                self._connect_error() or \
                f"the broker at {self.server} does not accept connections"
        out: "queue.Queue[Any]" = queue.Queue()
        generation = self._open(out)
        with self._lock:
            self._call = call = self._stub.Session(
                _frames(out), metadata=self._settings.metadata)
        got_frame = False
        code, details = grpc.StatusCode.OK, "the broker ended the stream"
        try:
            for frame in call:
                if not got_frame:
                    got_frame = True
                    self._on_established(generation)
                for target, item in self._handle(frame, generation):
                    self._hand_over(target, item)
        except grpc.RpcError as err:
            code, details = err.code(), err.details() or ""
        with self._lock:
            self._call = None
        self._ended(out, code, details)
        return got_frame, code, details

    def _hand_over(self, target: Any, item: Any) -> None:
        """Queues a delivery for its iterator or the callback thread; waits
        while that is full (so the broker buffers, or stops at the credit)."""
        if isinstance(target, Subscription) and target.callback is None:
            taken = target._inbox.put(item, self._stop)
        else:
            taken = self._callbacks.put((target, item), self._stop)
        if not taken and isinstance(item, Delivery):
            item.nack()  # ended meanwhile: let it move on

    def _run_callbacks(self) -> None:
        while True:
            try:
                target, arg = self._callbacks.get()
            except StopIteration:
                return
            try:
                if isinstance(target, Subscription):
                    if target.active:
                        target.callback(arg)
                    else:
                        arg.nack()  # unsubscribed meanwhile: let it move on
                else:
                    target(arg)
            except Exception as err:  # a callback's own error
                self._report(err)

    # -- publishing: _publishing.Publishing ----------------------------------

    # -- subscribing ---------------------------------------------------------

    def subscribe(self, pattern: str,
                  callback: Optional[DeliveryCallback] = None, *,
                  on_dropped: Optional[DroppedCallback] = None,
                  timeout: Optional[float] = 10.0) -> Subscription:
        """Subscribes to `pattern` (fan-out: a copy of every matching message
        accepted from now on, at most once). Iterate the subscription, or
        give `callback`. Waits for the broker's confirm: raises SubscribeError
        if refused (bad pattern: INVALID_ARGUMENT)."""
        return self._subscribe(pattern, "", 0, (), callback, on_dropped,
                               timeout)

    def subscribe_many(self, patterns: Sequence[str],
                       callback: Optional[DeliveryCallback] = None, *,
                       on_dropped: Optional[DroppedCallback] = None,
                       timeout: Optional[float] = 10.0) -> List[Subscription]:
        """Subscribes to each of `patterns` (as `subscribe` does, all with
        the same `callback`) in SubscribeBatch frames: for many patterns,
        several times cheaper for the broker than one `subscribe` each.
        Waits for every confirm; if the broker refused one, ends the others
        and raises that SubscribeError."""
        patterns = check_patterns(patterns)
        self._start()
        subs = self._add_subscriptions([
            fanout_maker(Subscription, self, pattern, callback, on_dropped,
                   self._max_queued) for pattern in patterns])
        if timeout is not None and timeout > 0:
            deadline = time.monotonic() + timeout
            try:
                for sub in subs:
                    sub.wait_subscribed(max(0.0, deadline - time.monotonic()))
            except BaseException:
                for sub in subs:
                    sub.unsubscribe()
                raise
        return subs

    def join(self, group: str, pattern: str,
             callback: Optional[DeliveryCallback] = None, *,
             max_in_flight: int = 256, tags: Sequence[str] = (),
             timeout: Optional[float] = 10.0) -> Subscription:
        """Joins consumer group `group` on `pattern` (created with default
        settings if unknown). The broker hands this member at most
        `max_in_flight` unanswered deliveries (its credit); answer each with
        ack, nack, reject. Raises SubscribeError if refused."""
        return self._subscribe(pattern, group, max_in_flight, tags, callback,
                               None, timeout)

    def _subscribe(self, pattern: str, group: str, max_in_flight: int,
                   tags: Sequence[str], callback: Optional[DeliveryCallback],
                   on_dropped: Optional[DroppedCallback],
                   timeout: Optional[float]) -> Subscription:
        pattern, group, tags = check_subscribe(pattern, group, tags)
        self._start()
        sub = self._add_subscription(lambda sub_id: Subscription(
            self, sub_id, pattern, group, max_in_flight, tags, callback,
            on_dropped, self._max_queued))
        if timeout is not None and timeout > 0:
            sub.wait_subscribed(timeout)
        return sub

    # -- state and close -----------------------------------------------------

    def wait_connected(self, timeout: Optional[float] = None) -> bool:
        """Waits until the broker answers on the stream; False on timeout or
        once closed."""
        self._start()
        with self._lock:
            self._lock.wait_for(lambda: self._state != "connecting", timeout)
            return self._state == "connected"

    def wait_closed(self, timeout: Optional[float] = None) -> None:
        """Blocks until the client is closed. Returns after close();
        raises the error the client closed itself with for good: the
        ConnectionLostError of giving up reconnecting (after
        reconnect_max_attempts), an AuthError when the broker refused the
        token, ... (see `final_error`). So a worker that consumes through
        callbacks can end with `client.wait_closed()` and exit non-zero
        when the broker is gone. Raises TimeoutError after `timeout`
        seconds."""
        with self._lock:
            if not self._lock.wait_for(
                    lambda: self._state == "closed" and not self._reporting,
                    timeout):
                raise TimeoutError(f"the client of {self.server} is still "
                                   f"open after {timeout} s")
            error = self._closed_error()
        if error is not None:
            raise error

    def close(self) -> None:
        """Sends what is queued, half-closes the stream, waits up to
        close_timeout for the last confirms, ends every subscription (their
        iterations stop) and stops the threads. Idempotent; not from a
        callback."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if self._out is not None:
                self._out.put(END)  # half-close: the broker ends the stream
            if self._state != "connected" and self._call is not None:
                self._call.cancel()  # nothing to wait for
            self._lock.notify_all()
        own = threading.current_thread() in (self._io_thread,
                                             self._callback_thread)
        if self._started and not own:
            self._io_thread.join(self._close_timeout)
            with self._lock:
                if self._call is not None:
                    self._call.cancel()
            self._io_thread.join()
        if self._state != "closed":
            self._shut_down(None)
        self._callbacks.close()
        self._stop.set()
        if self._started and not own:
            self._callback_thread.join(self._close_timeout)
        for channel in self._channels:
            channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(server: Optional[ServerSpec] = None, *, token: Optional[str] = None,
            token_file: Optional[str] = None, ca: Optional[str] = None,
            cert: Optional[str] = None, key: Optional[str] = None,
            tls_server_name: Optional[str] = None, timeout: float = 5.0,
            lazy: bool = False, name: Optional[str] = None,
            **options: Any) -> Client:
    """Connects to the broker at `server` (HOST:PORT; default
    TINYBROKER_SERVER, else 127.0.0.1:7400) and returns a Client once the
    broker answered on a Session stream. `server` may name several
    brokers, the nodes of a cluster (issue 30): "HOST:PORT,HOST:PORT" or a
    list; they are shuffled (as NATS clients do; `randomize_servers=False`
    keeps the order), the first that answers is used, and when its stream
    is lost the client goes on with the next one, subscribing again (see
    docs/client.md, "Several addresses and failover"). Unset token and TLS settings come
    from TINYBROKER_TOKEN, TINYBROKER_TOKEN_FILE, TINYBROKER_CA,
    TINYBROKER_CERT, TINYBROKER_KEY and TINYBROKER_TLS_SERVER_NAME. Raises
    ConnectError (refused: at once; no answer: after `timeout` s), AuthError,
    SecurityError. With `lazy`, returns at once and opens the stream on
    first need (publish_unary and the admin calls need none). `name` (at
    most 128 bytes of UTF-8, no control characters; InvalidRequestError
    otherwise) tells this client apart in the broker's Stats, `stats
    --sessions`/`--members` and log: it travels as the
    `tinybroker-client-name` metadata of every call. `options`:
    the Client's keywords (reconnect_max_attempts, max_queued, on_error,
    max_pending_publishes, publish_block, idempotent, randomize_servers). With
    `idempotent=True` every message gets a msg_id (unless it has one: 15
    bytes, 8 random bytes of the client and a counter) and
    the publishes unconfirmed when a connection is lost are sent again with
    the same ids after the reconnect: the broker confirms a copy it already
    routed as a duplicate (PublishResult.duplicate), so a lost connection
    neither loses nor doubles a message (within the broker's window)."""
    settings = named(resolve(server, token=token, token_file=token_file,
                             ca=ca, cert=cert, key=key,
                             tls_server_name=tls_server_name), name)
    return Client(settings, connect_timeout=timeout, lazy=lazy, **options)
