"""What the threaded client (client.py) and the asyncio client (aio.py)
share: the bookkeeping of one Session stream at a time. It sends a probe
and every live subscription on each new stream, correlates confirms and
errors with their requests, fails what was sent but not confirmed when a
stream ends, and decides whether to reconnect (as the C++ async_client
does: backoff from 0.1 s doubling to 2 s, 20 failed attempts in a row at
most, no retry after INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED or
UNIMPLEMENTED). The subclasses bring the threads or tasks, a lock (or none)
and the futures. Its parts: the subscriptions (_subscribing.py), the queue
of publishes (_publishing.py), and the reconnect decision and closing
(_closing.py)."""

import contextlib
import logging
import secrets
from typing import (Any, Callable, ContextManager, Dict, List, Mapping,
                    Optional, Tuple)

import grpc

from ._closing import Closing
from ._limits import LimitCache
from ._proto import tinybroker_pb2 as pb
from ._publishing import PublishQueue, fail, resolve
from ._servers import ordered
from ._settings import Settings
from ._subscribing import Subscribing
from ._types import END, Delivery, PublishResult, answer_frame
from .errors import (ConnectionLostError, SubscriptionEndedError,
                     TinybrokerError, code_from_number)
from .subscription import subscribe_error

log = logging.getLogger("tinybroker")


class Core(Subscribing, Closing, PublishQueue):
    """The shared state machine; see the module's comment."""

    def __init__(self, settings: Settings, reconnect_initial_backoff: float,
                 reconnect_max_backoff: float, reconnect_max_attempts: int,
                 max_queued: int, close_timeout: float,
                 on_error: Optional[Callable[[BaseException], None]],
                 max_pending_publishes: int = 16384,
                 publish_block: float = 10.0,
                 idempotent: bool = False,
                 randomize_servers: bool = True) -> None:
        # Every address given (issue 30), shuffled unless told not to; the
        # one in use or tried now, and the last failure of each.
        self._servers = ordered(settings.servers or [settings.server],
                                randomize_servers)
        self._current = 0
        #: The broker's HOST:PORT: of several, the one the client is
        #: connected to or tries now.
        self.server = self._servers[0]
        self._server_failures: Dict[str, Tuple[grpc.StatusCode, str]] = {}
        self._settings = settings
        self._backoff = (reconnect_initial_backoff, reconnect_max_backoff)
        self._max_attempts = max(1, reconnect_max_attempts)
        self._max_queued = max_queued
        self._max_pending_publishes = max(1, max_pending_publishes)
        self._publish_block = publish_block
        self._pending_publishes = 0  # messages queued or awaiting a confirm
        self._close_timeout = close_timeout
        self._on_error = on_error
        self._state = "connecting"
        self._final: Optional[TinybrokerError] = None
        # Whether connect() waits for the first stream and raises its
        # failure itself (so that it is not reported again; not lazy).
        self._raises_first = False
        # True while a give-up is being logged and given to on_error.
        self._reporting = False
        self._generation = 0
        self._connections = 0
        self._failures = 0
        self._out: Any = None  # the current stream's frame queue
        self._unsent: List[Tuple[int, "pb.ClientFrame", Any]] = []
        self._pending: Dict[int, Any] = {}
        self._subs: Dict[int, Any] = {}
        # request_id of each SubscribeBatch frame on the current stream not
        # yet answered -> the ids it carries.
        self._batches: Dict[int, List[int]] = {}
        self._next_request = 0
        self._next_sub = 0
        # The broker's size limits, from its Info reply (_limits.py).
        self._limit_cache = LimitCache()
        # Idempotent publishing (issue 28): msg_ids are this client's 8
        # random bytes and a 7-byte counter (15 bytes, as the C++ client's);
        # unconfirmed frames are sent again after a reconnect (see _ended).
        self._idempotent = idempotent
        self._id_prefix = secrets.token_bytes(8)
        self._next_msg_id = 0
        #: Messages queued again after a lost connection (idempotent).
        self.republished = 0

    @property
    def servers(self) -> List[str]:
        """Every address given, in the order they are tried."""
        return list(self._servers)

    # -- what the subclasses provide -----------------------------------------
    # (and _room_freed, _closing_requested: see PublishQueue, Closing)

    def _guard(self) -> ContextManager[Any]:
        """The lock around the shared state (none on asyncio)."""
        return contextlib.nullcontext()

    def _set_state(self, state: str) -> None:
        self._state = state

    def _new_future(self) -> Any:
        raise NotImplementedError

    # -- streams -------------------------------------------------------------

    def _next_request_id(self) -> int:
        self._next_request += 1
        return self._next_request

    def _open(self, out: Any) -> int:
        """Queues the probe and every live subscription on a new stream's
        queue `out`; returns the stream's generation."""
        with self._guard():
            self._generation += 1
            self._connections += 1
            # The probe: an empty publish whose confirm (or any frame) shows
            # that the broker serves the stream; publishes wait for it.
            out.put_nowait(pb.ClientFrame(request_id=self._next_request_id(),
                                          publish=pb.Publish(confirm=True)))
            self._batches.clear()
            for frame in self._subscribe_frames(list(self._subs.values())):
                out.put_nowait(frame)
            self._out = out
            return self._generation

    def _on_established(self, generation: int) -> None:
        """The broker answered on the stream: send what waited."""
        with self._guard():
            if generation != self._generation or self._out is None:
                return
            self._failures = 0
            for request_id, frame, future in self._unsent:
                self._pending[request_id] = future
                self._out.put_nowait(frame)
            self._unsent.clear()
            self._set_state("connected")

    def _ended(self, out: Any, code: grpc.StatusCode, details: str) -> None:
        """The stream of queue `out` ended: fails what was sent but not
        confirmed (the broker may or may not have routed it)."""
        with self._guard():
            out.put_nowait(END)
            self._out = None
            pending, self._pending = self._pending, {}
            for sub in self._subs.values():
                sub._on_disconnected()
            if self._state != "closed":
                self._set_state("connecting")
            if (self._idempotent and self._state != "closed"
                    and not self._closing_requested()):
                # Sent again, with the same msg_ids, once the stream is
                # back (or failed if the client gives up): the broker
                # confirms what it routed already as a duplicate.
                again = [(rid, future.frame, future)
                         for rid, future in sorted(pending.items())
                         if getattr(future, "frame", None) is not None]
                self._unsent[:0] = again
                self.republished += sum(f.count for _, _, f in again)
                pending = {}
        error = ConnectionLostError(
            f"the connection to {self.server} was lost before the confirm "
            f"({code.name}: {details}); the message may or may not be routed",
            grpc.StatusCode.UNAVAILABLE)
        for future in pending.values():
            fail(future, error)

    # -- frames from the broker ----------------------------------------------

    def _handle(self, frame: "pb.ServerFrame", generation: int
                ) -> List[Tuple[Any, Any]]:
        """Handles `frame`; returns the hand-overs the caller makes (and may
        wait for): (subscription, Delivery) and (on_dropped, count)."""
        kind = frame.WhichOneof("kind")
        out: List[Tuple[Any, Any]] = []
        if kind == "deliveries":
            for wire in frame.deliveries.deliveries:
                sub = self._subs.get(wire.subscription_id)
                delivery = Delivery(wire, self._answer, generation, sub)
                if sub is None or not sub.active:
                    delivery.nack()  # unsubscribed meanwhile: let it move on
                else:
                    out.append((sub, delivery))
        elif kind == "publish_confirm":
            with self._guard():
                future = self._pending.pop(frame.publish_confirm.request_id,
                                           None)
            if future is not None:
                resolve(future, [PublishResult.from_proto(r)
                                 for r in frame.publish_confirm.results])
        elif kind == "subscribed":
            sub = self._subs.get(frame.subscribed.subscription_id)
            if sub is not None:
                sub._on_subscribed()
        elif kind == "subscribed_batch":
            answer = frame.subscribed_batch
            with self._guard():
                self._batches.pop(answer.request_id, None)
                subs = [self._subs.get(i) for i in answer.subscription_ids]
            for sub in subs:
                if sub is not None:
                    sub._on_subscribed()
        elif kind == "unsubscribed":
            notice = frame.unsubscribed
            with self._guard():
                sub = self._subs.pop(notice.subscription_id, None)
            if sub is not None:
                sub._end(SubscriptionEndedError(
                    f"the broker ended the subscription to {sub.pattern!r}: "
                    f"{notice.reason}", grpc.StatusCode.ABORTED)
                    if notice.reason else None)
        elif kind == "dropped":
            sub = self._subs.get(frame.dropped.subscription_id)
            if sub is not None:
                sub.dropped += frame.dropped.count
                if frame.dropped.reason == "expired":
                    sub.expired += frame.dropped.count
                if sub.on_dropped is not None:
                    out.append((sub.on_dropped, frame.dropped.count))
        elif kind == "error":
            self._on_error_frame(frame.error)
        return out

    def _on_error_frame(self, error: "pb.ErrorFrame") -> None:
        code = code_from_number(error.error.code)
        if (error.request == "subscribe" and error.subscription_id == 0
                and self._resend_batch(error.request_id, error.error)):
            return
        with self._guard():
            future = self._pending.pop(error.request_id, None)
            sub = (self._subs.pop(error.subscription_id, None)
                   if error.request == "subscribe" else None)
        if future is not None:  # the whole publish was refused
            resolve(future, [PublishResult(0, code, error.error.reason,
                                           error.error.message)]
                    * future.count)
        elif sub is not None:
            sub._end(subscribe_error(sub, error.error, code))
        else:
            self._report(TinybrokerError(
                f"{error.request} refused: {code.name} ({error.error.reason}):"
                f" {error.error.message}", code, error.error.reason))

    def _answer(self, kind: str, delivery_id: int, requeue: bool,
                delay_ms: int, generation: int) -> bool:
        """Queues an answer on the stream that carried the delivery."""
        with self._guard():
            if generation != self._generation or self._out is None:
                return False
            self._out.put_nowait(answer_frame(kind, [delivery_id], delay_ms))
            return True

    def _send_reply(self, handle: int, payload: bytes,
                    headers: Mapping[str, str], generation: int) -> bool:
        """Queues a Reply frame on the stream that carried the request."""
        with self._guard():
            if generation != self._generation or self._out is None:
                return False
            self._out.put_nowait(pb.ClientFrame(reply=pb.Reply(
                reply_handle=handle, payload=payload, headers=dict(headers))))
            return True

    def _report(self, error: BaseException) -> None:
        """An error that belongs to no request: on_error, else the log."""
        if self._on_error is not None:
            try:
                self._on_error(error)
                return
            except Exception:
                pass
        log.error("tinybroker: %s", error)

    # -- state ---------------------------------------------------------------

    @property
    def state(self) -> str:
        """"connecting", "connected" or "closed"."""
        return self._state

    @property
    def connections(self) -> int:
        """Streams opened so far (1 + reconnect attempts)."""
        return self._connections

    @property
    def name(self) -> Optional[str]:
        """The client's name (connect's `name`), or None."""
        return self._settings.name

    @property
    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The call metadata (the authorization header, if any)."""
        return self._settings.metadata
