#!/usr/bin/env python3
"""Compares two broker binaries with tinybroker-bench, interleaved.

Each round runs every scenario once against a fresh broker of each binary,
alternating which goes first, so that a noisy neighbour on a shared machine
hits both alike. Prints each run and the medians, and the ratio B / A.

  scripts/compare_brokers.py --a /path/old/tinybroker --b build/tinybroker \\
      --bench build/tinybroker-bench --rounds 3 -- --scenario s1 --paced

Broker arguments for both (e.g. a config) go in --broker-args; everything
after "--" goes to tinybroker-bench. --a-args/--b-args and
--a-bench-args/--b-bench-args add arguments for one side only (and
--a-bench/--b-bench another load generator for one side), so one
binary can be compared with itself under two configs, e.g. auth off and on:

  scripts/compare_brokers.py --a build/tinybroker --b build/tinybroker \
      --b-args "--config auth.toml" --b-bench-args "--token-file t.token" \
      --bench build/tinybroker-bench -- --scenario s1

Use the median figures, never one run.
"""
import argparse
import json
import socket
import statistics
import subprocess
import sys
import time


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


def run_once(broker, broker_args, bench, bench_args, metric):
    port = free_port()
    proc = subprocess.Popen([broker, "--listen", f"127.0.0.1:{port}"] +
                            broker_args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(port, time.time() + 10):
            sys.exit(f"compare_brokers: {broker} did not listen")
        out = subprocess.run([bench, "--server", f"127.0.0.1:{port}", "--json"]
                             + bench_args, capture_output=True, text=True,
                             timeout=600)
        report = json.loads(out.stdout.strip().splitlines()[-1])
        value = report
        for key in metric.split("."):
            value = value[key]
        return float(value)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="the reference broker")
    parser.add_argument("--b", required=True, help="the broker under test")
    parser.add_argument("--bench", required=True, help="tinybroker-bench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--metric", default="delivered_msgs_per_s",
                        help="a key of the bench's JSON report, dotted for "
                             "nested keys (latency_us.p50)")
    parser.add_argument("--broker-args", default="",
                        help="arguments for both brokers, space-separated")
    for side in ("a", "b"):
        parser.add_argument(f"--{side}-args", default="",
                            help=f"more broker arguments for {side} only")
        parser.add_argument(f"--{side}-bench-args", default="",
                            help=f"more bench arguments for {side} only")
        parser.add_argument(f"--{side}-bench",
                            help=f"another tinybroker-bench for {side} only "
                                 "(to compare clients against one broker)")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    bench_args = [a for a in args.bench_args if a != "--"]
    broker_args = args.broker_args.split()
    results = {"a": [], "b": []}
    for r in range(args.rounds):
        order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
        for which in order:
            broker = args.a if which == "a" else args.b
            side_args = getattr(args, f"{which}_args").split()
            side_bench = getattr(args, f"{which}_bench_args").split()
            bench = getattr(args, f"{which}_bench") or args.bench
            value = run_once(broker, broker_args + side_args, bench,
                             bench_args + side_bench, args.metric)
            results[which].append(value)
            print(f"round {r + 1} {which}: {args.metric} = {value:,.1f}",
                  flush=True)
    med_a = statistics.median(results["a"])
    med_b = statistics.median(results["b"])
    print(f"median a {med_a:,.1f}  b {med_b:,.1f}  b/a {med_b / med_a:.3f}")


if __name__ == "__main__":
    main()
