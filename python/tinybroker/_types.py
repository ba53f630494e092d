"""Messages, publish results and deliveries, shared by the threaded client
(tinybroker.client) and the asyncio client (tinybroker.aio)."""

import asyncio
import datetime
import queue
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Tuple, Union)

import grpc

from . import _check
from ._proto import tinybroker_pb2 as pb
from .errors import InvalidRequestError, PublishError, code_from_number

#: Ends a queue: a stream's frame queue (half-close) or a subscription's
#: delivery queue (ended).
END = object()

#: Delivery ids merged into one answer frame at most.
MAX_ANSWER_BATCH = 512

__all__ = ["Message", "PublishResult", "Delivery", "MessageLike"]

Payload = Union[bytes, bytearray, memoryview, str]


@dataclass
class Message:
    """A message to publish: topic, payload (str is sent as UTF-8), optional
    headers and key (sticky routing in key_hash groups), and optionally
    (issue 29): `ttl` in seconds (dropped or dead-lettered once it waited
    that long for a delivery), `delay` in seconds or `not_before` (a
    datetime, or seconds since the Unix epoch) to deliver it not before
    then, and `priority` 0 to 9 (higher first among a group's waiting
    messages)."""

    topic: str
    payload: Payload = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    key: str = ""
    ttl: float = 0
    delay: float = 0
    not_before: "Optional[Union[float, datetime.datetime]]" = None
    priority: int = 0
    #: Optional de-duplication id (at most 128 bytes): a second message with
    #: it on the same topic within the broker's window is confirmed as a
    #: duplicate and routed nowhere. Any bytes; a str is sent as its UTF-8
    #: bytes (so "order-1" and b"order-1" are the same id). Given by an
    #: idempotent client if empty (15 bytes, see generated_msg_id).
    msg_id: "bytes | str" = b""

    def to_proto(self, field: str = "message") -> "pb.Message":
        """Returns the wire form. Raises TypeError for a payload that is not
        bytes-like or str (or a msg_id that is not bytes-like or str, a
        topic, key or header that is not str, or a time or priority that is
        not a number) and InvalidRequestError for
        text that is not UTF-8, a negative time, a priority outside 0-9 or
        both delay and not_before; `field` names the message in all."""
        if self.delay and self.not_before is not None:
            raise InvalidRequestError(
                f"{field} sets both delay and not_before; set one of them",
                grpc.StatusCode.INVALID_ARGUMENT)
        return pb.Message(
            topic=_check.text(f"{field}.topic", self.topic),
            payload=_check.payload(f"{field}.payload", self.payload),
            headers=_check.headers(f"{field}.headers", self.headers),
            key=_check.text(f"{field}.key", self.key),
            ttl_ms=_check.millis(f"{field}.ttl", self.ttl),
            delay_ms=_check.millis(f"{field}.delay", self.delay),
            not_before_unix_ms=_check.unix_millis(f"{field}.not_before",
                                                  self.not_before),
            priority=_check.priority(f"{field}.priority", self.priority),
            msg_id=_check.payload(f"{field}.msg_id", self.msg_id))


#: The length of the msg_ids an idempotent client generates, in bytes.
GENERATED_MSG_ID_BYTES = 15


def generated_msg_id(prefix: bytes, number: int) -> bytes:
    """The msg_id numbered `number` of an idempotent client whose random
    prefix is `prefix` (8 bytes): the prefix and the low 56 bits of the
    number, big-endian; 15 bytes, as the C++ client's (client/msg_id.hpp)."""
    return prefix + (number & 0xFFFFFFFFFFFFFF).to_bytes(7, "big")


#: What publish_many takes per message: a Message, or (topic, payload) or
#: (topic, payload, headers) or (topic, payload, headers, key).
MessageLike = Union[Message, Tuple[Any, ...]]


def to_proto_messages(messages: Iterable[MessageLike]) -> List["pb.Message"]:
    """Returns the wire form of each message."""
    out = []
    if isinstance(messages, (str, bytes, Message)):
        raise TypeError("publish_many takes a list of messages, not one "
                        "message: use publish() for one")
    for at, m in enumerate(messages):
        if not isinstance(m, Message):
            if not isinstance(m, (tuple, list)) or not 1 <= len(m) <= 4:
                raise TypeError(f"messages[{at}] must be a Message or a "
                                f"(topic, payload[, headers[, key]]) tuple, "
                                f"not {type(m).__name__}")
            m = Message(*m)
        out.append(m.to_proto(f"messages[{at}]"))
    return out


@dataclass(frozen=True)
class PublishResult:
    """The outcome of one published message."""

    #: The id the broker gave the message; 0 when it was refused (a message
    #: refused only by a full group has an id and an error).
    id: int
    #: OK, or the broker's status code for this message.
    code: grpc.StatusCode = grpc.StatusCode.OK
    #: The broker's machine-readable reason ("invalid_topic", ...), or "".
    reason: str = ""
    #: The broker's sentence naming the problem, or "".
    message: str = ""
    #: True when the broker had seen the message's msg_id on its topic
    #: within its window (a retry): not routed again; `id` is the first's.
    duplicate: bool = False

    @property
    def ok(self) -> bool:
        """True when the broker accepted the message everywhere."""
        return self.code == grpc.StatusCode.OK

    @staticmethod
    def from_proto(result: "pb.PublishResult") -> "PublishResult":
        """Returns the result of one wire PublishResult."""
        if not result.HasField("error"):
            return PublishResult(result.id, duplicate=result.duplicate)
        e = result.error
        return PublishResult(result.id, code_from_number(e.code), e.reason,
                             e.message)


def check_results(results: List[PublishResult]) -> List[int]:
    """Returns the ids, or raises PublishError naming the first refusal."""
    failed = [r for r in results if not r.ok]
    if not failed:
        return [r.id for r in results]
    first = failed[0]
    where = results.index(first)
    raise PublishError(
        f"{len(failed)} of {len(results)} messages refused; message {where}: "
        f"{first.code.name} ({first.reason}): {first.message}",
        results, first.code, first.reason)


#: Sends one answer: (kind, delivery id, requeue, delay_ms, generation) ->
#: whether it was queued for the connection that carried the delivery.
AnswerSink = Callable[[str, int, bool, int, int], bool]


class Delivery:
    """A delivered message. Group deliveries take one answer (`ack`, `nack`
    or `reject`; `in_progress` as often as needed before that); fan-out
    deliveries take none. Answers only queue a frame, so they never block,
    and are coalesced with others into one frame."""

    __slots__ = ("_wire", "_sink", "_generation", "_answered", "subscription")

    def __init__(self, wire: "pb.Delivery", sink: AnswerSink, generation: int,
                 subscription: Any) -> None:
        self._wire = wire
        self._sink = sink
        self._generation = generation
        self._answered = False
        #: The Subscription it came on.
        self.subscription = subscription

    @property
    def topic(self) -> str:
        """The topic the message was published to."""
        return self._wire.topic

    @property
    def payload(self) -> bytes:
        """The payload as published."""
        return self._wire.payload

    @property
    def text(self) -> str:
        """The payload decoded as UTF-8."""
        return self._wire.payload.decode("utf-8")

    @property
    def headers(self) -> Dict[str, str]:
        """The headers (dead letters add x-tinybroker-* headers)."""
        return dict(self._wire.headers)

    @property
    def key(self) -> str:
        """The key as published."""
        return self._wire.key

    @property
    def message_id(self) -> int:
        """The broker-wide message id (increasing in acceptance order)."""
        return self._wire.message_id

    @property
    def accepted_unix_nanos(self) -> int:
        """Acceptance time in nanoseconds since the Unix epoch."""
        return self._wire.accepted_unix_nanos

    @property
    def priority(self) -> int:
        """The priority it was published with (0 to 9; 0 when none)."""
        return self._wire.priority

    @property
    def delivery_id(self) -> int:
        """Group deliveries: the id answers name (0 for fan-out)."""
        return self._wire.delivery_id

    @property
    def attempt(self) -> int:
        """Group deliveries: 1 on first delivery, counting up."""
        return self._wire.attempt

    @property
    def is_group(self) -> bool:
        """True for a consumer-group delivery (one that takes an answer)."""
        return self._wire.delivery_id != 0

    @property
    def answered(self) -> bool:
        """True once acked, nacked or rejected."""
        return self._answered

    @property
    def wire(self) -> "pb.Delivery":
        """The delivery as received (tinybroker.v1.Delivery)."""
        return self._wire

    def _answer(self, kind: str, requeue: bool = False, delay_ms: int = 0,
                final: bool = True) -> bool:
        if not self.is_group or self._answered:
            return False
        if final:
            self._answered = True
        return self._sink(kind, self._wire.delivery_id, requeue, delay_ms,
                          self._generation)

    def ack(self) -> bool:
        """Acks: the message is done. False when there is nothing to answer
        (fan-out, answered already) or the connection that carried it is
        gone (the broker then redelivers it)."""
        return self._answer("ack")

    def nack(self, delay: float = 0.0) -> bool:
        """Nacks with requeue: redelivered after `delay` seconds (0: at
        once). False as for `ack`."""
        return self._answer("nack", True, max(0, int(round(delay * 1000))))

    def reject(self) -> bool:
        """Rejects: to the group's dead letter topic at once. False as for
        `ack`."""
        return self._answer("reject")

    def in_progress(self) -> bool:
        """Pushes the ack deadline back by the group's ack_wait. False as for
        `ack`."""
        return self._answer("in_progress", final=False)

    @property
    def is_request(self) -> bool:
        """True for a request (request/reply): answer it with `reply`."""
        return self._wire.reply_handle != 0

    def reply(self, payload: Payload = b"",
              headers: Optional[Mapping[str, str]] = None) -> bool:
        """Replies to a request: the reply goes to the caller alone and, for
        a group delivery, acks it. False when it is no request, was answered
        already, or the connection that carried it is gone."""
        if not self.is_request or self._answered:
            return False
        body = _check.payload("reply", payload)
        extra = _check.headers("reply.headers", headers or {})
        self._answered = True
        client = getattr(self.subscription, "_client", None)
        if client is None:
            return False
        return client._send_reply(self._wire.reply_handle, body, extra,
                                  self._generation)

    def __repr__(self) -> str:
        return (f"Delivery(topic={self.topic!r}, message_id={self.message_id}, "
                f"attempt={self.attempt}, payload={self.payload[:32]!r})")


def answer_frame(kind: str, ids: List[int], delay_ms: int = 0) -> "pb.ClientFrame":
    """Returns one frame answering `ids` with `kind`."""
    if kind == "ack":
        return pb.ClientFrame(ack=pb.Ack(delivery_ids=ids))
    if kind == "in_progress":
        return pb.ClientFrame(in_progress=pb.InProgress(delivery_ids=ids))
    return pb.ClientFrame(nack=pb.Nack(delivery_ids=ids,
                                       requeue=(kind == "nack"),
                                       delay_ms=delay_ms))


def answer_key(frame: "pb.ClientFrame") -> Optional[Tuple[str, bool, int]]:
    """Returns what an answer frame may be merged by, None for others."""
    kind = frame.WhichOneof("kind")
    if kind in ("ack", "in_progress"):
        return (kind, False, 0)
    if kind == "nack":
        return (kind, frame.nack.requeue, frame.nack.delay_ms)
    return None


def merge_answers(first: "pb.ClientFrame", more: "pb.ClientFrame") -> None:
    """Appends `more`'s delivery ids to `first` (same answer_key)."""
    kind = first.WhichOneof("kind")
    getattr(first, kind).delivery_ids.extend(getattr(more, kind).delivery_ids)


def merge_queued_answers(frame: "pb.ClientFrame", out: Any) -> Any:
    """Merges into `frame`, if it is an answer, the answers of its kind
    queued right behind it in `out` (a stream's queue.Queue or asyncio.Queue
    of frames; MAX_ANSWER_BATCH at most), so that a run of answers made
    while the stream was busy goes as one frame. Returns the item taken
    from `out` that is not one of them (END included), to be sent next, or
    None."""
    key = answer_key(frame)
    count = 1
    while key is not None and count < MAX_ANSWER_BATCH:
        try:
            more = out.get_nowait()
        except (queue.Empty, asyncio.QueueEmpty):
            return None
        if more is not END and answer_key(more) == key:
            merge_answers(frame, more)
            count += 1
        else:
            return more
    return None
