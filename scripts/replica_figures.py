#!/usr/bin/env python3
"""Measures the replicas' figures (issue 32 point 6, docs/cluster.md
"Replicas: figures") side by side in one run: a group with replicas = 1
against replicas = 0 on the same 3-node cluster layout, against one broker,
and against JetStream R3 in memory on 3 nats-server processes.

All processes run on this machine and share its cores; each figure prints
the 1-minute load average next to it. Run under the build lock on a shared
machine:

  flock /tmp/tb-build.lock scripts/replica_figures.py --build build s3
  (figures: s3 latency failover memory soak)

s3        S3 (4 workers, acked; tinybroker-bench --scenario s3) with the
          publisher on n1 and the workers on n2: a cluster whose groups
          have a replica ([cluster] replicas = 1), one without, and a
          single broker, rounds alternating; then JetStream R3 in memory
          with the same shape (scripts/jetstream_load.py: a Python client,
          so its figure is a floor for JetStream). Targets: replicas = 1
          >= 0.5x replicas = 0 and >= 5x JetStream R3
latency   publish confirm latency at 5k msgs/s, replicas = 1 against 0
          (ReplicaFiguresTest.ConfirmLatencyAt5kWithAndWithoutReplica):
          p50 at most +200 us
failover  time from the owner's SIGKILL to the first delivery by the new
          owner, --failovers runs
          (ClusterReplicaTest.NewOwnerDeliversWithinDeadAfter): at most
          dead_after (500 ms) + 100 ms
memory    memory per held message on the replica against the owner
          (ReplicaFiguresTest.ReplicaMemoryPerHeldMessage)
soak      tinybroker-soak --nodes 3 --replicas 1 for --soak-duration (10m):
          node kills hit the owner and the replica in turn, 0 confirmed lost
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jetstream_load  # noqa: E402
from cluster_nodes import Cluster, Single, loadavg, run_bench  # noqa: E402


def say(text):
    print(text, flush=True)


def s3_round(a, which, single, plain, copied):
    args = ["--scenario", "s3", "--messages", str(a.s3_messages)]
    if which == "single":
        return run_bench(a.bench, ["--server", single.address] + args)
    c = copied if which == "replicas=1" else plain
    n = {node.name: node for node in c.nodes}
    return run_bench(a.bench, ["--server", n["n1"].address,
                               "--publish-server", n["n1"].address,
                               "--subscribe-server", n["n2"].address] + args)


def fig_s3(a):
    """S3 on one broker, a cluster without replicas and one with, then
    JetStream R3."""
    rates = {"single": [], "replicas=0": [], "replicas=1": []}
    with Single(a.broker) as single, \
            Cluster(a.broker, 3, "") as plain, \
            Cluster(a.broker, 3, "replicas = 1\n") as copied:
        kinds = list(rates)
        for r in range(a.rounds):
            for which in kinds[r % 3:] + kinds[:r % 3]:
                rep = s3_round(a, which, single, plain, copied)
                rates[which].append(float(rep["acked_msgs_per_s"]))
                say(f"round {r + 1} {which:10s}: acked "
                    f"{rates[which][-1]:,.0f} msgs/s missing "
                    f"{rep['missing']} duplicates {rep['duplicates']} "
                    f"exit={rep['exit_code']} load={loadavg():.2f}")
    js = []
    for r in range(a.rounds):
        rep = jetstream_load.s3(count=a.js_messages)
        js.append(rep["acked_msgs_per_s"])
        say(f"round {r + 1} JetStream R3 memory: acked {js[-1]:,.0f} msgs/s "
            f"(published {rep['published']}, publish errors "
            f"{rep['publish_errors']}, acked {rep['acked']}) "
            f"load={loadavg():.2f}")
    med = {k: statistics.median(v) for k, v in rates.items()}
    j = statistics.median(js)
    say(f"S3 median: single {med['single']:,.0f}, cluster replicas=0 "
        f"{med['replicas=0']:,.0f}, replicas=1 {med['replicas=1']:,.0f}, "
        f"JetStream R3 memory {j:,.0f} acked msgs/s")
    say(f"S3 replicas=1 / replicas=0 {med['replicas=1'] / med['replicas=0']:.3f}"
        f" (target >= 0.5); / JetStream R3 {med['replicas=1'] / j:.1f}x "
        f"(target >= 5); / single {med['replicas=1'] / med['single']:.3f}")


def run_gtest(a, test, repeat=1):
    """Runs one test of cluster_replica_tests; returns its "[ figure ]"
    lines (and prints its output's tail on failure)."""
    out = subprocess.run([a.tests, f"--gtest_filter={test}",
                          f"--gtest_repeat={repeat}"],
                         capture_output=True, text=True, timeout=900)
    figures = [line for line in out.stdout.splitlines()
               if line.startswith("[ figure ]")]
    if out.returncode != 0 or "SKIPPED" in out.stdout:
        say(f"{test}: exit {out.returncode}\n" +
            "\n".join(out.stdout.splitlines()[-30:]))
    return figures


def fig_latency(a):
    for line in run_gtest(
            a, "ReplicaFiguresTest.ConfirmLatencyAt5kWithAndWithoutReplica"):
        say(f"{line} load={loadavg():.2f}")


def fig_memory(a):
    for line in run_gtest(a, "ReplicaFiguresTest.ReplicaMemoryPerHeldMessage"):
        say(f"{line} load={loadavg():.2f}")


def fig_failover(a):
    lines = run_gtest(a, "ClusterReplicaTest.NewOwnerDeliversWithinDeadAfter",
                      a.failovers)
    took = [int(m.group(1)) for line in lines
            for m in [re.search(r"new owner: (\d+) ms", line)] if m]
    for line in lines:
        say(line)
    if took:
        say(f"owner SIGKILL to the first delivery by the new owner: median "
            f"{statistics.median(took)} ms, max {max(took)} ms over "
            f"{len(took)} runs (target <= 600 ms: dead_after 500 + 100) "
            f"load={loadavg():.2f}")


def fig_soak(a):
    cmd = [a.soak, "--nodes", "3", "--replicas", "1", "--duration",
           a.soak_duration, "--node-kill-every", "10s"]
    say("$ " + " ".join(cmd))
    out = subprocess.run(cmd, capture_output=True, text=True)
    say(out.stdout.strip())
    if out.returncode != 0:
        say(f"exit {out.returncode}: {out.stderr.strip()[-2000:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("figures", nargs="+",
                   choices=["s3", "latency", "failover", "memory", "soak"])
    p.add_argument("--build", default="build",
                   help="the build directory (tinybroker, -bench, -soak, "
                        "tests/cluster_replica_tests)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--s3-messages", type=int, default=500_000)
    p.add_argument("--js-messages", type=int, default=200_000)
    p.add_argument("--failovers", type=int, default=5)
    p.add_argument("--soak-duration", default="10m")
    a = p.parse_args()
    a.broker = os.path.join(a.build, "tinybroker")
    a.bench = os.path.join(a.build, "tinybroker-bench")
    a.soak = os.path.join(a.build, "tinybroker-soak")
    a.tests = os.path.join(a.build, "tests", "cluster_replica_tests")
    say(f"replica_figures: {os.cpu_count()} cores shared by every process; "
        f"load {loadavg():.2f} at start")
    for fig in a.figures:
        globals()[f"fig_{fig}"](a)


if __name__ == "__main__":
    main()
