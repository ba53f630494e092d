"""Publishing with confirms, fan-out subscriptions, wildcards, refusals,
connecting and the TINYBROKER_SERVER default."""

import threading
import time

import grpc
import pytest

import tinybroker
from conftest import free_port


def test_publish_and_subscribe(client):
    sub = client.subscribe("ps.>")
    ids = client.publish_many([("ps.a", b"one"),
                               tinybroker.Message("ps.b", "two", {"h": "v"},
                                                  "k7")])
    assert ids[0] > 0 and ids[1] > ids[0]
    first, second = sub.get(timeout=5), sub.get(timeout=5)
    assert (first.topic, first.payload, first.message_id) == ("ps.a", b"one",
                                                              ids[0])
    assert (second.text, second.headers, second.key) == ("two", {"h": "v"},
                                                         "k7")
    assert second.accepted_unix_nanos >= first.accepted_unix_nanos > 0
    assert not second.is_group and not second.ack()  # fan-out: no answer
    single = client.publish("ps.c", b"three")
    assert single > ids[1] and sub.get(timeout=5).message_id == single


def test_wildcards(client):
    created = client.subscribe("wc.*.created")
    everything = client.subscribe("wc.>")
    client.publish_many([("wc", b"0"), ("wc.eu.created", b"1"),
                         ("wc.eu.paid", b"2"), ("wc.us.created", b"3")])
    assert [created.get(5).text for _ in range(2)] == ["1", "3"]
    assert [everything.get(5).text for _ in range(3)] == ["1", "2", "3"]
    with pytest.raises(TimeoutError):
        created.get(timeout=0.2)


def test_publish_raises_with_every_result(client):
    with pytest.raises(tinybroker.PublishError) as refused:
        client.publish_many([("pr.ok", b"1"), ("pr..bad", b"2"),
                             ("$sys.mine", b"3")])
    results = refused.value.results
    assert results[0].ok and results[0].id > 0
    assert (results[1].id, results[1].code, results[1].reason) == (
        0, grpc.StatusCode.INVALID_ARGUMENT, "invalid_topic")
    assert results[2].code == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "pr..bad" in str(refused.value)
    assert len(refused.value.failed) == 2
    with pytest.raises(tinybroker.PublishError, match="invalid_topic"):
        client.publish("pr. bad", b"x")


def test_publish_results_never_raise_for_refusals(client):
    results = client.publish_results([("prr..bad", b"1"), ("prr.ok", b"2")])
    assert [r.ok for r in results] == [False, True]
    assert results[0].reason == "invalid_topic" and results[1].id > 0


def test_publish_nowait_pipelines(client):
    sub = client.subscribe("pn.>")
    futures = [client.publish_nowait([("pn.x", str(i))]) for i in range(20)]
    ids = [f.result(5)[0].id for f in futures]
    assert ids == sorted(ids)
    assert [sub.get(5).text for _ in range(20)] == [str(i) for i in range(20)]


def test_bad_pattern_raises_subscribe_error(client):
    with pytest.raises(tinybroker.SubscribeError) as refused:
        client.subscribe("bp.>.x")
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.reason == "invalid_pattern"
    assert "bp.>.x" in str(refused.value)


def test_callback_subscribe(client):
    got, done = [], threading.Event()

    def handle(d):
        got.append((d.topic, threading.current_thread().name))
        if len(got) == 3:
            done.set()
    sub = client.subscribe("cb.>", handle)
    client.publish_many([("cb.a", b""), ("cb.b", b""), ("cb.c", b"")])
    assert done.wait(5)
    assert [t for t, _ in got] == ["cb.a", "cb.b", "cb.c"]
    assert got[0][1] == "tinybroker-callbacks"
    with pytest.raises(TypeError):
        sub.get(0)


def test_unsubscribe_and_close_end_iteration(broker):
    c = tinybroker.connect(broker.address)
    sub = c.subscribe("un.>")
    with c.subscribe("un2.>") as scoped:
        pass
    assert not scoped.active
    seen, got, ended = [], threading.Event(), threading.Event()

    def consume():
        for d in sub:
            seen.append(d.text)
            got.set()
        ended.set()
    thread = threading.Thread(target=consume)
    thread.start()
    c.publish("un.a", "1")
    c.publish("un2.a", "not for the unsubscribed one")
    # The confirm can come before the delivery: close once "1" is in.
    assert got.wait(5)
    c.close()
    assert ended.wait(5) and seen == ["1"]
    assert scoped.get(0) is None
    with pytest.raises(tinybroker.ClientClosedError):
        c.publish("un.a", "late")


def test_connect_refused_within_a_second():
    port = free_port()
    started = time.monotonic()
    with pytest.raises(tinybroker.ConnectError) as refused:
        tinybroker.connect(f"127.0.0.1:{port}")
    assert time.monotonic() - started < 1.0
    assert isinstance(refused.value, ConnectionError)
    assert f"127.0.0.1:{port}" in str(refused.value)
    assert "refused" in str(refused.value).lower()


def test_server_from_environment(broker, monkeypatch):
    monkeypatch.setenv("TINYBROKER_SERVER", broker.address)
    with tinybroker.connect() as c:
        assert c.server == broker.address
        assert c.publish("env.a", b"") > 0
    monkeypatch.delenv("TINYBROKER_SERVER")
    from tinybroker._settings import resolve
    assert resolve().server == "127.0.0.1:7400" == tinybroker.DEFAULT_SERVER


def test_security_settings_refused_before_connecting(tmp_path, monkeypatch):
    with pytest.raises(tinybroker.SecurityError, match="needs its key"):
        tinybroker.connect("127.0.0.1:1", cert=str(tmp_path / "c.pem"))
    with pytest.raises(tinybroker.SecurityError, match="cannot read token"):
        tinybroker.connect("127.0.0.1:1", token_file=str(tmp_path / "none"))
    monkeypatch.setenv("TINYBROKER_TOKEN", "a")
    monkeypatch.setenv("TINYBROKER_TOKEN_FILE", "b")
    with pytest.raises(tinybroker.SecurityError, match="both set"):
        tinybroker.connect("127.0.0.1:1")
