"""The unary calls (Publish, CreateGroup, DeleteGroup, ListGroups, Stats)
of the threaded and the asyncio client."""

from typing import (Any, Callable, Iterable, List, Mapping, Optional,
                    Sequence, Tuple)

import grpc

from . import _check
from ._limits import check_sizes
from ._proto import tinybroker_pb2 as pb
from ._tls_diagnosis import TlsFiles, connect_message
from ._types import MessageLike, PublishResult, to_proto_messages
from .errors import AuthError, BrokerError, ConnectError, TinybrokerError

_OVERFLOW = {"reject": pb.OVERFLOW_REJECT,
             "drop_oldest": pb.OVERFLOW_DROP_OLDEST}


def create_request(name: str, pattern: str,
                   settings: Mapping[str, Any]) -> "pb.CreateGroupRequest":
    """Returns the CreateGroup request; unset settings take the broker's
    defaults. Raises TypeError for an unknown setting (or a name that is not
    str) and InvalidRequestError for a name that is not UTF-8."""
    s = dict(settings)
    name = _check.text("name", name)
    out = pb.GroupSettings(pattern=_check.text("pattern", pattern))
    if "ack_wait" in s:
        out.ack_wait_ms = int(round(float(s.pop("ack_wait")) * 1000))
    if "max_deliveries" in s:
        most = int(s.pop("max_deliveries"))
        out.max_deliveries = most
        out.unlimited_deliveries = most == 0
    for field in ("max_pending_messages", "max_pending_bytes"):
        if field in s:
            setattr(out, field, int(s.pop(field)))
    if "overflow" in s:
        overflow = s.pop("overflow")
        if overflow not in _OVERFLOW:
            raise ValueError(f"overflow must be one of {sorted(_OVERFLOW)}, "
                             f"not {overflow!r}")
        out.overflow = _OVERFLOW[overflow]
    for field in ("dead_letter", "policy"):
        if field in s:
            setattr(out, field, _check.text(field, s.pop(field)))
    if s:
        raise TypeError(f"unknown group settings: {', '.join(sorted(s))}")
    return pb.CreateGroupRequest(name=name, settings=out)


def to_error(err: grpc.RpcError, server: str = "",
             files: Optional[TlsFiles] = None) -> TinybrokerError:
    """Returns the error for a failed unary call: the broker sends
    "reason: sentence" as the status message. A failed connection names its
    likely cause (TLS `files`, see _tls_diagnosis)."""
    code, details = err.code(), err.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE and server:
        return ConnectError(connect_message(server, files, code, details), code)
    reason = details.split(":", 1)[0] if ":" in details else ""
    if " " in reason:
        reason = ""
    text = f"{code.name}: {details}"
    if code in (grpc.StatusCode.UNAUTHENTICATED,
                grpc.StatusCode.PERMISSION_DENIED):
        return AuthError(text, code, reason)
    return BrokerError(text, code, reason)


def call(method: Callable[..., Any], request: Any,
         metadata: Sequence[Tuple[str, str]], timeout: Optional[float] = 10.0,
         server: str = "", files: Optional[TlsFiles] = None) -> Any:
    """Calls a unary method; raises BrokerError / AuthError (ConnectError
    for UNAVAILABLE when `server` is given) on failure."""
    try:
        return method(request, metadata=metadata, timeout=timeout)
    except grpc.RpcError as err:
        raise to_error(err, server, files) from None


class Admin:
    """The unary calls of the threaded client (mixed into Client)."""

    _stub: Any
    server: str
    _settings: Any
    _limit_cache: Any
    _learn_limits: Any

    def publish_unary(self, messages: Iterable[MessageLike],
                      timeout: Optional[float] = 10.0) -> List[PublishResult]:
        """Publishes `messages` with the unary Publish call, not on the
        stream (a lazy client opens none for it). Returns every message's
        result, refused ones included. Raises ConnectError (unreachable),
        AuthError (token refused), BrokerError (the whole request refused),
        MessageTooLargeError (a message over the broker's
        limits.max_message_bytes; nothing sent)."""
        protos = to_proto_messages(messages)
        self._learn_limits()
        check_sizes(protos, self._limit_cache.known(), self.server)
        request = pb.PublishRequest(messages=protos)
        reply = call(self._stub.Publish, request, self._settings.metadata, timeout,
                     self.server, self._settings.tls_files)
        return [PublishResult.from_proto(r) for r in reply.results]

    def create_group(self, name: str, pattern: str, **settings: Any
                     ) -> "pb.GroupInfo":
        """Creates consumer group `name` on `pattern` (CreateGroup); OK if an
        identical one exists. Settings (unset: the broker's defaults):
        ack_wait (seconds), max_deliveries (0: unlimited),
        max_pending_messages, max_pending_bytes, overflow ("reject" or
        "drop_oldest"), dead_letter, policy. Raises BrokerError."""
        return call(self._stub.CreateGroup,
                    create_request(name, pattern, settings), self._settings.metadata)

    def delete_group(self, name: str) -> int:
        """Deletes group `name`; returns how many messages it dropped."""
        name = _check.text("name", name)
        return call(self._stub.DeleteGroup, pb.DeleteGroupRequest(name=name),
                    self._settings.metadata).dropped_messages

    def list_groups(self) -> List["pb.GroupInfo"]:
        """Every group with its settings and counters."""
        return list(call(self._stub.ListGroups, pb.ListGroupsRequest(),
                         self._settings.metadata).groups)

    def stats(self, **request: Any) -> "pb.StatsReply":
        """Broker, topic, group and session counters (StatsRequest fields as
        keywords, e.g. topic_pattern=">")."""
        return call(self._stub.Stats, pb.StatsRequest(**request),
                    self._settings.metadata)

    @property
    def stub(self) -> Any:
        """The generated BrokerStub on the client's channel (pass
        `metadata=client.metadata` when a token is set)."""
        return self._stub


class AsyncAdmin:
    """The unary calls of the asyncio client (mixed into AsyncClient)."""

    _stub: Any
    server: str
    _settings: Any
    _limit_cache: Any
    _learn_limits: Any

    async def _unary(self, method: Any, request: Any,
                     timeout: Optional[float] = 10.0, server: str = "") -> Any:
        try:
            return await method(request, metadata=self._settings.metadata,
                                timeout=timeout)
        except grpc.RpcError as err:
            raise to_error(err, server, self._settings.tls_files) from None

    async def publish_unary(self, messages: Iterable[MessageLike],
                            timeout: Optional[float] = 10.0
                            ) -> List[PublishResult]:
        """The unary Publish call, no stream (see Client.publish_unary)."""
        protos = to_proto_messages(messages)
        await self._learn_limits()
        check_sizes(protos, self._limit_cache.known(), self.server)
        request = pb.PublishRequest(messages=protos)
        reply = await self._unary(self._stub.Publish, request, timeout,
                                  self.server)
        return [PublishResult.from_proto(r) for r in reply.results]

    async def create_group(self, name: str, pattern: str,
                           **settings: Any) -> "pb.GroupInfo":
        """Creates a consumer group (see Client.create_group)."""
        return await self._unary(self._stub.CreateGroup,
                                 create_request(name, pattern, settings))

    async def delete_group(self, name: str) -> int:
        """Deletes a group; how many messages it dropped."""
        reply = await self._unary(
            self._stub.DeleteGroup,
            pb.DeleteGroupRequest(name=_check.text("name", name)))
        return reply.dropped_messages

    async def list_groups(self) -> List["pb.GroupInfo"]:
        """Every group with its settings and counters."""
        reply = await self._unary(self._stub.ListGroups, pb.ListGroupsRequest())
        return list(reply.groups)

    async def stats(self, **request: Any) -> "pb.StatsReply":
        """Broker, topic, group and session counters."""
        return await self._unary(self._stub.Stats, pb.StatsRequest(**request))

    @property
    def stub(self) -> Any:
        """The generated BrokerStub (grpc.aio) on the client's channel."""
        return self._stub
