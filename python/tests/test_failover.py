"""Issue 30, point 5: a client given several addresses (threaded and
asyncio) against two independent brokers A and B: it connects to the first
that answers; when A is killed (SIGKILL) it goes on with B, subscribing and
joining again, and (idempotent) sends B what A never confirmed; none
reachable raises a ConnectError naming every address."""

import asyncio
import os
import signal
import socket
import time
from typing import Iterator, List, Tuple

import pytest

import tinybroker
import tinybroker.aio

from conftest import Broker, wait_until

FAST = dict(reconnect_initial_backoff=0.05, reconnect_max_backoff=0.5,
            randomize_servers=False)


@pytest.fixture
def pair() -> Iterator[Tuple[Broker, Broker]]:
    """Brokers A and B of the test's own."""
    a, b = Broker(), Broker()
    yield a, b
    a.stop()
    b.stop()


def stop(broker: Broker) -> None:
    """SIGSTOPs `broker` and returns once every thread of it has stopped:
    kill() only queues the signal, and a broker thread still running could
    confirm one more publish, which then rightly is not sent again."""
    assert broker.process is not None
    pid = broker.process.pid
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("T", "t"):
                return False
        return True

    deadline = time.monotonic() + 5
    while not stopped():
        assert time.monotonic() < deadline, "the broker did not stop"
        time.sleep(0.001)


def kill(broker: Broker) -> None:
    """SIGKILL, as a node's crash."""
    assert broker.process is not None
    broker.process.kill()
    broker.process.wait()


def closed_address() -> Tuple[socket.socket, str]:
    """A loopback address bound but not listening: connections are refused
    (keep the socket while the address is used)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s, "127.0.0.1:%d" % s.getsockname()[1]


def test_threaded_goes_on_with_the_next_broker(pair):
    a, b = pair
    with tinybroker.connect([a.address, b.address], **FAST) as c:
        assert c.server == a.address
        fanout = c.subscribe("fo.>")
        worker = c.join("fo-workers", "fo.>")
        with tinybroker.connect(a.address) as on_a:
            on_a.publish("fo.1", "on A")
        assert fanout.get(5).text == "on A"
        job = worker.get(5)
        assert job.text == "on A" and job.ack()
        kill(a)
        assert wait_until(lambda: fanout.times_subscribed == 2
                          and worker.times_subscribed == 2, 10)
        assert c.server == b.address and c.state == "connected"
        with tinybroker.connect(b.address) as on_b:
            on_b.publish("fo.2", "on B")
        assert fanout.get(5).text == "on B"
        job = worker.get(5)
        assert job.text == "on B" and job.ack()


def test_threaded_idempotent_sends_b_what_a_never_confirmed(pair):
    a, b = pair
    got_a: List[bytes] = []
    got_b: List[bytes] = []
    with tinybroker.connect(a.address) as sub_a, \
            tinybroker.connect(b.address) as sub_b, \
            tinybroker.connect(f"{a.address},{b.address}", idempotent=True,
                               **FAST) as pub:
        sub_a.subscribe("foi.>", lambda d: got_a.append(d.payload))
        sub_b.subscribe("foi.>", lambda d: got_b.append(d.payload))
        for i in range(100):
            pub.publish("foi.x", "m%d" % i)
        assert wait_until(lambda: len(got_a) == 100)
        stop(a)  # written, never confirmed
        futures = [pub.publish_nowait([("foi.x", "m%d" % i)])
                   for i in range(100, 300)]
        time.sleep(0.2)
        kill(a)
        results = [r for f in futures for r in f.result(10)]
        assert all(r.ok for r in results)
        assert pub.server == b.address and pub.republished > 0
        assert wait_until(lambda: len(got_b) >= 200)
        time.sleep(0.1)
    assert got_b == [b"m%d" % i for i in range(100, 300)]


def test_threaded_unreachable_first_address_is_passed_at_once(pair):
    _, b = pair
    s, dead = closed_address()
    started = time.monotonic()
    with tinybroker.connect(f"{dead}, {b.address}", **FAST) as c:
        assert time.monotonic() - started < 1.0
        assert c.server == b.address
        assert c.servers == [dead, b.address]
        assert c.publish("fo.x", "hello") > 0
    s.close()


def test_threaded_none_reachable_names_every_address():
    s1, first = closed_address()
    s2, second = closed_address()
    with pytest.raises(tinybroker.ConnectError) as err:
        tinybroker.connect([first, second], **FAST)
    text = str(err.value)
    assert f"cannot reach any of the 2 brokers at {first}, {second}" in text
    assert f"cannot reach the broker at {first}" in text
    assert f"cannot reach the broker at {second}" in text
    s1.close()
    s2.close()


def test_an_empty_address_is_refused_naming_it():
    with pytest.raises(tinybroker.InvalidRequestError) as err:
        tinybroker.connect("127.0.0.1:1,,127.0.0.1:2", lazy=True)
    assert 'an empty broker address in "127.0.0.1:1,,127.0.0.1:2"' in \
        str(err.value)


def test_addresses_are_shuffled_by_default(pair):
    a, b = pair
    seen = set()
    for _ in range(40):
        c = tinybroker.connect([a.address, b.address], lazy=True)
        seen.add(c.server)
        c.close()
    assert seen == {a.address, b.address}


def test_asyncio_goes_on_with_the_next_broker(pair):
    a, b = pair

    async def main() -> None:
        async with tinybroker.aio.connect([a.address, b.address],
                                          **FAST) as c:
            assert c.server == a.address
            fanout = await c.subscribe("foa.>")
            worker = await c.join("foa-workers", "foa.>")
            async with tinybroker.aio.connect(a.address) as on_a:
                await on_a.publish("foa.1", "on A")
            assert (await fanout.get(5)).text == "on A"
            job = await worker.get(5)
            assert job.text == "on A" and job.ack()
            kill(a)
            for _ in range(1000):
                if fanout.times_subscribed == worker.times_subscribed == 2:
                    break
                await asyncio.sleep(0.01)
            assert fanout.times_subscribed == worker.times_subscribed == 2
            assert c.server == b.address
            async with tinybroker.aio.connect(b.address) as on_b:
                await on_b.publish("foa.2", "on B")
            assert (await fanout.get(5)).text == "on B"
            job = await worker.get(5)
            assert job.text == "on B" and job.ack()

    asyncio.run(main())


def test_asyncio_idempotent_sends_b_what_a_never_confirmed(pair):
    a, b = pair
    got_b: List[bytes] = []

    async def main() -> None:
        async with tinybroker.aio.connect(b.address) as sub_b, \
                tinybroker.aio.connect([a.address, b.address],
                                       idempotent=True, **FAST) as pub:
            await sub_b.subscribe("foai.>", lambda d: got_b.append(d.payload))
            for i in range(100):
                await pub.publish("foai.x", "m%d" % i)
            stop(a)
            futures = [pub.publish_nowait([("foai.x", "m%d" % i)])
                       for i in range(100, 300)]
            await asyncio.sleep(0.2)
            kill(a)
            results = [r for f in await asyncio.wait_for(
                asyncio.gather(*futures), 10) for r in f]
            assert all(r.ok for r in results)
            assert pub.server == b.address and pub.republished > 0
            for _ in range(1000):
                if len(got_b) >= 200:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)

    asyncio.run(main())
    assert got_b == [b"m%d" % i for i in range(100, 300)]


def test_asyncio_unreachable_first_address_is_passed_and_none_named(pair):
    _, b = pair
    s, dead = closed_address()

    async def main() -> None:
        started = time.monotonic()
        async with tinybroker.aio.connect([dead, b.address], **FAST) as c:
            assert time.monotonic() - started < 1.0
            assert c.server == b.address
        with pytest.raises(tinybroker.ConnectError) as err:
            await tinybroker.aio.connect([dead, dead], **FAST)
        assert f"cannot reach any of the 2 brokers at {dead}, {dead}" in \
            str(err.value)

    asyncio.run(main())
    s.close()


def test_connect_error_names_the_cause_at_each_address():
    s1, first = closed_address()
    s2, second = closed_address()
    with pytest.raises(tinybroker.ConnectError) as err:
        tinybroker.connect([first, second], **FAST)
    lines = str(err.value).splitlines()
    assert len(lines) == 3, lines
    for line, address in zip(lines[1:], (first, second)):
        assert f"cannot reach the broker at {address}: nothing listens " \
            "there" in line, line
    s1.close()
    s2.close()
