#!/usr/bin/env python3
"""What open consoles cost the broker (issue 27 point 6), interleaved.

Part 1, throughput: each round starts a fresh broker twice, once with no
console open and once with N consoles open (N threads each asking
/api/stats once a second, as the page does: overview, groups, sessions,
topics and actors views in turn), alternating which goes first, and runs
tinybroker-bench against it. Prints delivered msgs/s and the broker's CPU
seconds per million messages, and the medians' ratios (open / closed).

  scripts/console_cost.py --broker build/tinybroker \\
      --bench build/tinybroker-bench --rounds 5 -- --scenario s1 \\
      --rate 100000 --messages 1500000

Part 2, --scale: one broker with T topics and S idle sessions (made by
tinybroker-bench, bounded), then times /api/stats for each view R times
and prints the median and the worst.

  scripts/console_cost.py --broker build/tinybroker \\
      --bench build/tinybroker-bench --scale --topics 100000 --sessions 10000
"""
import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

VIEWS = [
    "limit=1",                                   # overview
    "group_filter=&limit=500",                   # groups
    "session_filter=&limit=100",                 # sessions
    "topic_pattern=%3E&limit=100",               # topics
    "actors=1&limit=100",                        # actors
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, deadline):
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def get(url, timeout=10):
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as res:
        body = res.read()
    return time.perf_counter() - started, body


class Consoles:
    """N pollers, each asking one view a second (the views in turn)."""

    def __init__(self, base, n):
        self.base = base
        self.stop = threading.Event()
        self.polls = 0
        self.errors = 0
        self.threads = [threading.Thread(target=self.run, args=(i,))
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def run(self, index):
        i = index
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                get(self.base + "api/stats?" + VIEWS[i % len(VIEWS)])
                self.polls += 1
            except OSError:
                self.errors += 1
            i += 1
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def start_broker(binary):
    port, metrics = free_port(), free_port()
    proc = subprocess.Popen(
        [binary, "--listen", f"127.0.0.1:{port}", "--metrics-listen",
         f"127.0.0.1:{metrics}", "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_listening(port, time.time() + 10) or not wait_listening(
            metrics, time.time() + 10):
        proc.kill()
        sys.exit("console_cost: the broker did not listen")
    return proc, port, f"http://127.0.0.1:{metrics}/"


def run_once(args, bench_args, consoles):
    proc, port, base = start_broker(args.broker)
    pollers = Consoles(base, consoles) if consoles else None
    try:
        out = subprocess.run(
            [args.bench, "--server", f"127.0.0.1:{port}", "--json",
             "--broker-pid", str(proc.pid)] + bench_args,
            capture_output=True, text=True, timeout=600)
        report = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        polls = pollers.polls if pollers else 0
        errors = pollers.errors if pollers else 0
        if pollers:
            pollers.close()
        proc.terminate()
        proc.wait(timeout=30)
    rate = float(report["delivered_msgs_per_s"])
    cpu = float(report["broker_cpu_s"])
    messages = float(report.get("received") or report.get("messages") or 1)
    return rate, cpu / messages * 1e6, polls, errors


def throughput(args, bench_args):
    results = {"closed": [], "open": []}
    for r in range(args.rounds):
        order = ["closed", "open"] if r % 2 == 0 else ["open", "closed"]
        for which in order:
            rate, cpu, polls, errors = run_once(
                args, bench_args, args.consoles if which == "open" else 0)
            results[which].append((rate, cpu))
            print(f"round {r + 1} {which:6}: {rate:,.0f} delivered msgs/s, "
                  f"broker {cpu:.3f} CPU s per million messages"
                  + (f", {polls} console polls, {errors} failed"
                     if which == "open" else ""), flush=True)
    med = {k: (statistics.median(x[0] for x in v),
               statistics.median(x[1] for x in v))
           for k, v in results.items()}
    print(f"median closed {med['closed'][0]:,.0f} msgs/s "
          f"{med['closed'][1]:.3f} CPU s/M; open {med['open'][0]:,.0f} msgs/s "
          f"{med['open'][1]:.3f} CPU s/M; throughput open/closed "
          f"{med['open'][0] / med['closed'][0]:.3f}, CPU per message "
          f"open/closed {med['open'][1] / med['closed'][1]:.3f}")


def scale(args):
    proc, port, base = start_broker(args.broker)
    helpers = []
    try:
        server = f"127.0.0.1:{port}"
        # Topics: publish once to each (they live topic_idle_timeout, 60 s).
        subprocess.run([args.bench, "--server", server, "--scenario",
                        "topics-new", "--topics", str(args.topics),
                        "--max-seconds", "120"], check=True,
                       stdout=subprocess.DEVNULL, timeout=180)
        # Idle sessions, kept open while the bench waits (--settle).
        helpers.append(subprocess.Popen(
            [args.bench, "--server", server, "--scenario", "idle",
             "--sessions", str(args.sessions), "--broker-pid",
             str(proc.pid), "--settle", str(args.hold)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 120
        while time.time() < deadline:
            _, body = get(base + "api/stats?limit=1")
            b = json.loads(body)["stats"]["broker"]
            if int(b["sessions"]) >= args.sessions:
                break
            time.sleep(0.5)
        _, body = get(base + "api/stats?limit=1")
        b = json.loads(body)["stats"]["broker"]
        print(f"broker holds {int(b['topics']):,} topics and "
              f"{int(b['sessions']):,} sessions")
        for view in VIEWS:
            times = []
            size = 0
            for _ in range(args.repeats):
                took, body = get(base + "api/stats?" + view)
                times.append(took * 1000)
                size = len(body)
            print(f"/api/stats?{view}: median {statistics.median(times):.1f} "
                  f"ms, worst {max(times):.1f} ms, {size:,} bytes")
    finally:
        for h in helpers:
            h.kill()
            h.wait()
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--consoles", type=int, default=5)
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--topics", type=int, default=100000)
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--hold", type=float, default=120.0,
                        help="--scale: how long the idle sessions stay")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.scale:
        scale(args)
    else:
        throughput(args, [a for a in args.bench_args if a != "--"])


if __name__ == "__main__":
    main()
