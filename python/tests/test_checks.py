"""Issue 26: what the client refuses before sending (point 9: payload and
string types, text that is not UTF-8; point 3: messages over the broker's
limits.max_message_bytes) and the client name it sends (point 6)."""

import asyncio
from concurrent import futures

import grpc
import pytest

import tinybroker
import tinybroker.aio
from tinybroker._proto import tinybroker_pb2 as pb
from tinybroker._proto import tinybroker_pb2_grpc as pb_grpc

# -- point 9: types and UTF-8 -------------------------------------------------


@pytest.mark.parametrize("payload", [5, [1, 2, 3], None, 1.5, {"a": 1}])
def test_a_payload_that_is_not_bytes_or_str_is_a_type_error(client, payload):
    with pytest.raises(TypeError, match="payload must be bytes, bytearray, "
                       "memoryview or str"):
        client.publish("chk.x", payload)


def test_bytes_like_and_str_payloads_arrive_as_sent(client):
    sub = client.subscribe("chkok.>")
    for payload, wire in [(b"ab", b"ab"), (bytearray(b"cd"), b"cd"),
                          (memoryview(b"ef"), b"ef"), ("é", "é".encode())]:
        client.publish("chkok.x", payload)
        assert sub.get(5).payload == wire


@pytest.mark.parametrize("call, field", [
    (lambda c: c.publish("chk.\udcff", b"x"), "messages[0].topic"),
    (lambda c: c.publish(b"chk.\xff", b"x"), "messages[0].topic"),
    (lambda c: c.publish("chk.x", "\udc80"), "messages[0].payload"),
    (lambda c: c.publish("chk.x", b"", key="k\udc80"), "messages[0].key"),
    (lambda c: c.publish("chk.x", b"", headers={"h": "\udc80"}),
     "messages[0].headers['h']"),
    (lambda c: c.publish_many([("chk.a", b""), ("chk.\udcff", b"")]),
     "messages[1].topic"),
    (lambda c: c.subscribe("chk.\udcff"), "pattern"),
    (lambda c: c.join("g\udcff", "chk.>"), "group"),
    (lambda c: c.join("chkg", "chk.>", tags=["ok", "t\udcff"]), "tags[1]"),
    (lambda c: c.subscribe_many(["chk.a", "chk.\udcff"]), "patterns[1]"),
    (lambda c: c.create_group("g\udcff", "chk.>"), "name"),
    (lambda c: c.publish_unary([("chk.\udcff", b"")]), "messages[0].topic"),
])
def test_text_that_is_not_utf8_names_the_field(client, call, field):
    with pytest.raises(tinybroker.InvalidRequestError) as raised:
        call(client)
    assert str(raised.value).startswith(field + " ")
    assert "is not UTF-8" in str(raised.value)
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert client.state == "connected"  # nothing was sent; the stream goes on
    client.publish("chk.after", b"ok")


def test_a_topic_that_is_not_text_is_a_type_error(client):
    with pytest.raises(TypeError, match="messages\\[0\\].topic must be a str"):
        client.publish(5, b"x")
    with pytest.raises(TypeError, match="pattern must be a str"):
        client.subscribe(None)


def test_asyncio_checks_the_same(broker):
    async def main():
        async with tinybroker.aio.connect(broker.address) as c:
            with pytest.raises(TypeError, match="payload must be bytes"):
                await c.publish("achk.x", 5)
            with pytest.raises(tinybroker.InvalidRequestError,
                               match="^messages\\[0\\].topic"):
                await c.publish("achk.\udcff", b"")
            with pytest.raises(tinybroker.InvalidRequestError,
                               match="^group"):
                await c.join("g\udcff", "achk.>")
            assert await c.publish("achk.x", "still") > 0
    asyncio.run(main())


# -- point 3: messages over the broker's limit ---------------------------------

SMALL_LIMIT = """
[limits]
max_message_bytes = "1KiB"
"""


@pytest.fixture
def small_broker():
    from conftest import Broker
    b = Broker(SMALL_LIMIT)
    yield b
    b.stop()


def test_a_message_over_the_limit_is_refused_before_sending(small_broker):
    with tinybroker.connect(small_broker.address) as c:
        sub = c.subscribe("big.>")
        c.publish("big.ok", b"x" * 1024)  # at the limit: fine
        with pytest.raises(tinybroker.MessageTooLargeError) as raised:
            c.publish("big.x", b"x" * 1025)
        text = str(raised.value)
        assert "1025 bytes" in text and "at most 1024" in text
        assert "limits.max_message_bytes" in text
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(tinybroker.MessageTooLargeError,
                           match="headers and key"):
            c.publish("big.x", b"x" * 1000, headers={"h": "v" * 30})
        with pytest.raises(tinybroker.MessageTooLargeError):
            c.publish_unary([("big.x", b"x" * 1025)])
        assert c.state == "connected" and c.connections == 1
        assert sub.times_subscribed == 1  # the stream was never dropped
        c.publish("big.after", b"y")
        assert sub.get(5).topic == "big.ok"
        assert sub.get(5).topic == "big.after"


def test_a_70_mib_publish_is_refused_before_sending(broker):
    payload = b"x" * (70 << 20)
    with tinybroker.connect(broker.address) as c:
        sub = c.subscribe("huge.>")
        with pytest.raises(tinybroker.MessageTooLargeError,
                           match="at most 1048576"):
            c.publish("huge.x", payload)
        del payload
        assert c.connections == 1 and sub.times_subscribed == 1
        c.publish("huge.after", b"y")
        assert sub.get(5).topic == "huge.after"


def test_asyncio_refuses_a_message_over_the_limit(small_broker):
    async def main():
        async with tinybroker.aio.connect(small_broker.address) as c:
            with pytest.raises(tinybroker.MessageTooLargeError,
                               match="at most 1024"):
                await c.publish("abig.x", b"x" * 1025)
            assert c.connections == 1
            assert await c.publish("abig.x", b"x" * 1024) > 0
    asyncio.run(main())


def test_a_batch_is_split_into_frames_under_the_frame_bytes(broker):
    # 70 messages of 1 MiB: more than a 64 MiB frame holds, so two frames
    # (one frame would exceed what a broker reads and end the stream).
    with tinybroker.connect(broker.address) as c:
        ids = c.publish_many([("split.x", b"x" * (1 << 20))] * 70, timeout=60)
        assert len(ids) == 70 and c.connections == 1


# -- point 6: the client name -----------------------------------------------


class Recorder(pb_grpc.BrokerServicer):
    """A stand-in broker that records each call's metadata."""

    def __init__(self):
        self.seen = []

    def _record(self, context, method):
        self.seen.append((method, dict(context.invocation_metadata())))

    def Info(self, request, context):
        self._record(context, "Info")
        return pb.InfoReply(max_message_bytes=1 << 20, max_publish_batch=4096)

    def Publish(self, request, context):
        self._record(context, "Publish")
        return pb.PublishReply(results=[pb.PublishResult(id=1)])

    def Session(self, frames, context):
        self._record(context, "Session")
        for frame in frames:
            if frame.WhichOneof("kind") == "publish":
                yield pb.ServerFrame(publish_confirm=pb.PublishConfirm(
                    request_id=frame.request_id,
                    results=[pb.PublishResult(id=1)
                             for _ in frame.publish.messages]))


@pytest.fixture
def recorder():
    server = grpc.server(futures.ThreadPoolExecutor(4))
    record = Recorder()
    pb_grpc.add_BrokerServicer_to_server(record, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    record.address = f"127.0.0.1:{port}"
    yield record
    server.stop(0)


def test_the_name_travels_with_every_call(recorder):
    with tinybroker.connect(recorder.address, name="resizer-7") as c:
        assert c.name == "resizer-7"
        c.publish("n.x", b"1")
        c.publish_unary([("n.x", b"2")])
    methods = {m for m, _ in recorder.seen}
    assert {"Session", "Info", "Publish"} <= methods
    for method, metadata in recorder.seen:
        assert metadata.get("tinybroker-client-name") == "resizer-7", method


def test_asyncio_sends_the_name(recorder):
    async def main():
        async with tinybroker.aio.connect(recorder.address,
                                          name="async worker") as c:
            await c.publish("n.x", b"1")
    asyncio.run(main())
    assert recorder.seen and all(
        md.get("tinybroker-client-name") == "async worker"
        for _, md in recorder.seen)


def test_no_name_sends_no_name_metadata(recorder):
    with tinybroker.connect(recorder.address) as c:
        c.publish("n.x", b"1")
        assert c.name is None
    assert all("tinybroker-client-name" not in md for _, md in recorder.seen)


def test_non_ascii_names_are_percent_encoded(recorder):
    with tinybroker.connect(recorder.address, name="wörker 100%") as c:
        c.publish("n.x", b"1")
    assert recorder.seen[0][1]["tinybroker-client-name"] == \
        "w%C3%B6rker 100%25"


@pytest.mark.parametrize("name, match", [
    ("x" * 129, "129 bytes of UTF-8; the most is 128"),
    ("é" * 65, "130 bytes of UTF-8; the most is 128"),
    ("a\nb", "control character"),
    ("a\udcffb", "is not UTF-8"),
])
def test_a_bad_name_is_refused_before_connecting(name, match):
    with pytest.raises(tinybroker.InvalidRequestError, match=match) as raised:
        tinybroker.connect("127.0.0.1:1", name=name)
    assert str(raised.value).startswith("name ")
    with pytest.raises(TypeError, match="name must be a str"):
        tinybroker.connect("127.0.0.1:1", name=7)
    tinybroker.connect("127.0.0.1:1", name="x" * 128, lazy=True).close()
