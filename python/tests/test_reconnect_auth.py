"""Reconnect with re-subscribe after a broker restart, and token auth."""

import grpc
import pytest

import tinybroker
from conftest import Broker, wait_until


def test_reconnect_resubscribes(own_broker):
    with tinybroker.connect(own_broker.address) as c:
        fanout = c.subscribe("rc.>")
        worker = c.join("rcg", "rcj.>")
        assert fanout.times_subscribed == worker.times_subscribed == 1
        own_broker.restart()  # same port, nothing kept
        assert wait_until(lambda: fanout.times_subscribed == 2
                          and worker.times_subscribed == 2)
        assert c.state == "connected" and c.connections >= 2
        c.publish_many([("rc.a", "after"), ("rcj.a", "job")])
        assert fanout.get(5).text == "after"
        job = worker.get(5)
        assert (job.text, job.attempt) == ("job", 1) and job.ack()


def test_publish_while_down_is_sent_once_back(own_broker):
    with tinybroker.connect(own_broker.address) as c:
        sub = c.subscribe("rd.>")
        own_broker.stop()
        assert wait_until(lambda: c.state == "connecting")
        future = c.publish_nowait([("rd.a", "queued")])
        own_broker.start()
        assert future.result(10)[0].ok
        assert sub.get(5).text == "queued"


def test_answers_of_an_ended_connection_return_false(own_broker):
    with tinybroker.connect(own_broker.address) as c:
        worker = c.join("ra", "ra.>")
        c.publish("ra.a", "x")
        job = worker.get(5)
        own_broker.restart()
        assert wait_until(lambda: worker.times_subscribed == 2)
        assert not job.ack()  # the broker forgot it with the old session


def test_gives_up_after_max_attempts(own_broker):
    c = tinybroker.connect(own_broker.address, reconnect_max_attempts=2,
                           reconnect_initial_backoff=0.05)
    sub = c.subscribe("gu.>")
    own_broker.stop()
    assert wait_until(lambda: c.state == "closed")
    with pytest.raises(tinybroker.SubscriptionEndedError, match="gave up"):
        sub.get(1)
    with pytest.raises(tinybroker.ConnectionLostError, match="gave up"):
        c.publish("gu.a", "x")
    c.close()


AUTH_CONFIG = """
[auth]
[[auth.tokens]]
name = "app"
secret = "app-token-0123456789abcdef"
publish = ["au.>"]
subscribe = ["au.>"]
"""


def test_token_auth(tmp_path, monkeypatch):
    broker = Broker(AUTH_CONFIG)
    try:
        with pytest.raises(tinybroker.AuthError) as refused:
            tinybroker.connect(broker.address)
        assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
        lazy = tinybroker.connect(broker.address, lazy=True)
        with pytest.raises(tinybroker.AuthError):
            lazy.subscribe("au.>")  # the stream opens here
        lazy.close()
        with tinybroker.connect(broker.address,
                                token="app-token-0123456789abcdef") as c:
            sub = c.subscribe("au.>")
            c.publish("au.x", "in")
            assert sub.get(5).text == "in"
            with pytest.raises(tinybroker.PublishError) as denied:
                c.publish("other.x", "out")
            assert denied.value.code == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(tinybroker.SubscribeError) as denied_sub:
                c.subscribe("other.>")
            assert denied_sub.value.code == grpc.StatusCode.PERMISSION_DENIED
        token_file = tmp_path / "token"
        token_file.write_text("app-token-0123456789abcdef\n")
        monkeypatch.setenv("TINYBROKER_TOKEN_FILE", str(token_file))
        with tinybroker.connect(broker.address) as c:
            assert c.publish("au.y", "from the file") > 0
    finally:
        broker.stop()
