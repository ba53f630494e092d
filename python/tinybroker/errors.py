"""The exceptions of the tinybroker client.

Every exception derives from `TinybrokerError`, which carries the gRPC status
code (`code`, a `grpc.StatusCode`), the broker's machine-readable `reason`
(such as ``"invalid_pattern"``; empty when the client raised it itself) and
the sentence that names the problem (`str(err)`).
"""

from typing import TYPE_CHECKING, List, Optional

import grpc

if TYPE_CHECKING:  # pragma: no cover
    from ._types import PublishResult

__all__ = [
    "TinybrokerError", "ConnectError", "ConnectionLostError",
    "ClientClosedError", "PublishQueueFullError", "AuthError",
    "SecurityError", "InvalidRequestError", "MessageTooLargeError",
    "PublishError",
    "SubscribeError", "SubscriptionEndedError", "BrokerError",
    "code_from_number",
]


def code_from_number(number: int) -> grpc.StatusCode:
    """Returns the `grpc.StatusCode` whose number is `number` (UNKNOWN if
    there is none)."""
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


class TinybrokerError(Exception):
    """Base of every error the client raises."""

    def __init__(self, message: str,
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 reason: str = "") -> None:
        super().__init__(message)
        #: The gRPC status code of the problem.
        self.code = code
        #: The broker's machine-readable reason ("invalid_topic", ...), or "".
        self.reason = reason

    @property
    def message(self) -> str:
        """The sentence naming the problem."""
        return str(self.args[0]) if self.args else ""


class ConnectError(TinybrokerError, ConnectionError):
    """`connect()` could not reach the broker (refused, unknown host, TLS
    handshake failed, or no answer within the timeout)."""


class ConnectionLostError(TinybrokerError, ConnectionError):
    """The connection ended before the answer came (a publish sent but not
    confirmed: the broker may or may not have routed it), or the client gave
    up reconnecting."""


class ClientClosedError(TinybrokerError):
    """The client was closed (or closed itself for good) before the call."""


class PublishQueueFullError(TinybrokerError):
    """RESOURCE_EXHAUSTED: `max_pending_publishes` messages were queued or
    awaiting their confirm (the broker is down or slow) for longer than
    `publish_block`; nothing of the refused publish was sent."""


class AuthError(TinybrokerError):
    """The broker refused the token: UNAUTHENTICATED (no, wrong or revoked
    token) or PERMISSION_DENIED (ends the stream; see docs/security.md)."""


class SecurityError(TinybrokerError, ValueError):
    """Token or TLS settings that cannot be used (an unreadable file, a
    certificate without its key); names the file or setting, never the
    token."""


class InvalidRequestError(TinybrokerError, ValueError):
    """INVALID_ARGUMENT raised by the client before sending anything: a
    topic, pattern, group name, tag, key or header that is not text the
    broker can read (a str that is not valid UTF-8, such as one with lone
    surrogates; bytes that are not UTF-8), or a client name that is too long
    or holds control characters. The message names the field, as the C++
    client's `invalid_request` does. The stream goes on."""


class MessageTooLargeError(TinybrokerError, ValueError):
    """RESOURCE_EXHAUSTED raised by the client before sending anything: a
    message is larger than the broker's limits.max_message_bytes (read with
    the Info call), or a publish frame larger than what the broker reads in
    one gRPC message. The message names the limit; nothing was sent and the
    stream goes on."""


class BrokerError(TinybrokerError):
    """A unary call (create_group, delete_group, list_groups, stats) failed
    with the broker's status."""


class NoRespondersError(BrokerError):
    """A request found nobody to answer it (UNAVAILABLE, reason
    no_responders): no subscriber of its topic, or no member of its group,
    at the moment it was sent. Raised at once, not after the timeout."""


class RequestTimeoutError(BrokerError, TimeoutError):
    """No reply to a request came within its timeout (DEADLINE_EXCEEDED)."""


class PublishError(TinybrokerError):
    """The broker refused one or more messages of a publish. `results` holds
    every message's outcome in publish order (the others were routed)."""

    def __init__(self, message: str, results: "List[PublishResult]",
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 reason: str = "") -> None:
        super().__init__(message, code, reason)
        #: One result per published message, in order.
        self.results = results

    @property
    def failed(self) -> "List[PublishResult]":
        """The refused messages' results."""
        return [r for r in self.results if not r.ok]


class SubscribeError(TinybrokerError):
    """The broker refused a subscribe or join: INVALID_ARGUMENT (bad pattern
    or group name), FAILED_PRECONDITION (the group has another pattern),
    NOT_FOUND (unknown group, auto-create off), RESOURCE_EXHAUSTED (too many
    subscriptions), PERMISSION_DENIED (the token may not)."""

    def __init__(self, message: str,
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 reason: str = "", pattern: str = "",
                 group: Optional[str] = None) -> None:
        super().__init__(message, code, reason)
        #: The pattern that was refused.
        self.pattern = pattern
        #: The group, for a join.
        self.group = group


class SubscriptionEndedError(TinybrokerError):
    """A subscription ended for a reason other than unsubscribe or close:
    ABORTED when the broker ended it (the group was deleted), UNAVAILABLE
    when the client gave up reconnecting, or the stream's final status."""
