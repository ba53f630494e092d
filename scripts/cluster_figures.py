#!/usr/bin/env python3
"""Measures the cluster's figures (issue 30 point 7, docs/cluster.md
"Figures") side by side with a single-node broker in the same run.

All nodes run on this machine and share its cores; each figure prints the
1-minute load average next to it (other users of the machine count too).
Run under the build lock on a shared machine, one figure at a time:

  flock /tmp/tb-build.lock scripts/cluster_figures.py --build build s1
  (figures: s1 s3 s4 order sigstop flood stopped costs tls)

s1       S1 (1 -> 1, 128 B, bulk, --paced) publisher on n1, subscriber on
         n2, against one broker: medians of --rounds, ratio
s3       S3 (4 workers, acked) publisher on n1, workers on n2, against one
         broker: acked msgs/s, missing and duplicates; each cluster round
         says which node owned the group (HRW of its fresh name), and the
         ratio is given over the rounds whose owner was not the workers'
         node (owner and workers on different nodes) and over all
s4       S4 at 5k msgs/s: p50 and p99 cross-node against one broker
order    1M messages from n1 to subscribers on n1, n2 and n3: in order,
         none missing or twice (the bench's sequence numbers), time, msgs/s
sigstop  SIGSTOP of n3: time until n1 logs it down, median of 5
flood    --flood-seconds (60) of S1 n1 -> n2 at full speed: peer-down
         events in the logs and Stats reconnects (must stay 0)
stopped  n2 stopped --stop-seconds (30) while n1 publishes to its
         subscriber at full speed, link_buffer_bytes 8 MiB: n1's peak RSS
         against its baseline, drops and losses; with dead_after 1 s and
         with dead_after 60 s (the link stays up all along)
costs    CPU per message crossing a link, per interest change, per
         heartbeat (for the scaling estimate in docs/cluster.md)
tls      S1 n1 -> n2 with TLS between the nodes and to the clients,
         against one broker with TLS to its clients
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_nodes  # noqa: E402
from cluster_nodes import (Cluster, Single, cpu_seconds, loadavg,  # noqa
                           make_tls_files, run_bench)
# fig_sigstop and fig_flood are called by name from main().
from cluster_figures_lib import (cross_args, dig, fig_flood,  # noqa
                                 fig_sigstop, fig_stopped, say, side_by_side,
                                 timed_bench)


def fig_s1(a):
    args = ["--scenario", "s1", "--paced", "--messages", str(a.s1_messages)]
    res, med = side_by_side(a, a.bench, a.rounds, args,
                            ["delivered_msgs_per_s"])
    s, c = med["single"]["delivered_msgs_per_s"], \
        med["cluster"]["delivered_msgs_per_s"]
    per_msg = {w: statistics.median(sum(x["cpu"].values()) / x["received"]
                                    for x in res[w]) * 1e6 for w in res}
    say(f"S1 median single {s:,.0f} msgs/s  n1->n2 {c:,.0f} msgs/s  "
        f"ratio {c / s:.3f} (target >= 0.7)")
    per_node = [statistics.median(list(x["cpu"].values())[i] / x["received"]
                                  for x in res["cluster"]) * 1e6
                for i in range(3)]
    say(f"S1 CPU per message on n1 (publisher) {per_node[0]:.2f} us, n2 "
        f"(subscriber) {per_node[1]:.2f} us, n3 (idle) {per_node[2]:.2f} us")
    say(f"S1 broker CPU per message: single {per_msg['single']:.2f} us, "
        f"3 nodes {per_msg['cluster']:.2f} us (a crossing costs "
        f"{per_msg['cluster'] - per_msg['single']:.2f} us more)")


def fig_tls(a):
    """S1 n1 -> n2 with TLS between the nodes and to the clients, against
    one broker with TLS to its clients."""
    top, bench_args = make_tls_files(a.source)
    args = ["--scenario", "s1", "--paced", "--messages", str(a.s1_messages)]
    _, med = side_by_side(a, a.bench, a.rounds, args,
                          ["delivered_msgs_per_s"], top=top,
                          extra="tls = true\n", bench_extra=bench_args)
    s, c = med["single"]["delivered_msgs_per_s"], \
        med["cluster"]["delivered_msgs_per_s"]
    say(f"S1 over TLS median single {s:,.0f} msgs/s  n1->n2 {c:,.0f} msgs/s"
        f"  ratio {c / s:.3f}")


def fig_s3(a):
    """S3 across nodes: the bench creates a fresh group (bench-<run id>)
    through n1, the cluster puts it on its HRW owner; the owner's log names
    it ("group created group=bench-<id>")."""
    args = ["--scenario", "s3", "--messages", str(a.s3_messages)]
    single_rates, cross = [], []
    with Single(a.broker) as single, \
            Cluster(a.broker, 3, "", a.node_toml) as cluster:
        for r in range(a.rounds):
            for which in (["single", "cluster"] if r % 2 == 0
                          else ["cluster", "single"]):
                if which == "single":
                    rep = run_bench(a.bench, ["--server", single.address] +
                                    args)
                    single_rates.append(dig(rep, "acked_msgs_per_s"))
                    say(f"round {r + 1} single : acked "
                        f"{single_rates[-1]:,.0f} msgs/s missing "
                        f"{rep['missing']} duplicates {rep['duplicates']} "
                        f"load={loadavg():.2f}")
                    continue
                rep = run_bench(a.bench, cross_args(cluster) + args)
                needle = f"group created group=bench-{rep['run_id']} "
                owner = next((n.name for n in cluster.nodes
                              if needle in n.log_text()), "?")
                cross.append((dig(rep, "acked_msgs_per_s"), owner,
                              rep["missing"], rep["duplicates"]))
                say(f"round {r + 1} cluster: acked {cross[-1][0]:,.0f} msgs/s"
                    f" owner {owner} (publisher n1, workers n2) missing "
                    f"{rep['missing']} duplicates {rep['duplicates']} "
                    f"load={loadavg():.2f}")
    s = statistics.median(single_rates)
    apart = [c for c in cross if c[1] != "n2"]
    all_c = statistics.median(c[0] for c in cross)
    say(f"S3 median single {s:,.0f} acked msgs/s; across nodes (all "
        f"rounds) {all_c:,.0f}, ratio {all_c / s:.3f}")
    if apart:
        m = statistics.median(c[0] for c in apart)
        say(f"S3 owner and workers on different nodes ({len(apart)} of "
            f"{len(cross)} rounds) {m:,.0f}, ratio {m / s:.3f} "
            f"(target >= 0.6); missing {sum(c[2] for c in cross)}, "
            f"duplicates {sum(c[3] for c in cross)} over all rounds")


def fig_s4(a):
    args = ["--scenario", "s4", "--rate", "5000"]
    _, med = side_by_side(a, a.bench, a.rounds, args,
                          ["latency_us.p50", "latency_us.p99"])
    s, c = med["single"], med["cluster"]
    say(f"S4 5k/s median p50 single {s['latency_us.p50']:.0f} us  n1->n2 "
        f"{c['latency_us.p50']:.0f} us  (+{c['latency_us.p50'] - s['latency_us.p50']:.0f}"
        f" us, target +150)")
    say(f"S4 5k/s median p99 single {s['latency_us.p99']:.0f} us  n1->n2 "
        f"{c['latency_us.p99']:.0f} us  (+{c['latency_us.p99'] - s['latency_us.p99']:.0f}"
        f" us, target +1000)")


def fig_order(a):
    base = ["--scenario", "fanout", "--subscribers", "3", "--paced",
            "--messages", str(a.order_messages), "--max-seconds", "300"]
    with Single(a.broker) as single:
        rep = run_bench(a.bench, ["--server", single.address] + base)
        say(f"order single: {rep['received']:,} received in "
            f"{rep['elapsed_s']:.2f} s ({rep['delivered_msgs_per_s']:,.0f} "
            f"deliveries/s) missing={rep['missing']} out_of_order="
            f"{rep['out_of_order']} dropped={rep['dropped']} "
            f"load={loadavg():.2f}")
    with Cluster(a.broker, 3) as cluster:
        addrs = ",".join(n.address for n in cluster.nodes)
        rep = run_bench(a.bench, ["--server", cluster.nodes[0].address,
                                  "--publish-server",
                                  cluster.nodes[0].address,
                                  "--subscribe-server", addrs] + base)
        say(f"order n1 -> n1,n2,n3: {rep['received']:,} received in "
            f"{rep['elapsed_s']:.2f} s ({rep['delivered_msgs_per_s']:,.0f} "
            f"deliveries/s, {rep['publish_msgs_per_s']:,.0f} published/s) "
            f"missing={rep['missing']} out_of_order={rep['out_of_order']} "
            f"dropped={rep['dropped']} exit={rep['exit_code']} "
            f"load={loadavg():.2f}")


def fig_costs(a):
    # Per heartbeat: idle CPU of 3 nodes at two heartbeat intervals.
    idle = {}
    for hb in ("200ms", "20ms"):
        with Cluster(a.broker, 3, f'heartbeat = "{hb}"\n'
                     'dead_after = "1s"\n') as cluster:
            time.sleep(1)
            pids = [n.pid for n in cluster.nodes]
            before = [cpu_seconds(p) for p in pids]
            time.sleep(a.idle_seconds)
            idle[hb] = sum(cpu_seconds(p) - b for p, b in zip(pids, before))
    with Single(a.broker) as single:
        before = cpu_seconds(single.pid)
        time.sleep(a.idle_seconds)
        idle["single"] = cpu_seconds(single.pid) - before
    # 3 nodes x 2 connections each way: each node sends 2 and takes 2.
    beats = {hb: 3 * 2 * a.idle_seconds / (float(hb[:-2]) / 1000)
             for hb in ("200ms", "20ms")}
    per_beat = (idle["20ms"] - idle["200ms"]) / (beats["20ms"] -
                                                 beats["200ms"])
    say(f"idle CPU over {a.idle_seconds:.0f} s: single {idle['single']:.3f} "
        f"s, 3 nodes at heartbeat 200ms {idle['200ms']:.3f} s, at 20ms "
        f"{idle['20ms']:.3f} s: {per_beat * 1e6:.1f} us per heartbeat "
        f"(sent and taken) load={loadavg():.2f}")
    # Per interest change: distinct literal subscribes on n2 (each 0 -> 1
    # at the start and -> 0 when the session closes).
    args = ["--scenario", "subscribe-rate", "--subscribes",
            str(a.subscribes)]
    with Single(a.broker) as single:
        rep = timed_bench(a.bench, ["--server", single.address] + args,
                          [single.pid])
        say(f"subscribe-rate single: {rep['subscribes_per_s']:,.0f}/s, "
            f"CPU {rep['cpu'][single.pid] / (2 * a.subscribes) * 1e6:.1f} us "
            f"per subscribe or unsubscribe load={loadavg():.2f}")
    with Cluster(a.broker, 3) as cluster:
        n1, n2, n3 = cluster.nodes
        rep = timed_bench(a.bench, ["--server", n2.address] + args,
                          [n.pid for n in cluster.nodes])
        changes = 2 * a.subscribes
        say(f"subscribe-rate on n2 of 3: {rep['subscribes_per_s']:,.0f}/s; "
            f"CPU per change: n2 (announces to 2 peers) "
            f"{rep['cpu'][n2.pid] / changes * 1e6:.1f} us, n1 "
            f"{rep['cpu'][n1.pid] / changes * 1e6:.1f} us and n3 "
            f"{rep['cpu'][n3.pid] / changes * 1e6:.1f} us (each applies "
            f"it) load={loadavg():.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("figures", nargs="+",
                   choices=["s1", "s3", "s4", "order", "sigstop", "flood",
                            "stopped", "costs", "tls"])
    p.add_argument("--build", default="build",
                   help="the build directory (tinybroker, -bench, -cli)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--node-toml", default="",
                   help="top-level TOML for each node of s1/s4, e.g. "
                        "'worker_threads = 1'")
    p.add_argument("--s1-messages", type=int, default=1_000_000)
    p.add_argument("--s3-messages", type=int, default=500_000)
    p.add_argument("--order-messages", type=int, default=1_000_000)
    p.add_argument("--stops", type=int, default=5)
    p.add_argument("--flood-seconds", type=float, default=60)
    p.add_argument("--flood-chunk", type=int, default=50_000_000)
    p.add_argument("--stop-seconds", type=float, default=30)
    p.add_argument("--idle-seconds", type=float, default=10)
    p.add_argument("--subscribes", type=int, default=20_000)
    p.add_argument("--stopped-dead-after", default="1s,60s",
                   help="stopped: the dead_after values to run with")
    p.add_argument("--node-env", action="append", default=[],
                   help="NAME=VALUE in every broker's environment, e.g. "
                        "MALLOC_CONF=dirty_decay_ms:0")
    a = p.parse_args()
    for item in a.node_env:
        name, _, value = item.partition("=")
        cluster_nodes.NODE_ENV[name] = value
    a.broker = os.path.join(a.build, "tinybroker")
    a.bench = os.path.join(a.build, "tinybroker-bench")
    a.cli = os.path.join(a.build, "tinybroker-cli")
    a.source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    say(f"cluster_figures: {os.cpu_count()} cores shared by every node; "
        f"load {loadavg():.2f} at start")
    for fig in a.figures:
        if fig == "stopped":
            for dead_after in a.stopped_dead_after.split(","):
                fig_stopped(a, dead_after)
        else:
            globals()[f"fig_{fig}"](a)


if __name__ == "__main__":
    main()
