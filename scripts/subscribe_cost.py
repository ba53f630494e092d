#!/usr/bin/env python3
"""Broker CPU per subscribe: runs bench/subscribe_driver against fresh brokers.

Each round starts a fresh broker (limits raised so one session may hold
--count subscriptions), runs the driver once, and stops the broker. Prints
each run's figures and the medians. With --perf FILE, the first round also
records `perf record --call-graph dwarf` of the broker while the driver runs
(at 499 samples/s, or $PERF_FREQ).

  scripts/subscribe_cost.py --broker build/tinybroker \\
      --driver build/bench/subscribe_driver --rounds 3 \\
      -- --scenario literal --count 100000

Several --broker values are run interleaved (A, B, A, B, ...), so a noisy
neighbour hits each alike. Use the medians, never one run.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """
[limits]
max_subscriptions_per_session = 1000000
max_publish_batch = 4096
[metrics]
listen = "off"
"""


# The broker start helpers are compare_brokers.py's (same directory).
from compare_brokers import free_port, wait_listening


def run_once(broker, config, driver, driver_args, perf_file):
    port = free_port()
    proc = subprocess.Popen([broker, "--config", config, "--listen",
                             f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    perf = None
    try:
        if not wait_listening(port, time.time() + 10):
            sys.exit(f"subscribe_cost: {broker} did not listen")
        if perf_file:
            perf = subprocess.Popen(
                ["perf", "record", "-F", os.environ.get("PERF_FREQ", "499"), "--call-graph", "dwarf,16384",
                 "-o", perf_file, "-p", str(proc.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        out = subprocess.run([driver, "--server", f"127.0.0.1:{port}",
                              "--broker-pid", str(proc.pid)] + driver_args,
                             capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            sys.exit(f"subscribe_cost: driver failed: {out.stderr.strip()}")
        return out.stdout
    finally:
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", action="append", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--perf", help="perf.data path for the first round")
    ap.add_argument("driver_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    driver_args = [a for a in args.driver_args if a != "--"]
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(CONFIG)
        config = f.name
    results = {b: [] for b in args.broker}
    try:
        for r in range(args.rounds):
            for b in args.broker:
                perf = args.perf if (r == 0 and args.perf) else None
                out = run_once(b, config, args.driver, driver_args, perf)
                report = json.loads(out.strip().splitlines()[-1])
                results[b].append(report)
                print(f"# {b} round {r + 1}")
                print("\n".join(out.strip().splitlines()[:-1]), flush=True)
    finally:
        os.unlink(config)
    for b, runs in results.items():
        cpu = [x["cpu_us_per_sub"] for x in runs]
        wall = [x["wall_us_per_sub"] for x in runs]
        slices = [[s["cpu_us"] for s in x["slices"]] for x in runs]
        med_slices = [statistics.median(col) for col in zip(*slices)]
        print(f"{b}: median broker cpu {statistics.median(cpu):.1f} us/sub "
              f"(runs {', '.join(f'{c:.1f}' for c in cpu)}), wall "
              f"{statistics.median(wall):.1f} us/sub; per fifth cpu "
              f"{', '.join(f'{c:.1f}' for c in med_slices)}")


if __name__ == "__main__":
    main()
