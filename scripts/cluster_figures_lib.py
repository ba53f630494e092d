"""What the figures of scripts/cluster_figures.py share, and its figures of
a node's faults.

Shared: printing a line at once, the bench's addresses across nodes, bench
runs timed in CPU seconds, runs side by side against one broker and across
nodes, and waiting for a node's log or for a peer to sync. Figures (see
cluster_figures.py for what each measures): sigstop, flood, stopped.

Nothing here is a test: the cluster's tests are in tests/cluster/.
"""
import os
import signal
import statistics
import subprocess
import time

from cluster_nodes import (Cluster, Single, cluster_stats, cpu_seconds,
                           loadavg, peer_of, rss_kib, run_bench, wait_stopped)


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

