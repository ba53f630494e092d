"""Request/reply in both clients (threaded and asyncio): request() answered
by serve(), the first reply wins, NoRespondersError at once,
RequestTimeoutError (counted in Stats), group requests acked by their
reply."""

import asyncio
import time

import grpc
import pytest

import tinybroker
import tinybroker.aio
from conftest import wait_until


def test_request_is_answered_by_serve(broker, client):
    with tinybroker.connect(broker.address) as responder:
        responder.serve("py.rr.upper",
                        lambda d: (d.payload.upper(), {"by": "upper"}))
        reply = client.request("py.rr.upper", "hello")
        assert reply.payload == b"HELLO"
        assert reply.text == "HELLO"
        assert reply.headers == {"by": "upper"}
        assert reply.message_id > 0


def test_first_reply_wins(broker, client):
    with tinybroker.connect(broker.address) as a, \
            tinybroker.connect(broker.address) as b:
        a.serve("py.rr.race", lambda d: "a")
        b.serve("py.rr.race", lambda d: "b")
        replies = {client.request("py.rr.race").text for _ in range(5)}
        assert replies <= {"a", "b"}
        assert wait_until(lambda: client.stats().broker.late_replies >= 5)


def test_nobody_listening_raises_no_responders_at_once(client):
    started = time.monotonic()
    with pytest.raises(tinybroker.NoRespondersError) as err:
        client.request("py.rr.nobody", "x", timeout=10)
    assert time.monotonic() - started < 2
    assert err.value.code == grpc.StatusCode.UNAVAILABLE
    assert err.value.reason == "no_responders"
    assert "py.rr.nobody" in str(err.value)


def test_no_reply_in_time_raises_request_timeout(broker, client):
    with tinybroker.connect(broker.address) as silent:
        silent.subscribe("py.rr.silent", lambda d: None)
        started = time.monotonic()
        with pytest.raises(tinybroker.RequestTimeoutError) as err:
            client.request("py.rr.silent", "x", timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 1.5
        assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert isinstance(err.value, TimeoutError)
    # Counted broker-wide (Stats; tinybroker_request_timeouts_total).
    assert wait_until(lambda: client.stats().broker.request_timeouts >= 1)


def test_group_request_goes_to_one_member_and_is_acked(broker, client):
    served = []
    with tinybroker.connect(broker.address) as a, \
            tinybroker.connect(broker.address) as b:
        for member in (a, b):
            member.serve("py.rrg.>",
                         lambda d: served.append(d.delivery_id) or b"done",
                         group="py-rr-group")
        for _ in range(4):
            assert client.request("py.rrg.job", "x",
                                  group="py-rr-group").payload == b"done"
        assert len(served) == 4
        info = [g for g in client.list_groups() if g.name == "py-rr-group"][0]
        assert wait_until(lambda: [
            g for g in client.list_groups()
            if g.name == "py-rr-group"][0].counters.acked == 4)
        assert info.counters.received == 4


def test_bad_requests_are_refused_before_sending(client):
    with pytest.raises(ValueError):
        client.request("py.rr.x", "x", timeout=0)
    with pytest.raises(tinybroker.BrokerError) as err:
        client.request("py.rr.*", "x")
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_aio_request_and_serve(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as responder, \
                tinybroker.aio.connect(broker.address) as caller:
            async def echo(d):
                await asyncio.sleep(0)
                return d.payload[::-1]
            await responder.serve("py.rr.aio", echo)
            reply = await caller.request("py.rr.aio", "abc")
            assert reply.payload == b"cba"
            with pytest.raises(tinybroker.NoRespondersError):
                await caller.request("py.rr.aio.none", "x")
    asyncio.run(asyncio.wait_for(main(), 15))


def test_aio_no_reply_in_time_and_group_requests(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as silent, \
                tinybroker.aio.connect(broker.address) as member, \
                tinybroker.aio.connect(broker.address) as caller:
            await silent.subscribe("py.rr.aio.silent", lambda d: None)
            started = time.monotonic()
            with pytest.raises(tinybroker.RequestTimeoutError) as err:
                await caller.request("py.rr.aio.silent", "x", timeout=0.3)
            assert 0.3 <= time.monotonic() - started < 1.5
            assert err.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
            await member.serve("py.rraio.>", lambda d: b"done",
                               group="py-rr-aio-group")
            for _ in range(3):
                reply = await caller.request("py.rraio.job", "x",
                                             group="py-rr-aio-group")
                assert reply.payload == b"done"
            # The reply acked each delivery of the group.
            for _ in range(100):
                groups = await caller.list_groups()
                acked = [g for g in groups
                         if g.name == "py-rr-aio-group"][0].counters.acked
                if acked == 3:
                    break
                await asyncio.sleep(0.05)
            assert acked == 3
    asyncio.run(asyncio.wait_for(main(), 15))
