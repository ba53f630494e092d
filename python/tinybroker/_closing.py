"""How a client ends, for both clients (part of _core.Core): after a stream
ended, whether to reconnect (the backoff) or to close for good (a status no
attempt can fix, a first connection that failed, or reconnect_max_attempts
failed attempts in a row); reporting such a close once (a WARNING and
on_error) for wait_closed and final_error; and the shut-down that fails
what waits to be sent and ends every subscription."""

import logging
from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple

import grpc

from ._proto import tinybroker_pb2 as pb
from ._publishing import fail
from ._settings import Settings, is_permanent
from ._tls_diagnosis import connect_message
from .errors import (AuthError, ClientClosedError, ConnectError,
                     ConnectionLostError, SubscriptionEndedError,
                     TinybrokerError)

log = logging.getLogger("tinybroker")


def final_error(code: grpc.StatusCode, details: str) -> TinybrokerError:
    """The error a stream ended with for good (no reconnect)."""
    text = f"the broker ended the stream: {code.name}: {details}"
    if code in (grpc.StatusCode.UNAUTHENTICATED,
                grpc.StatusCode.PERMISSION_DENIED):
        return AuthError(text, code)
    return TinybrokerError(text, code)


class Closing:
    """Core's reconnect decision and closing bookkeeping. Core provides the
    state it reads: `_guard()`, `_set_state()`, `_state`, `_final` (the
    error it closed with), `_raises_first`, `_reporting`, the attempt
    counters, `_unsent` and `_subs`."""

    server: str
    _servers: List[str]
    _current: int
    _server_failures: Dict[str, Tuple[grpc.StatusCode, str]]
    _settings: Settings
    _backoff: Tuple[float, float]
    _max_attempts: int
    _on_error: Optional[Callable[[BaseException], None]]
    _state: str
    _final: Optional[TinybrokerError]
    _raises_first: bool
    _reporting: bool
    _connections: int
    _failures: int
    _unsent: List[Tuple[int, "pb.ClientFrame", Any]]
    _subs: Dict[int, Any]
    _guard: Callable[[], ContextManager[Any]]
    _set_state: Callable[[str], None]

    def _next_attempt(self, got_frame: bool, code: grpc.StatusCode,
                      details: str, closing: bool) -> Optional[float]:
        """After a stream ended: the backoff before the next attempt, or None
        to stop (closing, a permanent status, or given up: then shut down
        and reported, see _closed_for_good)."""
        with self._guard():
            self._failures = 0 if got_frame else self._failures + 1
            count = len(self._servers)
            if not got_frame:
                self._server_failures[self.server] = (code, details)
            # Issue 30: the next attempt goes to the next address (a lost
            # node is not waited for); the backoff is waited only after a
            # round in which every address failed.
            self._current = (self._current + 1) % count
            self.server = self._servers[self._current]
            if closing:
                return None
            # Never connected yet: each attempt so far failed.
            never = self._failures == self._connections
            error: Optional[TinybrokerError] = None
            if is_permanent(code):
                error = final_error(code, details)
            elif never and not got_frame and self._failures >= count:
                error = ConnectError(self._connect_failures(code, details),
                                     code)
            elif self._failures >= self._max_attempts * count:
                error = ConnectionLostError(
                    self._give_up_message(details),
                    grpc.StatusCode.UNAVAILABLE)
            if error is None:
                if count == 1:
                    return min(self._backoff[0] *
                               2 ** max(self._failures - 1, 0),
                               self._backoff[1])
                if got_frame or self._failures % count != 0:
                    return 0.0
                return min(self._backoff[0] *
                           2 ** (self._failures // count - 1),
                           self._backoff[1])
            first = never and not got_frame
            report = not (first and self._raises_first)
            # wait_closed returns only once the report is made.
            self._reporting = report
            self._shut_down(error)
        if report:
            self._closed_for_good(error)
            with self._guard():
                self._reporting = False
                self._set_state("closed")  # wakes wait_closed
        return None

    def _connect_failures(self, code: grpc.StatusCode, details: str) -> str:
        """The message of the ConnectError of a first connection that
        failed at every address: the one address's sentence, or "cannot
        reach any of the N brokers at A, B:" and each one's."""
        files = self._settings.tls_files
        if len(self._servers) == 1:
            return connect_message(self.server, files, code, details)
        lines = [connect_message(server, files, *self._server_failures.get(
            server, (code, details))) for server in self._servers]
        return (f"cannot reach any of the {len(self._servers)} brokers at "
                f"{', '.join(self._servers)}:\n  " + "\n  ".join(lines))

    def _give_up_message(self, details: str) -> str:
        """The message of giving up reconnecting (reconnect_max_attempts
        failed attempts at each address)."""
        if len(self._servers) == 1:
            return (f"gave up after {self._failures} failed attempt"
                    f"{'' if self._failures == 1 else 's'} to reach "
                    f"the broker at {self.server}: {details}")
        each = "; ".join(
            f"{server}: {self._server_failures[server][1]}"
            for server in self._servers if server in self._server_failures)
        return (f"gave up after {self._failures} failed attempts to reach "
                f"any of the {len(self._servers)} brokers at "
                f"{', '.join(self._servers)} (each tried "
                f"{self._failures // len(self._servers)} times): {each}")

    def _closed_for_good(self, error: TinybrokerError) -> None:
        """The client closed itself with `error` (gave up reconnecting, or
        a status no attempt can fix): a WARNING names it (the address and
        the attempts), and on_error gets it once, so that a consumer that
        only has callbacks does not stop silently. wait_closed raises it."""
        log.warning("tinybroker: the client closed for good: %s", error)
        if self._on_error is not None:
            try:
                self._on_error(error)
            except Exception:  # the handler's own error
                log.exception("tinybroker: on_error raised")

    def _first_failure(self, error: Optional[TinybrokerError],
                       timeout: float) -> TinybrokerError:
        """What connect() raises when the first stream did not connect
        within `timeout` seconds: the AuthError or ConnectError it closed
        with (`error`, read before closing), else a ConnectError saying that
        no answer came."""
        if isinstance(error, (AuthError, ConnectError)):
            return error
        where = (f"the broker at {self.server}" if len(self._servers) == 1
                 else f"any of the brokers at {', '.join(self._servers)}")
        return ConnectError(f"cannot reach {where}: no "
                            f"answer within {timeout} s",
                            grpc.StatusCode.UNAVAILABLE)

    def _check_open(self) -> None:
        if self._state == "closed" or self._closing_requested():
            if self._final is not None and not isinstance(
                    self._final, ClientClosedError):
                raise self._final
            raise ClientClosedError("the client is closed",
                                    grpc.StatusCode.FAILED_PRECONDITION)

    def _closing_requested(self) -> bool:
        raise NotImplementedError

    def _shut_down(self, error: Optional[TinybrokerError]) -> None:
        """Closes for good: fails what waits to be sent, ends every
        subscription (cleanly when `error` is None)."""
        with self._guard():
            self._final = error or ClientClosedError(
                "the client is closed", grpc.StatusCode.FAILED_PRECONDITION)
            unsent, self._unsent = self._unsent, []
            subs, self._subs = list(self._subs.values()), {}
            self._set_state("closed")
        for _, _, future in unsent:
            fail(future, error or ClientClosedError(
                "the client closed before the message was sent",
                grpc.StatusCode.CANCELLED))
        for sub in subs:
            if error is None or isinstance(error, (AuthError, ConnectError)):
                sub._end(error)  # as raised by connect()
            else:
                sub._end(SubscriptionEndedError(str(error), error.code,
                                                error.reason))

    def _closed_error(self) -> Optional[TinybrokerError]:
        """For wait_closed, once closed: the error it closed with for good,
        or None after close()."""
        if isinstance(self._final, ClientClosedError):
            return None
        return self._final

    @property
    def final_error(self) -> Optional[TinybrokerError]:
        """Once the client closed itself for good (gave up reconnecting:
        ConnectionLostError; the token refused: AuthError; ...): that error.
        None while it runs and after close()."""
        return self._closed_error() if self._state == "closed" else None
