"""A bounded, closable FIFO between the reader thread and the consumer of a
subscription (or the callback thread)."""

import collections
import threading
import time
from typing import Any, Deque, Optional

_NOTHING = object()


class Inbox:
    """A bounded queue whose `put` waits for room (so a consumer that does
    not keep up stops the reader, and the broker buffers) and that ends with
    `close(error)`; items queued before the close are still handed out."""

    def __init__(self, maxsize: int) -> None:
        self._items: Deque[Any] = collections.deque()
        self._maxsize = max(1, maxsize)
        self._cond = threading.Condition()
        self._closed = False
        self._error: Optional[BaseException] = None

    def put(self, item: Any, abandon: Optional[threading.Event] = None) -> bool:
        """Queues `item`, waiting while full; False if closed (or `abandon`
        was set) first."""
        with self._cond:
            while len(self._items) >= self._maxsize and not self._closed:
                if abandon is not None and abandon.is_set():
                    return False
                self._cond.wait(0.05)
            if self._closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def get(self, timeout: Optional[float] = None) -> Any:
        """Returns the next item; raises the close error, or StopIteration
        once closed cleanly and empty, or TimeoutError after `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                if self._closed:
                    if self._error is not None:
                        raise self._error
                    raise StopIteration
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"nothing arrived within {timeout} s")
                self._cond.wait(remaining)
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def close(self, error: Optional[BaseException] = None,
              discard: bool = False) -> list:
        """Ends the inbox; returns the items discarded when `discard`."""
        with self._cond:
            if not self._closed:
                self._closed = True
                self._error = error
            dropped = []
            if discard:
                dropped = list(self._items)
                self._items.clear()
            self._cond.notify_all()
            return dropped

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
