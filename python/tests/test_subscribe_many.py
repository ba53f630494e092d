"""Many subscriptions in SubscribeBatch frames: subscribe_many, the
re-subscribe after a reconnect, and the fallback to single frames when the
broker's limits.max_subscribe_batch is lower than a batch."""

import asyncio

import pytest

import tinybroker
import tinybroker.aio
from tinybroker._core import Core
from tinybroker._subscribing import SUBSCRIBE_BATCH
from tinybroker._settings import Settings
from conftest import Broker, wait_until


class _Sub:
    """Stands in for a subscription: what Core reads to make its frame."""

    def __init__(self, sub_id: int) -> None:
        self.id = sub_id

    def _subscribe_message(self):
        from tinybroker._proto import tinybroker_pb2 as pb
        return pb.Subscribe(subscription_id=self.id, pattern=f"p.{self.id}")

    def _frame(self, request_id: int):
        from tinybroker._proto import tinybroker_pb2 as pb
        return pb.ClientFrame(request_id=request_id,
                              subscribe=self._subscribe_message())


def _core() -> Core:
    return Core(Settings("127.0.0.1:1", None, (), []), 0.1, 2.0, 20, 100, 1.0,
                None)


def test_frames_are_batches_of_at_most_the_batch_size():
    core = _core()
    subs = [_Sub(i) for i in range(1, SUBSCRIBE_BATCH + 45)]
    frames = core._subscribe_frames(subs)
    assert [f.WhichOneof("kind") for f in frames] == ["subscribe_batch"] * 2
    sizes = [len(f.subscribe_batch.subscriptions) for f in frames]
    assert sizes == [SUBSCRIBE_BATCH, 44]
    ids = [s.subscription_id for f in frames
           for s in f.subscribe_batch.subscriptions]
    assert ids == [s.id for s in subs]
    # Each batch is remembered until its answer, for the fallback.
    assert sorted(core._batches) == sorted(f.request_id for f in frames)


def test_a_lone_subscription_is_a_subscribe_frame():
    frames = _core()._subscribe_frames([_Sub(7)])
    assert [f.WhichOneof("kind") for f in frames] == ["subscribe"]
    assert frames[0].subscribe.subscription_id == 7


def test_subscribe_many_confirms_each_and_delivers(client):
    patterns = [f"sm.{i}" for i in range(300)] + ["smw.*"]
    subs = client.subscribe_many(patterns)
    assert [s.pattern for s in subs] == patterns
    assert all(s.times_subscribed == 1 for s in subs)
    client.publish_many([("sm.0", "first"), ("sm.299", "last"),
                         ("smw.x", "wild")])
    assert subs[0].get(5).text == "first"
    assert subs[299].get(5).text == "last"
    assert subs[300].get(5).text == "wild"


def test_a_lone_string_is_refused_before_anything_is_sent(client):
    with pytest.raises(TypeError):
        client.subscribe_many("sm.one")
    assert not client._subs


def test_subscribe_many_raises_for_a_refused_pattern_and_ends_the_rest(
        client):
    with pytest.raises(tinybroker.SubscribeError) as refused:
        client.subscribe_many(["smr.a", "smr.>.bad", "smr.b"])
    assert refused.value.pattern == "smr.>.bad"
    assert refused.value.reason == "invalid_pattern"
    # The accepted ones were ended: nothing is left subscribed.
    assert wait_until(lambda: not client._subs)


def test_reconnect_resubscribes_in_batches(own_broker):
    with tinybroker.connect(own_broker.address) as c:
        subs = c.subscribe_many([f"smc.{i}" for i in range(600)])
        own_broker.restart()  # same port, nothing kept
        # Without the SubscribedBatch answers nothing would count twice.
        assert wait_until(lambda: all(s.times_subscribed == 2 for s in subs),
                          10)
        c.publish("smc.599", "after")
        assert subs[599].get(5).text == "after"


def test_a_broker_with_a_lower_batch_limit_gets_single_frames():
    broker = Broker("[limits]\nmax_subscribe_batch = 2\n")
    try:
        with tinybroker.connect(broker.address) as c:
            subs = c.subscribe_many([f"sml.{i}" for i in range(5)])
            assert all(s.times_subscribed == 1 for s in subs)
            c.publish("sml.4", "x")
            assert subs[4].get(5).text == "x"
    finally:
        broker.stop()


def test_aio_subscribe_many(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as c:
            subs = await c.subscribe_many([f"sma.{i}" for i in range(300)])
            await c.publish("sma.150", "mid")
            assert (await subs[150].get(5)).text == "mid"
            with pytest.raises(tinybroker.SubscribeError):
                await c.subscribe_many(["sma.ok", "sma.>.bad"])
    asyncio.run(asyncio.wait_for(main(), 15))
