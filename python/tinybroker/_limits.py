"""The broker's size limits as the clients apply them before sending
(issue 26, point 3): a message larger than the broker's
limits.max_message_bytes (read once with the Info call) is refused with
MessageTooLargeError naming the limit, and publish frames hold at most
limits.max_publish_batch messages and FRAME_BYTES of them (a larger
message goes alone), so that no frame exceeds what the broker's gRPC
server reads (net/grpc_settings.hpp) and tears the stream down."""

import time
from dataclasses import dataclass
from typing import List, Optional

import grpc

from ._proto import tinybroker_pb2 as pb
from .errors import MessageTooLargeError

#: The broker's default limits.max_publish_batch.
MAX_PUBLISH_BATCH = 4096
#: The most bytes the client puts in one publish frame: under the 64 MiB
#: that every broker reads (brokers since issue 26 read more, see
#: net/grpc_settings.hpp), with room for the frame's own fields.
FRAME_BYTES = (64 << 20) - (64 << 10)
#: What a message adds to a frame beyond its own bytes (tag and length).
_ENTRY_BYTES = 8
#: How long after a failed Info call the client asks again.
RETRY_AFTER = 5.0


@dataclass
class Limits:
    """What the client knows of the broker's limits."""

    #: limits.max_message_bytes; 0 while unknown (nothing is refused).
    max_message_bytes: int = 0
    #: limits.max_publish_batch.
    max_publish_batch: int = MAX_PUBLISH_BATCH


def message_size(message: "pb.Message") -> int:
    """The size that counts against max_message_bytes: payload, key, and
    header names and values (as the broker counts it)."""
    size = len(message.payload) + len(message.key.encode("utf-8"))
    for name, value in message.headers.items():
        size += len(name.encode("utf-8")) + len(value.encode("utf-8"))
    return size


class LimitCache:
    """The limits from the broker's Info reply, asked once (again after
    RETRY_AFTER when the call failed: the broker was down)."""

    def __init__(self) -> None:
        self.limits: Optional[Limits] = None
        self._failed_at = 0.0

    def wanted(self) -> bool:
        """Whether to call Info now."""
        return self.limits is None and \
            time.monotonic() - self._failed_at >= RETRY_AFTER

    def known(self) -> Limits:
        """The limits known so far (the defaults while unknown)."""
        return self.limits or Limits()

    def answered(self, reply: "pb.InfoReply") -> None:
        """Records the Info reply."""
        self.limits = Limits(int(reply.max_message_bytes),
                             int(reply.max_publish_batch) or MAX_PUBLISH_BATCH)

    def failed(self, err: grpc.RpcError) -> None:
        """Records a failed Info call (UNIMPLEMENTED: an older broker, whose
        defaults are assumed)."""
        if err.code() == grpc.StatusCode.UNIMPLEMENTED:
            self.limits = Limits()
        else:
            self._failed_at = time.monotonic()


def check_sizes(protos: List["pb.Message"], limits: Limits,
                server: str) -> None:
    """Raises MessageTooLargeError for the first message over
    max_message_bytes (nothing is sent)."""
    most = limits.max_message_bytes
    if most <= 0:
        return
    for at, message in enumerate(protos):
        size = message_size(message)
        if size > most:
            raise MessageTooLargeError(
                f"messages[{at}] to {message.topic!r} has {size} bytes "
                f"(payload, headers and key); the broker at {server} takes at "
                f"most {most} (limits.max_message_bytes); nothing was sent",
                grpc.StatusCode.RESOURCE_EXHAUSTED, "message_too_large")


def frames(protos: List["pb.Message"], limits: Limits
           ) -> List[List["pb.Message"]]:
    """Splits a publish into frames of at most max_publish_batch messages
    and FRAME_BYTES bytes (a larger message alone); one empty frame for an
    empty publish."""
    out: List[List["pb.Message"]] = [[]]
    size = 0
    for message in protos:
        bytes_ = message.ByteSize() + _ENTRY_BYTES
        current = out[-1]
        if current and (len(current) >= limits.max_publish_batch
                        or size + bytes_ > FRAME_BYTES):
            out.append([])
            current, size = out[-1], 0
        current.append(message)
        size += bytes_
    return out
