#!/usr/bin/env python3
"""Request/reply round trips: tinybroker against NATS core, interleaved.

Each round runs, for each --rates value and alternating which goes first:
- tinybroker: a fresh broker, then `tinybroker-bench --scenario request`
  (one caller session, one responder session echoing the payload);
- NATS core: a fresh nats-server (Debian's `nats-server`), a responder
  process subscribed to the subject that echoes each request to its reply
  subject, and a caller that publishes requests with reply subjects
  `_INBOX.<id>.<n>` under one wildcard subscription (the muxed inbox NATS
  clients use). No NATS client library: the protocol is a few text lines
  over a socket, in Python (python3-nats is not packaged in Debian).
Both sides are open loop: request i is due at start + i / rate and its round
trip counts from then. Prints each run and the medians of p50 and p99.

  scripts/request_reply_compare.py --broker build/tinybroker \\
      --bench build/tinybroker-bench --rates 1000,10000 --seconds 5 --rounds 3

Note: the NATS side's client is Python, tinybroker's is C++; the Python
client's own cost is in NATS's figures (measured alone: see
docs/performance.md, "Request/reply").
"""
import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

from compare_brokers import free_port, wait_listening


def nats_connect(port):
    """A socket with CONNECT sent and the server's INFO read."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.recv(4096)  # INFO
    s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
    return s


def nats_messages(sock, on_msg, stop):
    """Reads MSG lines from `sock` and calls on_msg(subject, reply, payload)
    until `stop` is set or the socket closes; answers PING."""
    buf = bytearray()
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            continue
        if not chunk:
            return
        buf += chunk
        while True:
            end = buf.find(b"\r\n")
            if end < 0:
                break
            line = bytes(buf[:end])
            if line.startswith(b"MSG "):
                parts = line.split()
                size = int(parts[-1])
                if len(buf) < end + 2 + size + 2:
                    break
                payload = bytes(buf[end + 2:end + 2 + size])
                reply = parts[3] if len(parts) == 5 else b""
                del buf[:end + 2 + size + 2]
                on_msg(parts[1], reply, payload)
                continue
            del buf[:end + 2]
            if line == b"PING":
                sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                sys.exit(f"nats: {line.decode()}")


def nats_responder(port, subject, ready, stop):
    """Echoes each request on `subject` to its reply subject."""
    sock = nats_connect(port)
    sock.sendall(f"SUB {subject} 1\r\nPING\r\n".encode())
    ready.set()

    def echo(_subject, reply, payload):
        sock.sendall(b"PUB " + reply + b" " + str(len(payload)).encode()
                     + b"\r\n" + payload + b"\r\n")
    nats_messages(sock, echo, stop)


def nats_caller(port, subject, rate, count, size):
    """Sends `count` requests at `rate`; returns (replies, p50 us, p99 us)."""
    sock = nats_connect(port)
    inbox = f"_INBOX.{os.getpid()}"
    sock.sendall(f"SUB {inbox}.* 2\r\nPING\r\n".encode())
    time.sleep(0.1)
    due = [0.0] * count
    latencies = []
    stop = threading.Event()
    prefix = len(inbox) + 1

    def on_reply(subject_, _reply, _payload):
        i = int(subject_[prefix:])
        latencies.append(time.perf_counter() - due[i])
        if len(latencies) == count:
            stop.set()
    reader = threading.Thread(target=nats_messages, args=(sock, on_reply, stop))
    reader.start()
    payload = b"x" * size
    head = f"PUB {subject} ".encode()
    start = time.perf_counter() + 0.01
    i = 0
    while i < count:
        now = time.perf_counter()
        out = []
        while i < count and start + i / rate <= now:
            due[i] = start + i / rate
            out.append(head + f"{inbox}.{i} {size}\r\n".encode() + payload
                       + b"\r\n")
            i += 1
        if out:
            sock.sendall(b"".join(out))
        else:
            time.sleep(max(0.0, min(0.0005, start + i / rate - now)))
    stop.wait(5.0)
    stop.set()
    reader.join()
    sock.close()
    lat = sorted(latencies)
    if not lat:
        return 0, 0.0, 0.0
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e6
    return len(lat), pick(0.50), pick(0.99)


def run_nats(rate, count, size):
    port = free_port()
    server = subprocess.Popen(["nats-server", "-a", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(port, time.time() + 10):
            sys.exit("request_reply_compare: nats-server did not listen")
        ready, stop = multiprocessing.Event(), multiprocessing.Event()
        responder = multiprocessing.Process(
            target=nats_responder, args=(port, "svc.echo", ready, stop))
        responder.start()
        ready.wait(5)
        time.sleep(0.1)
        replies, p50, p99 = nats_caller(port, "svc.echo", rate, count, size)
        stop.set()
        responder.join(5)
        return {"replies": replies, "p50_us": p50, "p99_us": p99}
    finally:
        server.terminate()
        server.wait()


def run_tinybroker(broker, bench, rate, count, size):
    port = free_port()
    proc = subprocess.Popen([broker, "--listen", f"127.0.0.1:{port}",
                             "--metrics-listen", "off"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(port, time.time() + 10):
            sys.exit(f"request_reply_compare: {broker} did not listen")
        out = subprocess.run([bench, "--server", f"127.0.0.1:{port}",
                              "--json", "--scenario", "request", "--rate",
                              str(rate), "--messages", str(count), "--size",
                              str(size)], capture_output=True, text=True,
                             timeout=120)
        report = json.loads(out.stdout.strip().splitlines()[-1])
        return {"replies": report["replies"], "p50_us": report["p50_us"],
                "p99_us": report["p99_us"]}
    finally:
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--rates", default="1000,10000")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    results = {(side, r): [] for side in ("tinybroker", "nats") for r in rates}
    for round_ in range(args.rounds):
        for rate in rates:
            count = int(rate * args.seconds)
            order = ["tinybroker", "nats"]
            if round_ % 2:
                order.reverse()
            for side in order:
                if side == "nats":
                    res = run_nats(rate, count, args.size)
                else:
                    res = run_tinybroker(args.broker, args.bench, rate, count,
                                         args.size)
                results[(side, rate)].append(res)
                print(f"round {round_ + 1} {side:10} {rate:>6}/s: replies "
                      f"{res['replies']}/{count}, p50 {res['p50_us']:.0f} us, "
                      f"p99 {res['p99_us']:.0f} us", flush=True)
    print("\nmedians of", args.rounds, "rounds:")
    print(f"{'side':10} {'rate':>7} {'p50 us':>8} {'p99 us':>8} {'replies':>8}")
    for (side, rate), runs in results.items():
        print(f"{side:10} {rate:>7} "
              f"{statistics.median(r['p50_us'] for r in runs):>8.0f} "
              f"{statistics.median(r['p99_us'] for r in runs):>8.0f} "
              f"{min(r['replies'] for r in runs):>8}")


if __name__ == "__main__":
    main()
