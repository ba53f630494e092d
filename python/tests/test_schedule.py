"""Message TTL, delayed delivery and priorities (issue 29) from the threaded
and the asyncio client: delayed fan-out, the checks the client makes before
sending, and a group's priorities and TTL."""

import asyncio
import datetime
import time

import grpc
import pytest

import tinybroker
import tinybroker.aio


def test_delayed_fanout_arrives_at_its_due_time(client):
    sub = client.subscribe("pysched.>")
    start = time.monotonic()
    client.publish("pysched.a", "later", delay=0.4)
    client.publish("pysched.b", "now")
    assert sub.get(timeout=5).text == "now"
    later = sub.get(timeout=5)
    assert later.text == "later"
    assert time.monotonic() - start >= 0.4


def test_not_before_takes_a_datetime_or_unix_seconds(client):
    sub = client.subscribe("pyat.>")
    due = datetime.datetime.now(datetime.timezone.utc) + \
        datetime.timedelta(seconds=0.3)
    client.publish_many([tinybroker.Message("pyat.a", "dt", not_before=due),
                         tinybroker.Message("pyat.b", "unix",
                                            not_before=time.time() + 0.5)])
    assert sub.get(timeout=5).text == "dt"
    assert datetime.datetime.now(datetime.timezone.utc) >= due
    assert sub.get(timeout=5).text == "unix"


def test_a_message_within_its_ttl_is_delivered_with_its_priority(client):
    sub = client.subscribe("pyttl.>")
    client.publish("pyttl.a", "fresh", ttl=60, priority=7)
    got = sub.get(timeout=5)
    assert (got.text, got.priority) == ("fresh", 7)
    assert sub.expired == 0


def test_bad_times_and_priorities_are_refused_before_sending(client):
    with pytest.raises(tinybroker.InvalidRequestError, match="priority"):
        client.publish("pybad.a", "x", priority=10)
    with pytest.raises(TypeError, match="message.ttl"):
        tinybroker.Message("pybad.a", "x", ttl="soon").to_proto()
    with pytest.raises(tinybroker.InvalidRequestError, match="delay"):
        client.publish("pybad.a", "x", delay=-1)
    with pytest.raises(tinybroker.InvalidRequestError, match="both delay"):
        client.publish("pybad.a", "x", delay=1, not_before=time.time() + 1)
    # The broker's own bound on delays (limits.max_delay) comes back as the
    # message's result.
    results = client.publish_results(
        [tinybroker.Message("pybad.a", "x", delay=30 * 24 * 3600)])
    assert results[0].code == grpc.StatusCode.INVALID_ARGUMENT
    assert results[0].reason == "invalid_schedule"


def test_a_group_delivers_higher_priorities_first(client):
    client.create_group("pyprio", "pyprio.>")
    client.publish_many([tinybroker.Message("pyprio.a", "low"),
                         tinybroker.Message("pyprio.a", "high", priority=9),
                         tinybroker.Message("pyprio.a", "mid", priority=4)])
    worker = client.join("pyprio", "pyprio.>")
    got = [worker.get(5) for _ in range(3)]
    assert [d.text for d in got] == ["high", "mid", "low"]
    for d in got:
        d.ack()


def test_a_group_dead_letters_a_message_past_its_ttl(client):
    client.create_group("pyexp", "pyexp.>")
    dead = client.subscribe("$dlq.pyexp")
    client.publish("pyexp.a", "stale", ttl=0.2)
    letter = dead.get(5)
    assert letter.text == "stale"
    assert letter.headers["x-tinybroker-reason"] == "expired"


def test_aio_delay_ttl_and_priority(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as c:
            sub = await c.subscribe("pyaio.>")
            start = time.monotonic()
            await c.publish("pyaio.a", "later", delay=0.3, ttl=60,
                            priority=2)
            await c.publish("pyaio.b", "now")
            first = await sub.get(5)
            second = await sub.get(5)
            assert (first.text, second.text) == ("now", "later")
            assert second.priority == 2
            assert time.monotonic() - start >= 0.3
            with pytest.raises(tinybroker.InvalidRequestError):
                await c.publish("pyaio.a", "x", priority=-1)
    asyncio.run(asyncio.wait_for(main(), 15))
