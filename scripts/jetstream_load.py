"""JetStream R3 in memory on 3 nats-server processes on loopback, and an
S3-like load on it (one publisher waiting for each message's PubAck,
4 workers pulling from one durable consumer with explicit acks), for
scripts/replica_figures.py: the peer of a tinybroker group with
`replicas = 1` (issue 32 point 6).

The clients speak the NATS text protocol over plain sockets from Python
(no NATS client library is packaged for this machine), each role in its own
process; the figure is acked messages per second from the first publish to
the last ack. Debian's nats-server (2.9) is enough: apt-get install
nats-server.

Nothing here is a test: the cluster's tests are in tests/cluster/.
"""
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import tempfile
import time

from cluster_nodes import free_port, wait_listening

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"


class NatsConn:
    """One NATS connection: publish, subscribe, and read MSG/HMSG frames."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.out = []
        self._line()  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,'
                          b'"headers":true,"protocol":1}\r\nPING\r\n')
        while self._line() != b"PONG":
            pass

    def _fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("nats-server closed the connection")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def pub(self, subject, payload=b"", reply=None):
        head = subject if reply is None else f"{subject} {reply}"
        self.out.append(f"PUB {head} {len(payload)}\r\n".encode() + payload +
                        b"\r\n")

    def sub(self, subject, sid):
        self.out.append(f"SUB {subject} {sid}\r\n".encode())

    def flush(self):
        if self.out:
            self.sock.sendall(b"".join(self.out))
            self.out = []

    def next_msg(self):
        """(subject, reply, headers bytes, payload) of the next message."""
        while True:
            line = self._line()
            if line.startswith(b"MSG "):
                parts = line.split()
                reply = parts[3].decode() if len(parts) == 5 else None
                return parts[1].decode(), reply, b"", self._take(
                    int(parts[-1]))
            if line.startswith(b"HMSG "):
                parts = line.split()
                reply = parts[3].decode() if len(parts) == 6 else None
                hdr, total = int(parts[-2]), int(parts[-1])
                data = self._take(total)
                return parts[1].decode(), reply, data[:hdr], data[hdr:]
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise ConnectionError(line.decode())

    def request(self, subject, payload, timeout=5.0):
        inbox = f"_INBOX.req.{time.monotonic_ns()}"
        self.sub(inbox, 999)
        self.pub(subject, payload, inbox)
        self.flush()
        self.sock.settimeout(timeout)
        try:
            _, _, _, data = self.next_msg()
        finally:
            self.sock.settimeout(None)
            self.out.append(b"UNSUB 999\r\n")
        return json.loads(data or b"{}")


class JetStreamCluster:
    """3 nats-server processes with JetStream, routes between them."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tb-jetstream-")
        self.ports = [free_port() for _ in range(3)]
        self.routes = [free_port() for _ in range(3)]
        self.procs = []

    def __enter__(self):
        for i in range(3):
            routes = ", ".join(f'"nats-route://127.0.0.1:{p}"'
                               for j, p in enumerate(self.routes) if j != i)
            conf = os.path.join(self.dir, f"js{i + 1}.conf")
            with open(conf, "w") as f:
                f.write(f'listen: "127.0.0.1:{self.ports[i]}"\n'
                        f'server_name: "js{i + 1}"\n'
                        f'jetstream {{ store_dir: "{self.dir}/s{i + 1}", '
                        'max_memory_store: 4GB }\n'
                        f'cluster {{ name: "tb", listen: '
                        f'"127.0.0.1:{self.routes[i]}", routes: [{routes}] }}'
                        "\n")
            log = open(os.path.join(self.dir, f"js{i + 1}.log"), "ab")
            self.procs.append(subprocess.Popen([NATS_SERVER, "-c", conf],
                                               stdout=log, stderr=log))
        for p in self.ports:
            if not wait_listening(p, 20):
                self.__exit__()
                raise SystemExit(f"jetstream: nats-server on {p} did not "
                                 f"start; see {self.dir}")
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def pids(self):
        return [p.pid for p in self.procs]


def _create(port, name, subject):
    """Creates a memory stream with 3 replicas and a durable pull consumer,
    retrying while the cluster elects its JetStream leader."""
    conn = NatsConn(port)
    stream = {"name": name, "subjects": [subject], "storage": "memory",
              "num_replicas": 3, "retention": "workqueue"}
    deadline = time.time() + 30
    while True:
        try:
            r = conn.request(f"$JS.API.STREAM.CREATE.{name}",
                             json.dumps(stream).encode())
        except (socket.timeout, TimeoutError):
            r = {"error": {"description": "timeout"}}
        if "error" not in r:
            break
        if time.time() > deadline:
            raise SystemExit(f"jetstream: stream not created: {r}")
        time.sleep(0.5)
    consumer = {"stream_name": name,
                "config": {"durable_name": "W", "ack_policy": "explicit",
                           "max_ack_pending": 20000, "ack_wait": 30 * 10**9}}
    r = conn.request(f"$JS.API.CONSUMER.DURABLE.CREATE.{name}.W",
                     json.dumps(consumer).encode())
    if "error" in r:
        raise SystemExit(f"jetstream: consumer not created: {r}")


def _publisher(port, subject, count, size, window, out):
    conn = NatsConn(port)
    conn.sub("_INBOX.pa.*", 1)
    conn.flush()
    payload = b"x" * size
    sent = acked = errors = 0
    start = time.time()
    while acked + errors < count:
        while sent < count and sent - acked - errors < window:
            conn.pub(subject, payload, f"_INBOX.pa.{sent}")
            sent += 1
        conn.flush()
        _, _, _, data = conn.next_msg()
        if b'"error"' in data:
            errors += 1
        else:
            acked += 1
    out.put(("pub", start, time.time(), acked, errors))


def _worker(port, name, index, total, done, out):
    conn = NatsConn(port)
    inbox = f"_INBOX.w{index}"
    conn.sub(inbox, 1)
    acked = 0
    last = time.time()
    while done.value < total:
        conn.pub(f"$JS.API.CONSUMER.MSG.NEXT.{name}.W",
                 b'{"batch":256,"expires":200000000}', inbox)
        conn.flush()
        # A full batch ends with its 256th message; a short one with a
        # status (404 no messages, 408 expired).
        for _ in range(256):
            _, reply, headers, _ = conn.next_msg()
            if headers.startswith(b"NATS/1.0 4"):
                break
            if reply:
                conn.pub(reply, b"")
                acked += 1
                with done.get_lock():
                    done.value += 1
                if len(conn.out) >= 64:
                    conn.flush()
                    last = time.time()
            if done.value >= total:
                break
        conn.flush()
        last = time.time()
    out.put(("work", index, last, acked))


def s3(count=200_000, size=128, workers=4, window=512):
    """Runs the load once on a fresh 3-node JetStream; returns a dict with
    acked_msgs_per_s, published, publish errors and acked."""
    with JetStreamCluster() as js:
        name, subject = "S3", "s3.x"
        _create(js.ports[0], name, subject)
        out = multiprocessing.Queue()
        done = multiprocessing.Value("q", 0)
        # Workers on the 2nd and 3rd server, the publisher on the 1st, as
        # the tinybroker cluster runs publisher and workers on two nodes.
        procs = [multiprocessing.Process(
            target=_worker, args=(js.ports[1 + i % 2], name, i, count, done,
                                  out)) for i in range(workers)]
        procs.append(multiprocessing.Process(
            target=_publisher, args=(js.ports[0], subject, count, size,
                                     window, out)))
        for p in procs:
            p.start()
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        pub = next(r for r in results if r[0] == "pub")
        end = max(r[2] for r in results if r[0] == "work")
        acked = sum(r[3] for r in results if r[0] == "work")
        return {"acked_msgs_per_s": acked / (end - pub[1]),
                "published": pub[3], "publish_errors": pub[4],
                "acked": acked, "seconds": end - pub[1]}
