"""Issue 28: idempotent publishing. A message's msg_id seen on its topic
within the broker's window is confirmed as a duplicate and routed nowhere;
an idempotent client (threaded and asyncio) whose connection is cut
mid-publish by a TCP proxy sends the unconfirmed messages again after the
reconnect: every message reaches the subscriber exactly once."""

import asyncio
import collections
import socket
import threading
import time
from typing import List

import pytest

import tinybroker
import tinybroker.aio
from tinybroker import Message
from tinybroker._types import GENERATED_MSG_ID_BYTES, generated_msg_id

from conftest import wait_until


class Proxy:
    """Forwards loopback connections to `target`; cut() ends them all."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.links: List[socket.socket] = []
        self.accepted = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self.lock:
                self.accepted += 1
                self.links += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Ends every open connection, as a network failure would."""
        with self.lock:
            links, self.links = self.links, []
        for s in links:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.cut()
        self.listener.close()


TOTAL = 1500
CUTS = 3


def check_exactly_once(payloads: List[bytes]) -> None:
    counts = collections.Counter(payloads)
    lost = [i for i in range(TOTAL) if counts[b"m%d" % i] == 0]
    doubled = [i for i in range(TOTAL) if counts[b"m%d" % i] > 1]
    assert (len(lost), len(doubled)) == (0, 0), (lost[:5], doubled[:5])


def test_same_msg_id_is_a_duplicate(broker):
    got: List[bytes] = []
    with tinybroker.connect(broker.address) as c:
        c.subscribe("pyidem.one", lambda d: got.append(d.payload))
        first = c.publish("pyidem.one", "first", msg_id="order-1")
        [result] = c.publish_results([Message("pyidem.one", "again",
                                              msg_id="order-1")])
        assert result.duplicate and result.id == first
        c.publish("pyidem.one", "end")
        assert wait_until(lambda: len(got) == 2)
    assert got == [b"first", b"end"]


def test_msg_ids_are_bytes_and_str_is_sent_as_utf8(broker):
    # Issue 28: msg_id is a bytes field; any bytes are an id, and a str is
    # its UTF-8 bytes.
    with tinybroker.connect(broker.address) as c:
        binary = b"\xff\x00\x01id"
        first = c.publish("pyidem.bytes", "1", msg_id=binary)
        [again] = c.publish_results([Message("pyidem.bytes", "2",
                                             msg_id=bytearray(binary))])
        assert again.duplicate and again.id == first
        text = c.publish("pyidem.bytes", "3", msg_id="caf\u00e9")
        [same] = c.publish_results([Message("pyidem.bytes", "4",
                                            msg_id=b"caf\xc3\xa9")])
        assert same.duplicate and same.id == text
        with pytest.raises(TypeError, match="msg_id"):
            c.publish("pyidem.bytes", "5", msg_id=7)  # type: ignore


def test_generated_msg_ids_are_15_bytes(broker):
    assert generated_msg_id(b"\x01" * 8, 1) == b"\x01" * 8 + b"\0" * 6 + b"\1"
    assert generated_msg_id(b"r" * 8, 2**56 + 5)[8:] == b"\0" * 6 + b"\5"
    # The threaded and the asyncio client's first generated id is their
    # prefix and 1: another client publishing that id gets a duplicate.
    with tinybroker.connect(broker.address, idempotent=True) as pub, \
            tinybroker.connect(broker.address) as other:
        first = pub.publish("pyidem.gen", "x")
        id1 = generated_msg_id(pub._id_prefix, 1)
        assert len(id1) == GENERATED_MSG_ID_BYTES == 15
        [copy] = other.publish_results([Message("pyidem.gen", "y",
                                                msg_id=id1)])
        assert copy.duplicate and copy.id == first

    async def main() -> None:
        async with tinybroker.aio.connect(broker.address,
                                          idempotent=True) as apub:
            first = await apub.publish("pyidem.agen", "x")
            [copy] = await apub.publish_results([Message(
                "pyidem.agen", "y",
                msg_id=generated_msg_id(apub._id_prefix, 1))])
            assert copy.duplicate and copy.id == first
            # Its own binary ids are bytes too.
            [own] = await apub.publish_results([Message(
                "pyidem.agen", "z", msg_id=b"\xfe")])
            assert own.ok and not own.duplicate

    asyncio.run(main())


def test_a_frame_of_generated_ids_carries_only_its_first(broker):
    # Consecutive generated ids: the frame's msg_id_base, none per message.
    from tinybroker._proto import tinybroker_pb2 as pb
    from tinybroker._publishing import number_from_base
    prefix = b"p" * 8
    chunk = [pb.Message(topic="t", msg_id=generated_msg_id(prefix, n))
             for n in (4, 5, 6)]
    assert number_from_base(chunk, [4, 5, 6], prefix) == \
        generated_msg_id(prefix, 4)
    assert [m.msg_id for m in chunk] == [b"", b"", b""]
    # A user's own id (number 0) or a gap: every id stays in its message.
    mixed = [pb.Message(topic="t", msg_id=generated_msg_id(prefix, 7)),
             pb.Message(topic="t", msg_id=b"own")]
    assert number_from_base(mixed, [7, 0], prefix) == b""
    assert [m.msg_id for m in mixed] == [generated_msg_id(prefix, 7), b"own"]
    # The broker numbers them as their ids: the third id sent on its own by
    # another client is a duplicate of the third message.
    with tinybroker.connect(broker.address, idempotent=True) as pub, \
            tinybroker.connect(broker.address) as other:
        ids = pub.publish_many([Message("pyidem.base", str(i))
                                for i in range(3)])
        [copy] = other.publish_results([Message(
            "pyidem.base", "again", msg_id=generated_msg_id(pub._id_prefix, 3))])
        assert copy.duplicate and copy.id == ids[2]


def test_threaded_cut_connections_lose_and_double_nothing(broker):
    got: List[bytes] = []
    proxy = Proxy(broker.address)
    with tinybroker.connect(broker.address) as consumer, \
            tinybroker.connect(proxy.address, idempotent=True,
                               reconnect_initial_backoff=0.05,
                               reconnect_max_backoff=0.5,
                               reconnect_max_attempts=100) as pub:
        consumer.subscribe("pyidem.t.>", lambda d: got.append(d.payload))
        futures = []
        for i in range(TOTAL):
            futures.append(pub.publish_nowait(
                [("pyidem.t.%d" % (i % 5), "m%d" % i)]))
            if (i + 1) % (TOTAL // (CUTS + 1)) == 0 and i + 1 < TOTAL:
                # Connected again since the last cut.
                cut = (i + 1) // (TOTAL // (CUTS + 1))
                assert wait_until(lambda: proxy.accepted == cut
                                  and pub.state == "connected", 10)
                time.sleep(0.002)
                proxy.cut()
        results = [r for f in futures for r in f.result(30)]
        assert all(r.ok for r in results)
        assert proxy.accepted == CUTS + 1
        assert pub.republished > 0
        consumer.publish("pyidem.t.end", "end")
        assert wait_until(lambda: len(got) >= TOTAL + 1, 10)
        time.sleep(0.1)
    proxy.close()
    check_exactly_once(got)


def test_asyncio_cut_connections_lose_and_double_nothing(broker):
    got: List[bytes] = []
    proxy = Proxy(broker.address)

    async def main() -> None:
        async with tinybroker.aio.connect(broker.address) as consumer, \
                tinybroker.aio.connect(proxy.address, idempotent=True,
                                       reconnect_initial_backoff=0.05,
                                       reconnect_max_backoff=0.5,
                                       reconnect_max_attempts=100) as pub:
            await consumer.subscribe("pyidem.a.>",
                                     lambda d: got.append(d.payload))
            futures = []
            for i in range(TOTAL):
                futures.append(pub.publish_nowait(
                    [("pyidem.a.%d" % (i % 5), "m%d" % i)]))
                if (i + 1) % (TOTAL // (CUTS + 1)) == 0 and i + 1 < TOTAL:
                    cut = (i + 1) // (TOTAL // (CUTS + 1))
                    for _ in range(1000):
                        if proxy.accepted == cut and pub.state == "connected":
                            break
                        await asyncio.sleep(0.01)
                    await asyncio.sleep(0.005)
                    proxy.cut()
            results = [r for f in await asyncio.wait_for(
                asyncio.gather(*futures), 30) for r in f]
            assert all(r.ok for r in results)
            assert proxy.accepted == CUTS + 1
            assert pub.republished > 0
            await consumer.publish("pyidem.a.end", "end")
            for _ in range(1000):
                if len(got) >= TOTAL + 1:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)

    asyncio.run(main())
    proxy.close()
    check_exactly_once(got)
