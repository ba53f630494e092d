"""The asyncio client: the same behaviours on grpc.aio."""

import asyncio
import os
import subprocess
import sys
import time

import grpc
import pytest

import tinybroker
import tinybroker.aio
from conftest import free_port


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 15))


def test_aio_publish_subscribe_and_refusal(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as c:
            sub = await c.subscribe("ai.*.x")
            ids = await c.publish_many([("ai.a.x", "1"), ("ai.b.y", "no"),
                                        ("ai.c.x", "2")])
            assert ids == sorted(ids)
            got = [d.text async for d in _take(sub, 2)]
            assert got == ["1", "2"]
            with pytest.raises(tinybroker.PublishError) as refused:
                await c.publish("ai..bad", "x")
            assert refused.value.results[0].reason == "invalid_topic"
            results = await c.publish_results([("ai..bad", "x")])
            assert results[0].code == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(tinybroker.SubscribeError):
                await c.subscribe("ai.>.x")
    run(main())


async def _take(sub, n):
    for _ in range(n):
        yield await sub.get(5)


def test_aio_group_answers_and_credit(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as c:
            worker = await c.join("aig", "aig.>", max_in_flight=2)
            dead = await c.subscribe("$dlq.aig")
            await c.publish_many([("aig.a", str(i)) for i in range(3)])
            first, second = await worker.get(5), await worker.get(5)
            with pytest.raises(TimeoutError):
                await worker.get(0.3)
            assert first.nack() and second.reject()
            retried = await worker.get(5)
            assert (retried.text, retried.attempt) == ("0", 2)
            assert (await dead.get(5)).text == "1"
            assert retried.in_progress() and retried.ack()
            third = await worker.get(5)
            assert third.text == "2" and third.ack()
    run(main())


def test_aio_callback_and_iteration_end(broker):
    async def main():
        seen, done = [], asyncio.Event()

        async def handle(d):
            seen.append(d.text)
            d.ack()
            if len(seen) == 2:
                done.set()
        c = await tinybroker.aio.connect(broker.address)
        await c.join("aicb", "aicb.>", handle)
        sub = await c.subscribe("aiit.>")
        await c.publish_many([("aicb.a", "1"), ("aicb.b", "2")])
        await asyncio.wait_for(done.wait(), 5)
        assert seen == ["1", "2"]

        got = asyncio.Event()

        async def consume():
            texts = []
            async for d in sub:
                texts.append(d.text)
                got.set()
            return texts
        consumer = asyncio.ensure_future(consume())
        await c.publish("aiit.a", "x")
        # The confirm can come before the delivery: close once "x" is in.
        await asyncio.wait_for(got.wait(), 5)
        await c.close()
        assert await asyncio.wait_for(consumer, 5) == ["x"]
        with pytest.raises(tinybroker.ClientClosedError):
            await c.publish("aiit.a", "late")
    run(main())


def test_aio_reconnect_resubscribes(own_broker):
    async def main():
        async with tinybroker.aio.connect(own_broker.address) as c:
            sub = await c.subscribe("air.>")
            await asyncio.get_running_loop().run_in_executor(
                None, own_broker.restart)
            for _ in range(500):
                if sub.times_subscribed == 2:
                    break
                await asyncio.sleep(0.01)
            assert sub.times_subscribed == 2
            await c.publish("air.a", "back")
            assert (await sub.get(5)).text == "back"
    run(main())


def test_aio_connect_refused_and_env(broker, monkeypatch):
    async def main():
        started = time.monotonic()
        with pytest.raises(tinybroker.ConnectError):
            await tinybroker.aio.connect(f"127.0.0.1:{free_port()}")
        assert time.monotonic() - started < 1.0
        monkeypatch.setenv("TINYBROKER_SERVER", broker.address)
        async with tinybroker.aio.connect() as c:
            assert await c.publish("aienv.a", "x") > 0
    run(main())


def test_program_that_never_closes_still_exits(broker):
    """asyncio.run cancels the client's tasks: they must not reconnect."""
    script = f"""
import asyncio, tinybroker.aio
async def main():
    client = await tinybroker.aio.connect({broker.address!r})
    await client.subscribe("ex.>")
asyncio.run(main())
"""
    package_dir = os.path.dirname(os.path.dirname(tinybroker.__file__))
    env = dict(os.environ, PYTHONPATH=package_dir)
    done = subprocess.run([sys.executable, "-c", script], env=env,
                          timeout=10, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
