"""The bound on publishes queued or awaiting their confirm
(max_pending_publishes, publish_block), threaded and asyncio."""

import asyncio
import threading
import time

import grpc
import pytest

import tinybroker
import tinybroker.aio
from conftest import wait_until


def test_publishes_while_down_are_bounded(own_broker):
    with tinybroker.connect(own_broker.address, max_pending_publishes=3,
                            publish_block=0.3) as c:
        sub = c.subscribe("qb.>")
        own_broker.stop()
        assert wait_until(lambda: c.state == "connecting")
        queued = [c.publish_nowait([("qb.a", str(i))]) for i in range(3)]
        started = time.monotonic()
        with pytest.raises(tinybroker.PublishQueueFullError) as full:
            c.publish_nowait([("qb.a", "extra")])
        waited = time.monotonic() - started
        assert full.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert 0.25 <= waited < 2.0, waited
        with pytest.raises(tinybroker.PublishQueueFullError):
            c.publish("qb.a", "extra")
        own_broker.start()
        assert all(f.result(10)[0].ok for f in queued)
        assert [sub.get(5).text for _ in range(3)] == ["0", "1", "2"]
        assert c.publish("qb.a", "room again") > 0  # the confirms freed it
        assert sub.get(5).text == "room again"


def test_a_waiting_publish_goes_once_room_frees(own_broker):
    with tinybroker.connect(own_broker.address, max_pending_publishes=2,
                            publish_block=20.0) as c:
        own_broker.stop()
        assert wait_until(lambda: c.state == "connecting")
        queued = [c.publish_nowait([("qw.a", "x")]) for _ in range(2)]
        restart = threading.Timer(0.2, own_broker.start)
        restart.start()
        try:
            third = c.publish_nowait([("qw.a", "waited")])  # waits for room
            assert any(f.done() for f in queued)
            assert third.result(10)[0].ok
        finally:
            restart.join()


def test_a_batch_larger_than_the_bound_goes_alone(broker):
    with tinybroker.connect(broker.address, max_pending_publishes=3,
                            publish_block=0.3) as c:
        ids = c.publish_many([("qbig.a", str(i)) for i in range(10)])
        assert len(ids) == 10


async def _stop(broker, client):
    """Stops the broker and waits until the client noticed."""
    await asyncio.get_running_loop().run_in_executor(None, broker.stop)
    for _ in range(500):
        if client.state == "connecting":
            return
        await asyncio.sleep(0.01)
    assert client.state == "connecting"


def test_aio_publishes_while_down_are_bounded(own_broker):
    async def main():
        loop = asyncio.get_running_loop()
        async with tinybroker.aio.connect(own_broker.address,
                                          max_pending_publishes=3,
                                          publish_block=0.3) as c:
            await _stop(own_broker, c)
            queued = [c.publish_nowait([("aqb.a", str(i))]) for i in range(3)]
            with pytest.raises(tinybroker.PublishQueueFullError):
                c.publish_nowait([("aqb.a", "extra")])  # no waiting here
            started = loop.time()
            with pytest.raises(tinybroker.PublishQueueFullError) as full:
                await c.publish("aqb.a", "extra")
            assert 0.25 <= loop.time() - started < 2.0
            assert full.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            await loop.run_in_executor(None, own_broker.start)
            results = await asyncio.wait_for(asyncio.gather(*queued), 10)
            assert all(r[0].ok for r in results)
            assert await c.publish("aqb.a", "room again") > 0
    asyncio.run(asyncio.wait_for(main(), 20))


def test_aio_a_waiting_publish_goes_once_room_frees(own_broker):
    async def main():
        loop = asyncio.get_running_loop()
        async with tinybroker.aio.connect(own_broker.address,
                                          max_pending_publishes=1,
                                          publish_block=20.0) as c:
            await _stop(own_broker, c)
            first = c.publish_nowait([("aqw.a", "first")])
            restart = loop.run_in_executor(None, own_broker.start)
            assert await c.publish("aqw.a", "waited") > 0
            assert first.done() and first.result()[0].ok
            await restart
    asyncio.run(asyncio.wait_for(main(), 30))
