"""The subscription side of the clients' shared state machine (_core.py):
registering subscriptions, the frames that make them (SubscribeBatch frames
for several), the batches awaiting their answer, and unsubscribing."""

import logging
from typing import Any, Callable, ContextManager, Dict, List

from ._proto import tinybroker_pb2 as pb

log = logging.getLogger("tinybroker")

#: Subscriptions sent in one SubscribeBatch frame at most: well under the
#: broker's default limits.max_subscribe_batch (4096). A broker configured
#: lower refuses the whole frame; the client then sends its entries one by
#: one.
SUBSCRIBE_BATCH = 256


class Subscribing:
    """Core's subscription bookkeeping. Core provides the state it reads:
    `_guard()`, `_check_open()`, `_next_request_id()`, `_subs` (id ->
    subscription), `_batches`, `_next_sub` and `_out` (the current stream's
    frame queue, or None)."""

    _subs: Dict[int, Any]
    _batches: Dict[int, List[int]]
    _next_sub: int
    _out: Any
    _guard: Callable[[], ContextManager[Any]]
    _check_open: Callable[[], None]
    _next_request_id: Callable[[], int]

    def _add_subscription(self, make: Callable[[int], Any]) -> Any:
        """Registers the subscription `make(id)` and sends its subscribe."""
        return self._add_subscriptions([make])[0]

    def _add_subscriptions(self, makes: List[Callable[[int], Any]]
                           ) -> List[Any]:
        """Registers the subscriptions `make(id)` of `makes` and sends them
        in SubscribeBatch frames (a lone one as a Subscribe frame)."""
        with self._guard():
            self._check_open()
            subs = []
            for make in makes:
                self._next_sub += 1
                sub = make(self._next_sub)
                self._subs[sub.id] = sub
                subs.append(sub)
            if self._out is not None:
                for frame in self._subscribe_frames(subs):
                    self._out.put_nowait(frame)
            return subs

    def _subscribe_frames(self, subs: List[Any]) -> List["pb.ClientFrame"]:
        """The frames that subscribe `subs` (under the guard): one Subscribe
        frame for a lone subscription, else SubscribeBatch frames of at most
        SUBSCRIBE_BATCH entries, each remembered until its answer."""
        if len(subs) == 1:
            return [subs[0]._frame(self._next_request_id())]
        frames = []
        for at in range(0, len(subs), SUBSCRIBE_BATCH):
            chunk = subs[at:at + SUBSCRIBE_BATCH]
            request_id = self._next_request_id()
            self._batches[request_id] = [sub.id for sub in chunk]
            frames.append(pb.ClientFrame(
                request_id=request_id,
                subscribe_batch=pb.SubscribeBatch(subscriptions=[
                    sub._subscribe_message() for sub in chunk])))
        return frames

    def _resend_batch(self, request_id: int, error: "pb.Error") -> bool:
        """The broker refused the whole SubscribeBatch `request_id` (it is
        configured with a lower limits.max_subscribe_batch): sends its live
        entries one frame each. False if `request_id` is no batch of this
        stream."""
        with self._guard():
            ids = self._batches.pop(request_id, None)
            if ids is None:
                return False
            log.info("the broker refused a batch of %d subscribes (%s: %s); "
                     "sending them one by one", len(ids), error.reason,
                     error.message)
            if self._out is not None:
                for sub_id in ids:
                    sub = self._subs.get(sub_id)
                    if sub is not None:
                        self._out.put_nowait(
                            sub._frame(self._next_request_id()))
        return True

    def _unsubscribe(self, sub: Any) -> None:
        with self._guard():
            if self._subs.pop(sub.id, None) is not None and self._out is not None:
                self._out.put_nowait(pb.ClientFrame(
                    request_id=self._next_request_id(),
                    unsubscribe=pb.Unsubscribe(subscription_id=sub.id)))
        sub._end(None)
