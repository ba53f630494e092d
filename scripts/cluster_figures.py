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
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_nodes  # noqa: E402
from cluster_nodes import (Cluster, Single, cluster_stats, cpu_seconds,  # noqa
                           loadavg, make_tls_files, peer_of, rss_kib,
                           run_bench, wait_stopped)


def say(text):
    print(text, flush=True)


def cross_args(cluster, sub="n2"):
    n = {node.name: node for node in cluster.nodes}
    return ["--server", n["n1"].address, "--publish-server", n["n1"].address,
            "--subscribe-server", n[sub].address]


def timed_bench(bench, args, pids):
    """Runs the bench; returns its report and the CPU seconds each pid used."""
    before = {pid: cpu_seconds(pid) for pid in pids}
    report = run_bench(bench, args)
    report["cpu"] = {pid: cpu_seconds(pid) - before[pid] for pid in pids}
    return report


def side_by_side(a, bench, rounds, scenario_args, metrics, top="",
                 extra="", bench_extra=()):
    """Runs scenario_args against one broker and across nodes, alternating
    which goes first; prints each run and the medians of `metrics`. `top`
    goes at the top of every broker's config, `extra` into the nodes'
    [cluster], `bench_extra` to every bench run."""
    results = {"single": [], "cluster": []}
    scenario_args = list(scenario_args) + list(bench_extra)
    with Single(a.broker, top) as single, \
            Cluster(a.broker, 3, extra, a.node_toml + "\n" + top) as cluster:
        pids_c = [n.pid for n in cluster.nodes]
        for r in range(rounds):
            order = ["single", "cluster"] if r % 2 == 0 else \
                ["cluster", "single"]
            for which in order:
                if which == "single":
                    rep = timed_bench(bench, ["--server", single.address] +
                                      scenario_args, [single.pid])
                else:
                    rep = timed_bench(bench, cross_args(cluster) +
                                      scenario_args, pids_c)
                results[which].append(rep)
                vals = "  ".join(f"{m}={dig(rep, m):,.1f}" for m in metrics)
                say(f"round {r + 1} {which:7s}: {vals}  exit={rep['exit_code']}"
                    f"  cpu_s={sum(rep['cpu'].values()):.2f}"
                    f"  load={loadavg():.2f}")
    med = {w: {m: statistics.median(dig(x, m) for x in results[w])
               for m in metrics} for w in results}
    return results, med


def dig(report, metric):
    value = report
    for key in metric.split("."):
        value = value[key]
    return float(value)


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


def wait_log(node, needle, since, timeout):
    """Seconds from `since` until node's log has one more line with all of
    `needle` than it had at the call; None after timeout."""
    def count():
        return sum(1 for line in node.log_text().splitlines()
                   if all(n in line for n in needle))
    start = count()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if count() > start:
            return time.time() - since
        time.sleep(0.005)
    return None


def wait_synced(cli, node, peer, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if peer_of(cluster_stats(cli, node), peer).get("state") == "synced":
            return True
        time.sleep(0.05)
    return False


def fig_sigstop(a):
    times = []
    with Cluster(a.broker, 3) as cluster:
        n1, n3 = cluster.nodes[0], cluster.nodes[2]
        for i in range(a.stops):
            count_before = n1.log_text().count("cluster peer down")
            t0 = time.time()
            os.kill(n3.pid, signal.SIGSTOP)
            seen = wait_log(n1, ["cluster peer down", "peer=n3"], t0, 10)
            os.kill(n3.pid, signal.SIGCONT)
            back = wait_synced(a.cli, n1, "n3", 15)
            times.append(seen)
            say(f"sigstop {i + 1}: n1 saw n3 down after "
                f"{seen * 1000 if seen else float('nan'):.0f} ms, back "
                f"{'yes' if back else 'NO'} (peer-down lines before: "
                f"{count_before}) load={loadavg():.2f}")
    ok = [t for t in times if t is not None]
    say(f"SIGSTOP detected: median {statistics.median(ok) * 1000:.0f} ms "
        f"of {len(ok)}/{len(times)} (max {max(ok) * 1000:.0f} ms; "
        f"heartbeat 200ms, dead_after 1s; target 1.2 s)")


def fig_flood(a):
    with Cluster(a.broker, 3) as cluster:
        n1, n2 = cluster.nodes[0], cluster.nodes[1]
        before = {n.name: cluster_stats(a.cli, n) for n in cluster.nodes}
        end = time.time() + a.flood_seconds
        runs, sent, received = 0, 0, 0
        while time.time() < end:
            # Runs of at most 5 s each publishing as fast as n1 confirms
            # (unpaced: n2's link buffer overflows, and what it drops is
            # counted); each run stops publishing at its deadline.
            left = min(5.0, max(1.0, end - time.time()))
            rep = run_bench(a.bench, cross_args(cluster) + [
                "--scenario", "s1", "--messages", str(a.flood_chunk),
                "--max-seconds", f"{left:.1f}"])
            runs += 1
            sent += rep["sent"]
            received += rep["received"]
        after = {n.name: cluster_stats(a.cli, n) for n in cluster.nodes}
        downs = {n.name: n.log_text().count("cluster peer down")
                 for n in cluster.nodes}
        reconnects = {
            n: sum(p.get("reconnects", 0) for p in after[n]["peers"]) -
            sum(p.get("reconnects", 0) for p in before[n]["peers"])
            for n in after}
        to_n2 = peer_of(after["n1"], "n2")
        say(f"flood {a.flood_seconds:.0f} s n1 -> n2 ({runs} bench runs): "
            f"{sent:,} published ({sent / a.flood_seconds:,.0f}/s), "
            f"{received:,} delivered on n2; link dropped "
            f"{to_n2.get('dropped')}; peer-down log lines {downs}; "
            f"reconnects {reconnects} (must be 0) load={loadavg():.2f}")


def fig_stopped(a, dead_after):
    extra = (f'link_buffer_bytes = "8MiB"\ndead_after = "{dead_after}"\n')
    with Cluster(a.broker, 2, extra) as cluster:
        n1, n2 = cluster.nodes
        proc = subprocess.Popen(
            [a.bench] + cross_args(cluster) + [
                "--scenario", "s1", "--messages", "200000000",
                "--max-seconds", str(a.stop_seconds + 15)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1)
            baseline = 0
            t_end = time.time() + 3
            while time.time() < t_end:
                baseline = max(baseline, rss_kib(n1.pid))
                time.sleep(0.1)
            os.kill(n2.pid, signal.SIGSTOP)
            wait_stopped(n2.pid)
            peak = 0
            t_stop = time.time()
            t_end = t_stop + a.stop_seconds
            series, next_mark = [], t_stop + 5
            while time.time() < t_end:
                rss = rss_kib(n1.pid)
                peak = max(peak, rss)
                if time.time() >= next_mark:
                    series.append(f"{next_mark - t_stop:.0f}s:"
                                  f"{rss / 1024:.0f}")
                    next_mark += 5
                time.sleep(0.1)
            say(f"  n1 RSS MiB after the stop: {' '.join(series)}")
            st = peer_of(cluster_stats(a.cli, n1), "n2")
            os.kill(n2.pid, signal.SIGCONT)
        finally:
            proc.kill()
            proc.wait()
        bound = (baseline + 8 * 1024) * 1.10
        say(f"stopped {a.stop_seconds:.0f} s, dead_after {dead_after}: n1 RSS "
            f"baseline {baseline / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB "
            f"(+{(peak - baseline) / 1024:.1f} MiB; bound (baseline + 8 MiB) "
            f"x 1.1 = {bound / 1024:.1f} MiB: "
            f"{'within' if peak <= bound else 'ABOVE'}); n1's Stats for n2: "
            f"state {st.get('state')} dropped {st.get('dropped')} lost "
            f"{st.get('lost')} buffered_bytes {st.get('buffered_bytes')} "
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
