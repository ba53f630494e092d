#!/usr/bin/env python3
"""NATS core's CPU per subscribe, for comparison with subscribe_cost.py.

Starts a fresh nats-server (Debian's `nats-server`, not a build dependency)
per round on a free loopback port, sends --count literal SUB lines over one
connection in chunks of --chunk (pipelined, as NATS clients send them), then
a PING, and waits for the PONG: by then the server has handled every SUB.
Prints the server's CPU (from /proc) per subscribe for each round and the
median. No NATS code is used: the protocol is a few text lines.

  scripts/nats_subscribe_cost.py --count 100000 --rounds 3
  scripts/nats_subscribe_cost.py --count 10000 --wildcard   # sub.<i>.* patterns
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

from compare_brokers import free_port, wait_listening

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User plus system CPU of process `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def read_until(sock, marker, deadline):
    data = b""
    while marker not in data:
        if time.time() > deadline:
            sys.exit(f"nats_subscribe_cost: no {marker!r} from the server")
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("nats_subscribe_cost: the server closed the connection")
        data += chunk
    return data


def run_once(server, count, chunk, wildcard):
    port = free_port()
    proc = subprocess.Popen([server, "-a", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(port, time.time() + 10):
            sys.exit(f"nats_subscribe_cost: {server} did not listen")
        sock = socket.create_connection(("127.0.0.1", port))
        deadline = time.time() + 600
        read_until(sock, b"\r\n", deadline)  # INFO
        sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                     b"PING\r\n")
        read_until(sock, b"PONG\r\n", deadline)
        before = cpu_seconds(proc.pid)
        start = time.monotonic()
        for first in range(0, count, chunk):
            form = b"SUB sub.%d.* %d\r\n" if wildcard else b"SUB sub.%d %d\r\n"
            lines = b"".join(form % (i, i + 1)
                             for i in range(first, min(count, first + chunk)))
            sock.sendall(lines)
        sock.sendall(b"PING\r\n")
        read_until(sock, b"PONG\r\n", deadline)
        wall = time.monotonic() - start
        used = cpu_seconds(proc.pid) - before
        sock.close()
        return used * 1e6 / count, wall * 1e6 / count
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="nats-server")
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("--chunk", type=int, default=1000,
                    help="SUB lines per socket write")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wildcard", action="store_true",
                    help="subscribe sub.<i>.* instead of sub.<i>")
    args = ap.parse_args()
    cpu = []
    for r in range(args.rounds):
        used, wall = run_once(args.server, args.count, args.chunk, args.wildcard)
        cpu.append(used)
        print(f"round {r + 1}: server cpu {used:.2f} us/sub, wall "
              f"{wall:.2f} us/sub", flush=True)
    print(f"nats-server: median cpu {statistics.median(cpu):.2f} us/sub "
          f"(runs {', '.join(f'{c:.2f}' for c in cpu)})")


if __name__ == "__main__":
    main()
