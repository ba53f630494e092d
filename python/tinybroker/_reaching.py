"""How both clients reach a broker after a loss (docs/client.md, "Several
addresses and failover"): wait until the channel connects, or with several
addresses until it connects or fails (the next address is then tried), say
why an address cannot be reached, and learn the broker's size limits once.
The blocking client's methods and the asyncio client's, side by side."""

import asyncio
import threading
import time
from typing import Any, List, Tuple

import grpc

from ._limits import LimitCache
from ._proto import tinybroker_pb2 as pb
from ._settings import Settings


class Reaching:
    """The blocking client's way to a broker (mixed into Client)."""

    _servers: List[str]
    _channel: grpc.Channel
    _stub: Any
    _settings: Settings
    _backoff: Tuple[float, float]
    _closing: bool
    _limit_cache: LimitCache
    _publish_block: float

    def _channel_ready(self) -> bool:
        """After a loss: waits (up to the longest backoff) until the channel
        connects, as the C++ client does; a stream opened on a channel that
        is still failing may hang instead of failing. With several
        addresses, a failed connection ends the wait at once (the next
        address is tried)."""
        if len(self._servers) > 1:
            return self._channel_reachable()
        ready = grpc.channel_ready_future(self._channel)
        deadline = time.monotonic() + max(self._backoff)
        try:
            while not self._closing and time.monotonic() < deadline:
                try:
                    ready.result(0.05)
                    return True
                except grpc.FutureTimeoutError:
                    pass
            return False
        finally:
            ready.cancel()

    def _channel_reachable(self) -> bool:
        """Waits (up to the longest backoff) until the current channel is
        READY (True) or fails to connect (False), as the C++ client's
        wait_reachable does."""
        outcome: List[bool] = []
        done = threading.Event()

        def watch(state: grpc.ChannelConnectivity) -> None:
            if state == grpc.ChannelConnectivity.READY:
                outcome.append(True)
                done.set()
            elif state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                           grpc.ChannelConnectivity.SHUTDOWN):
                done.set()
        channel = self._channel
        channel.subscribe(watch, try_to_connect=True)
        deadline = time.monotonic() + max(self._backoff)
        try:
            while not self._closing and time.monotonic() < deadline:
                if done.wait(0.05):
                    return bool(outcome)
            return False
        finally:
            channel.unsubscribe(watch)

    def _connect_error(self) -> str:
        """With several addresses: gRPC's message on why the current
        channel cannot connect (a short Info call that does not wait for
        the connection), so that the ConnectError names the cause at each
        address; "" otherwise."""
        if len(self._servers) == 1:
            return ""
        try:
            self._stub.Info(pb.InfoRequest(), metadata=self._settings.metadata,
                            timeout=1.0)
        except grpc.RpcError as err:
            return err.details() or ""
        return ""

    def _learn_limits(self) -> None:
        """Asks the broker for its size limits (Info) unless known."""
        if not self._limit_cache.wanted():
            return
        try:
            self._limit_cache.answered(self._stub.Info(
                pb.InfoRequest(), metadata=self._settings.metadata,
                timeout=self._publish_block))
        except grpc.RpcError as err:
            self._limit_cache.failed(err)


class AsyncReaching:
    """The asyncio client's way to a broker (mixed into AsyncClient)."""

    _servers: List[str]
    _channel: "grpc.aio.Channel"
    _stub: Any
    _settings: Settings
    _backoff: Tuple[float, float]
    _closing: asyncio.Event
    _limit_cache: LimitCache
    _publish_block: float

    async def _channel_ready(self) -> bool:
        """After a loss: waits until the channel connects (see Client); with
        several addresses a failed connection ends the wait at once."""
        if len(self._servers) > 1:
            return await self._channel_reachable()
        try:
            await asyncio.wait_for(self._channel.channel_ready(),
                                   max(self._backoff))
            return True
        except asyncio.TimeoutError:
            return False

    async def _channel_reachable(self) -> bool:
        """Waits (up to the longest backoff) until the current channel is
        READY (True) or fails to connect (False)."""
        channel = self._channel
        deadline = time.monotonic() + max(self._backoff)
        state = channel.get_state(try_to_connect=True)
        while state != grpc.ChannelConnectivity.READY:
            if state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                         grpc.ChannelConnectivity.SHUTDOWN):
                return False
            left = deadline - time.monotonic()
            if left <= 0 or self._closing.is_set():
                return False
            try:
                await asyncio.wait_for(channel.wait_for_state_change(state),
                                       left)
            except asyncio.TimeoutError:
                return False
            state = channel.get_state(try_to_connect=True)
        return True

    async def _connect_error(self) -> str:
        """With several addresses: gRPC's message on why the current
        channel cannot connect (see Client._connect_error)."""
        if len(self._servers) == 1:
            return ""
        try:
            await self._stub.Info(pb.InfoRequest(),
                                  metadata=self._settings.metadata,
                                  timeout=1.0)
        except grpc.RpcError as err:
            return err.details() or ""
        return ""

    async def _learn_limits(self) -> None:
        """Asks the broker for its size limits (Info) unless known."""
        if not self._limit_cache.wanted():
            return
        try:
            self._limit_cache.answered(await self._stub.Info(
                pb.InfoRequest(), metadata=self._settings.metadata,
                timeout=self._publish_block))
        except grpc.RpcError as err:
            self._limit_cache.failed(err)

    # -- publishing: _publishing.AsyncPublishing -----------------------------

    # -- subscribing ---------------------------------------------------------
