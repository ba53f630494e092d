#!/usr/bin/python3
"""Latency and CPU at everyday rates, against the transport's floor (issue 13).

Runs tinybroker-bench's fixed-rate scenarios against tinybroker-relay (a bare
gRPC relay in the broker's frame types: the floor) and one or two broker
binaries, interleaved (each round alternates the order), and prints per
server the medians of p50, p99, server CPU in cores, the load generator's
CPU in cores and, with --perf, the server's context switches per message
(perf stat), then each broker's ratios to the relay.

  scripts/latency_floor.py                       # S4 at 1k, 5k, 50k msgs/s
  scripts/latency_floor.py --base /tmp/old/tinybroker --rates 5000 --perf
  scripts/latency_floor.py --scenario queue --workers 4 --rates 1000

--scenario queue measures publish -> group member -> ack; the relay hands
each message to one member in turn and drops the acks (no credit, no
redelivery), so it is that path's floor. --base-bench runs every server with
a second load generator too (rows marked '~'), to compare client changes.
Binaries default to build/. Use the medians, never one run: the machine is
shared.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from compare_brokers import free_port, wait_listening

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")


def start(server, port, broker_args):
    """Starts a relay or a broker on `port`; returns the process."""
    args = [server, "--listen", f"127.0.0.1:{port}"]
    if not server.endswith("relay"):
        args += ["--metrics-listen", "off"] + broker_args
    try:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError as e:
        sys.exit(f"latency_floor: cannot start {server}: {e.strerror} "
                 "(build it first: cmake --build build -j2)")
    if not wait_listening(port, time.time() + 10):
        proc.kill()
        sys.exit(f"latency_floor: {server} did not listen on {port}")
    return proc


def run_once(server, broker_args, bench, bench_args, use_perf):
    """One bench run against a fresh `server`; returns the figures."""
    port = free_port()
    proc = start(server, port, broker_args)
    perf = None
    try:
        if use_perf:
            if shutil.which("perf") is None:
                sys.exit("latency_floor: --perf needs perf "
                         "(apt install linux-perf)")
            perf = subprocess.Popen(
                ["perf", "stat", "-x", ",", "-e", "context-switches",
                 "-p", str(proc.pid)], stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True)
        out = subprocess.run([bench, "--server", f"127.0.0.1:{port}",
                              "--broker-pid", str(proc.pid), "--json"]
                             + bench_args, capture_output=True, text=True,
                             timeout=600)
        lines = out.stdout.strip().splitlines()
        if not lines:
            sys.exit(f"latency_floor: the bench printed nothing: {out.stderr}")
        r = json.loads(lines[-1])
        switches = None
        if perf is not None:
            perf.send_signal(2)
            _, err = perf.communicate(timeout=30)
            for line in err.splitlines():
                fields = line.split(",")
                if len(fields) > 2 and fields[2] == "context-switches":
                    switches = float(fields[0])
        seconds = r["elapsed_s"]
        return {"p50": r["latency_us"]["p50"], "p99": r["latency_us"]["p99"],
                "cores": r["broker_cpu_s"] / seconds,
                "bench_cores": r["bench_cpu_s"] / seconds,
                "switches_per_msg": (switches / max(r["received"], 1)
                                     if switches is not None else None)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def median(runs, key):
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--relay", default=os.path.join(BUILD, "tinybroker-relay"))
    parser.add_argument("--broker", default=os.path.join(BUILD, "tinybroker"))
    parser.add_argument("--base", help="a second broker binary to compare")
    parser.add_argument("--bench", default=os.path.join(BUILD, "tinybroker-bench"))
    parser.add_argument("--rates", default="1000,5000,50000")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="s4", choices=["s4", "queue"])
    parser.add_argument("--workers", type=int, default=1,
                        help="queue: group members")
    parser.add_argument("--broker-args", default="",
                        help="arguments for the brokers (not the relay), "
                             "e.g. \"--config my.toml\"")
    parser.add_argument("--base-args", default="",
                        help="more arguments for the base broker only, e.g. "
                             "the same binary with \"--config scripts/sharing.toml\"")
    parser.add_argument("--base-bench",
                        help="a second load generator (client changes): "
                             "every server is run with it too, in rows "
                             "marked '~'")
    parser.add_argument("--perf", action="store_true",
                        help="count the server's context switches (perf stat)")
    args = parser.parse_args()
    servers = {"relay": args.relay}
    servers["broker"] = args.broker
    if args.base:
        servers["base"] = args.base
    # Each row: a server with one load generator; '~' marks --base-bench.
    rows = {name: (name, args.bench) for name in servers}
    if args.base_bench:
        rows.update({name + "~": (name, args.base_bench) for name in servers})
    for rate in (int(x) for x in args.rates.split(",")):
        bench_args = ["--scenario", args.scenario, "--rate", str(rate),
                      "--messages", str(int(rate * args.seconds))]
        if args.scenario == "queue":
            bench_args += ["--workers", str(args.workers), "--batch", "1"]
        runs = {name: [] for name in rows}
        names = list(rows)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                server, bench = rows[name]
                extra = args.base_args.split() if server == "base" else []
                runs[name].append(run_once(servers[server],
                                           args.broker_args.split() + extra,
                                           bench, bench_args, args.perf))
        print(f"{args.scenario} at {rate} msgs/s, medians of {args.rounds}:")
        medians = {}
        for name in names:
            m = {k: median(runs[name], k) for k in runs[name][0]}
            medians[name] = m
            switches = (f"  switches/msg {m['switches_per_msg']:.1f}"
                        if m["switches_per_msg"] is not None else "")
            print(f"  {name:7} p50 {m['p50']:7.0f} us  p99 {m['p99']:7.0f} us"
                  f"  server {m['cores']:.3f} cores  bench "
                  f"{m['bench_cores']:.3f} cores{switches}")
        for name in names:
            floor_name = "relay~" if name.endswith("~") else "relay"
            floor = medians.get(floor_name)
            if floor is None or name.startswith("relay"):
                continue
            m = medians[name]
            print(f"  {name}/{floor_name}: p50 {m['p50'] / floor['p50']:.2f}x  "
                  f"p99 {m['p99'] / floor['p99']:.2f}x  CPU "
                  f"{m['cores'] / floor['cores']:.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
