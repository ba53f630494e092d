"""Subscriptions: fan-out and group memberships, consumed by iterating or
through a callback; `Subscription` for the threaded client, and
`AsyncSubscription` for the asyncio one."""

import asyncio
import threading
from typing import (TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable,
                    Iterator, List, Optional, Sequence, Tuple, Union)

import grpc

from . import _check
from ._inbox import Inbox
from ._proto import tinybroker_pb2 as pb
from ._types import END, Delivery
from .errors import SubscribeError, TinybrokerError

if TYPE_CHECKING:  # pragma: no cover
    from .aio import AsyncClient
    from .client import Client

#: Called with each delivery of a callback subscription, on the client's
#: callback thread, in delivery order.
DeliveryCallback = Callable[[Delivery], None]
#: Called with how many messages the broker dropped for a slow subscriber.
DroppedCallback = Callable[[int], None]


class SubscriptionBase:
    """What the threaded and the asyncio subscription share."""

    def __init__(self, client: Any, sub_id: int, pattern: str, group: str,
                 max_in_flight: int, tags: Sequence[str], callback: Any,
                 on_dropped: Optional[DroppedCallback]) -> None:
        self._client = client
        #: The client-chosen subscription id.
        self.id = sub_id
        #: The pattern.
        self.pattern = pattern
        #: The group joined, or "" for fan-out.
        self.group = group
        #: Group members: the most unanswered deliveries held at once.
        self.max_in_flight = max_in_flight
        #: Group members: labels the group's policy may read.
        self.tags = list(tags)
        #: The delivery handler, or None for an iterated subscription.
        self.callback = callback
        #: Told how many messages the broker dropped for a slow subscriber.
        self.on_dropped = on_dropped
        #: How often the broker confirmed it (1 + the reconnects survived).
        self.times_subscribed = 0
        #: Messages the broker dropped unwritten: because this subscriber was
        #: slow, or because their TTL passed while they waited (those are
        #: also counted in `expired`).
        self.dropped = 0
        #: Of `dropped`, the messages whose TTL passed before they could be
        #: written (issue 29).
        self.expired = 0
        self._ended = False
        self._end_error: Optional[TinybrokerError] = None

    def _subscribe_message(self) -> "pb.Subscribe":
        """Its Subscribe message (alone in a frame, or in a batch)."""
        return pb.Subscribe(subscription_id=self.id, pattern=self.pattern,
                            group=self.group, max_in_flight=self.max_in_flight,
                            tags=self.tags)

    def _frame(self, request_id: int) -> "pb.ClientFrame":
        return pb.ClientFrame(request_id=request_id,
                              subscribe=self._subscribe_message())

    def _on_subscribed(self) -> None:
        self.times_subscribed += 1
        self._confirmed.set()  # type: ignore[attr-defined]

    def _on_disconnected(self) -> None:
        self._confirmed.clear()  # type: ignore[attr-defined]

    @property
    def active(self) -> bool:
        """True until the subscription ended."""
        return not self._ended

    @property
    def error(self) -> Optional[TinybrokerError]:
        """Why it ended, if not by unsubscribe or close."""
        return self._end_error

    def unsubscribe(self) -> None:
        """Ends it: no more deliveries or callbacks; group deliveries not yet
        taken are nacked so they move on at once. Deliveries already taken
        may still be answered (a worker can drain)."""
        self._client._unsubscribe(self)

    def __repr__(self) -> str:
        kind = f"group={self.group!r}, " if self.group else ""
        return (f"{type(self).__name__}(id={self.id}, {kind}"
                f"pattern={self.pattern!r})")


class Subscription(SubscriptionBase):
    """One fan-out subscription or group membership. Iterate it for its
    deliveries (the iteration ends after `unsubscribe` or the client's
    close, and raises SubscriptionEndedError when the broker ended it), or
    give `subscribe`/`join` a callback. Kept across reconnects: the client
    subscribes (rejoins) again on each new connection. Use it as a context
    manager to unsubscribe on exit."""

    def __init__(self, client: "Client", sub_id: int, pattern: str,
                 group: str, max_in_flight: int, tags: Sequence[str],
                 callback: Optional[DeliveryCallback],
                 on_dropped: Optional[DroppedCallback], max_queued: int) -> None:
        super().__init__(client, sub_id, pattern, group, max_in_flight, tags,
                         callback, on_dropped)
        self._inbox = Inbox(max_queued)
        self._confirmed = threading.Event()

    def _end(self, error: Optional[TinybrokerError]) -> None:
        """Ends it: queued group deliveries are nacked so they move on."""
        if self._ended:
            return
        self._end_error = error
        self._ended = True
        self._confirmed.set()
        for item in self._inbox.close(error, discard=True):
            if isinstance(item, Delivery):
                item.nack()

    # -- public ------------------------------------------------------------

    def wait_subscribed(self, timeout: Optional[float] = 10.0) -> None:
        """Waits until the broker confirmed it on the current connection.
        Raises SubscribeError if refused, SubscriptionEndedError if it ended,
        TimeoutError after `timeout` seconds."""
        if not self._confirmed.wait(timeout):
            raise TimeoutError(f"no answer to the subscribe to {self.pattern!r} "
                               f"within {timeout} s")
        if self._end_error is not None:
            raise self._end_error

    def get(self, timeout: Optional[float] = None) -> Optional[Delivery]:
        """Returns the next delivery; None once it ended by unsubscribe or
        close. Raises TimeoutError after `timeout` seconds, and the reason
        if the broker ended it."""
        if self.callback is not None:
            raise TypeError("this subscription hands its deliveries to its "
                            "callback")
        try:
            return self._inbox.get(timeout)
        except StopIteration:
            return None

    def __iter__(self) -> Iterator[Delivery]:
        return self

    def __next__(self) -> Delivery:
        item = self.get()
        if item is None:
            raise StopIteration
        return item

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()


#: A delivery handler: a plain function or a coroutine function.
AsyncDeliveryCallback = Callable[[Delivery], Union[None, Awaitable[None]]]


class AsyncSubscription(SubscriptionBase):
    """One fan-out subscription or group membership of an AsyncClient:
    `async for` its deliveries or `await get()`; `unsubscribe()` (or `async
    with`) ends it. Kept across reconnects, like the threaded one."""

    def __init__(self, client: "AsyncClient", sub_id: int, pattern: str,
                 group: str, max_in_flight: int, tags: Sequence[str],
                 callback: Optional[AsyncDeliveryCallback],
                 on_dropped: Optional[DroppedCallback],
                 max_queued: int) -> None:
        super().__init__(client, sub_id, pattern, group, max_in_flight, tags,
                         callback, on_dropped)
        self._queue: "asyncio.Queue[Any]" = asyncio.Queue(max(1, max_queued))
        self._confirmed = asyncio.Event()

    def _end(self, error: Optional[TinybrokerError]) -> None:
        if self._ended:
            return
        self._ended, self._end_error = True, error
        self._confirmed.set()
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, Delivery):
                item.nack()
        self._queue.put_nowait(END)

    async def wait_subscribed(self, timeout: Optional[float] = 10.0) -> None:
        """Waits for the broker's confirm; raises SubscribeError if refused,
        TimeoutError after `timeout` seconds."""
        try:
            await asyncio.wait_for(self._confirmed.wait(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer to the subscribe to "
                               f"{self.pattern!r} within {timeout} s") from None
        if self._end_error is not None:
            raise self._end_error

    async def get(self, timeout: Optional[float] = None) -> Optional[Delivery]:
        """The next delivery; None once ended by unsubscribe or close. Raises
        TimeoutError, or the reason the broker ended it."""
        if self.callback is not None:
            raise TypeError("this subscription hands its deliveries to its "
                            "callback")
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"nothing arrived within {timeout} s") from None
        if item is END:
            self._queue.put_nowait(END)  # for the next get
            if self._end_error is not None:
                raise self._end_error
            return None
        return item

    def __aiter__(self) -> AsyncIterator[Delivery]:
        return self

    async def __anext__(self) -> Delivery:
        item = await self.get()
        if item is None:
            raise StopAsyncIteration
        return item

    async def __aenter__(self) -> "AsyncSubscription":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.unsubscribe()


def check_patterns(patterns: Any) -> List[str]:
    """Returns the patterns of subscribe_many as a list of str. Raises
    TypeError for a lone string where subscribe_many wants a list (it would
    subscribe to each of its characters) or a pattern that is not str, and
    InvalidRequestError for one that is not UTF-8 (naming patterns[i])."""
    if isinstance(patterns, (str, bytes)):
        raise TypeError("subscribe_many takes a list of patterns, not one "
                        "string: use subscribe() for one pattern")
    return [_check.text(f"patterns[{at}]", pattern)
            for at, pattern in enumerate(patterns)]


def check_subscribe(pattern: Any, group: Any, tags: Any
                    ) -> Tuple[str, str, List[str]]:
    """Returns the pattern, group and tags of a subscribe or join as str.
    Raises TypeError or InvalidRequestError naming the field."""
    if isinstance(tags, (str, bytes)):
        raise TypeError("tags must be a list of str, not one string")
    return (_check.text("pattern", pattern), _check.text("group", group),
            [_check.text(f"tags[{at}]", tag) for at, tag in enumerate(tags)])


def fanout_maker(kind: Any, client: Any, pattern: str, callback: Any,
                 on_dropped: Optional[DroppedCallback], max_queued: int
                 ) -> Callable[[int], Any]:
    """Makes a fan-out subscription of class `kind` to `pattern` once given
    its id (for the clients' subscribe_many)."""
    return lambda sub_id: kind(client, sub_id, pattern, "", 0, (), callback,
                               on_dropped, max_queued)


def subscribe_error(sub: Any, error: "pb.Error",
                    code: grpc.StatusCode) -> SubscribeError:
    """Returns the error for a refused subscribe or join."""
    what = (f"join of group {sub.group!r} with pattern {sub.pattern!r}"
            if sub.group else f"subscribe to {sub.pattern!r}")
    return SubscribeError(f"{what} refused: {code.name} ({error.reason}): "
                          f"{error.message}", code, error.reason, sub.pattern,
                          sub.group or None)
