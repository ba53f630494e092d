#!/usr/bin/python3
"""The floors: the callback relay against the completion-queue relay (issue 31).

Runs tinybroker-bench (and tinybroker-pingpong) against tinybroker-relay
(gRPC's callback API), tinybroker-relay-cq in several forms (1 or 2
completion queues, with and without a spin before blocking) and the broker,
interleaved (each round alternates the order), and prints the medians per
server. Every run starts a fresh server. Modes:

  scripts/cq_floor.py s4 --rates 1000,5000 --rounds 5   # p50, p99, CPU, switches
  scripts/cq_floor.py s4 --rates 5000 --sched           # ... plus perf sched
  scripts/cq_floor.py bulk --rounds 3                   # S1, S2 --paced msgs/s
  scripts/cq_floor.py pingpong --rounds 5               # one message in flight
  scripts/cq_floor.py idle                              # 1,000 idle streams

--servers picks the forms (default relay,cq1,cq2,cq1spin,cq2spin,broker;
also broker-cq and broker-cb, the broker with --grpc-transport cq and
callback, and nats: Debian's nats-server driven by tinybroker-nats-bench,
NATS's C client in the same scenarios, for s4 and bulk; issue 31 point 4):

  scripts/cq_floor.py s4 --rates 5000 --servers nats,broker-cb,broker-cq
  scripts/cq_floor.py bulk --servers nats,broker-cb,broker-cq

Two builds side by side: other-cq-conf is another build's broker
($CQ_FLOOR_OTHER) on cq, with $CQ_FLOOR_CONFIG if set:

  CQ_FLOOR_OTHER=/old/build/tinybroker scripts/cq_floor.py s4 \
      --servers broker-cq,other-cq-conf

With perf (run as root) each run also counts the server's context switches
and CPU migrations per message (perf stat); --sched records the scheduler
(perf sched record, system-wide) and reports the server threads' switches
and their mean and max wait from wake-up to running. The machine's load
(/proc/loadavg and top's head) is printed before and after each set. Use the
medians, never one run: the machine is shared.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from compare_brokers import free_port, wait_listening

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")


def server_forms(build, spin):
    """Each form: the command line without --listen."""
    cq = os.path.join(build, "tinybroker-relay-cq")
    return {
        "relay": [os.path.join(build, "tinybroker-relay")],
        "cq1": [cq, "--cqs", "1"],
        "cq2": [cq, "--cqs", "2"],
        "cq1spin": [cq, "--cqs", "1", "--spin-us", str(spin)],
        "cq2spin": [cq, "--cqs", "2", "--spin-us", str(spin)],
        "broker": [os.path.join(build, "tinybroker"), "--metrics-listen",
                   "off"],
        # The broker on each Session transport ([grpc] transport, issue 31
        # point 2), the same binary.
        "broker-cq": [os.path.join(build, "tinybroker"), "--metrics-listen",
                      "off", "--grpc-transport", "cq"],
        "broker-cb": [os.path.join(build, "tinybroker"), "--metrics-listen",
                      "off", "--grpc-transport", "callback"],
        # Experiments: any --config file on top of broker-cq / broker-cb
        # ($CQ_FLOOR_CONFIG), e.g. with gRPC reflection or health off.
        "broker-cq-conf": [os.path.join(build, "tinybroker"), "--metrics-listen",
                           "off", "--grpc-transport", "cq", "--config",
                           os.environ.get("CQ_FLOOR_CONFIG", "/dev/null")],
        "broker-cb-conf": [os.path.join(build, "tinybroker"), "--metrics-listen",
                           "off", "--grpc-transport", "callback", "--config",
                           os.environ.get("CQ_FLOOR_CONFIG", "/dev/null")],
        # Experiments: another build's broker ($CQ_FLOOR_OTHER) on `cq`
        # with the same --config file, to set two builds side by side.
        "other-cq-conf": [os.environ.get("CQ_FLOOR_OTHER", "/nonexistent"),
                          "--metrics-listen", "off", "--grpc-transport", "cq",
                          "--config",
                          os.environ.get("CQ_FLOOR_CONFIG", "/dev/null")],
        # NATS core on its defaults (no monitoring port, as the broker's
        # metrics are off here); its port goes where {port} is.
        "nats": [shutil.which("nats-server") or "/usr/sbin/nats-server",
                 "-a", "127.0.0.1", "-p", "{port}"],
    }


def bench_for(cmd, build):
    """The load generator that speaks the server's protocol."""
    name = "tinybroker-nats-bench" if "{port}" in cmd else "tinybroker-bench"
    return os.path.join(build, name)


def start(cmd):
    """Starts a server on a free port; returns (process, address)."""
    port = free_port()
    if "{port}" in cmd:
        line = [str(port) if a == "{port}" else a for a in cmd]
    else:
        line = cmd + ["--listen", f"127.0.0.1:{port}"]
    try:
        proc = subprocess.Popen(line,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError as e:
        sys.exit(f"cq_floor: cannot start {cmd[0]}: {e.strerror} "
                 "(build it first)")
    if not wait_listening(port, time.time() + 10):
        proc.kill()
        sys.exit(f"cq_floor: {cmd[0]} did not listen on {port}")
    return proc, f"127.0.0.1:{port}"


def cpu_seconds(pid):
    """User + system CPU seconds of `pid` from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_line():
    """The machine's load: /proc/loadavg and the busiest processes."""
    with open("/proc/loadavg") as f:
        load = f.read().strip()
    # The second of two samples half a second apart: the first one counts
    # from each process's start.
    top = subprocess.run(["top", "-bn2", "-d0.5", "-w", "120"],
                         capture_output=True, text=True).stdout.splitlines()
    frames = [i for i, l in enumerate(top) if l.startswith("top -")]
    start = frames[-1] if frames else 0
    body = top[start:]
    head = next((i for i, l in enumerate(body) if "PID" in l), 6)
    busy = [l for l in body[head + 1:head + 5] if l.strip()]
    return "  load " + load + "\n" + "\n".join("    " + l for l in busy)


def perf_stat(pid):
    """Starts perf stat on `pid`, or None without perf."""
    if shutil.which("perf") is None:
        return None
    return subprocess.Popen(
        ["perf", "stat", "-x", ",", "-e", "context-switches,cpu-migrations",
         "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)


def perf_counts(perf):
    """Stops perf stat; returns {event: count}."""
    if perf is None:
        return {}
    perf.send_signal(2)
    _, err = perf.communicate(timeout=30)
    counts = {}
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].replace(".", "").isdigit():
            counts[fields[2]] = float(fields[0])
    return counts


def sched_summary(data, tids):
    """perf sched latency of the threads `tids`: switches, mean and max
    wait from wake-up to running (ms)."""
    out = subprocess.run(["perf", "sched", "latency", "--pids", "-i", data],
                         capture_output=True, text=True).stdout
    switches, weighted, worst = 0, 0.0, 0.0
    for line in out.splitlines():
        m = re.match(r"\s*(\S.*?):(\d+)\s*\|\s*([\d.]+) ms\s*\|\s*(\d+)\s*\|"
                     r"\s*avg:\s*([\d.]+) ms\s*\|\s*max:\s*([\d.]+) ms", line)
        if m and int(m.group(2)) in tids:
            n = int(m.group(4))
            switches += n
            weighted += n * float(m.group(5))
            worst = max(worst, float(m.group(6)))
    return switches, (weighted / switches if switches else 0.0), worst


def run_bench(cmd, bench, bench_args, sched):
    """One bench run against a fresh server; returns the figures."""
    proc, address = start(cmd)
    record, data = None, None
    try:
        perf = perf_stat(proc.pid)
        if sched:
            data = tempfile.mktemp(prefix="cq_floor.", suffix=".sched")
            record = subprocess.Popen(
                ["perf", "sched", "record", "-o", data], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        out = subprocess.run([bench, "--server", address, "--broker-pid",
                              str(proc.pid), "--json"] + bench_args,
                             capture_output=True, text=True, timeout=280)
        tids = {int(t) for t in os.listdir(f"/proc/{proc.pid}/task")}
        if record is not None:
            record.send_signal(2)
            record.wait(timeout=60)
        counts = perf_counts(perf)
        lines = out.stdout.strip().splitlines()
        if not lines:
            sys.exit(f"cq_floor: the bench printed nothing: {out.stderr}")
        r = json.loads(lines[-1])
        n = max(r["received"], 1)
        seconds = r["elapsed_s"]
        fig = {"p50": r.get("latency_us", {}).get("p50"),
               "p99": r.get("latency_us", {}).get("p99"),
               "msgs_per_s": r.get("delivered_msgs_per_s"),
               "cores": r["broker_cpu_s"] / seconds,
               "bench_cores": r["bench_cpu_s"] / seconds,
               "switches": counts.get("context-switches", 0) / n
               if counts else None,
               "migrations": counts.get("cpu-migrations", 0) / n
               if counts else None}
        if data is not None:
            sw, mean, worst = sched_summary(data, tids)
            fig.update({"sched_switches": sw / n, "wait_ms": mean,
                        "wait_max_ms": worst})
        return fig
    finally:
        if data is not None and os.path.exists(data):
            os.unlink(data)
        proc.terminate()
        proc.wait(timeout=30)


def run_pingpong(cmd, pingpong, messages):
    proc, address = start(cmd)
    try:
        perf = perf_stat(proc.pid)
        out = subprocess.run([pingpong, "--server", address, "--messages",
                              str(messages), "--server-pid", str(proc.pid),
                              "--json"], capture_output=True, text=True,
                             timeout=280)
        counts = perf_counts(perf)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        return {"p50": r["rtt_us"]["p50"], "p99": r["rtt_us"]["p99"],
                "msgs_per_s": r["round_trips_per_s"],
                "cores": r["server_cpu_s"] / r["elapsed_s"],
                "bench_cores": r["client_cpu_s"] / r["elapsed_s"],
                "switches": counts.get("context-switches", 0) / messages
                if counts else None,
                "migrations": counts.get("cpu-migrations", 0) / messages
                if counts else None}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run_idle(cmd, bench, sessions, window):
    """The server's CPU while `sessions` idle streams stay open."""
    proc, address = start(cmd)
    try:
        idle = subprocess.Popen(
            [bench, "--server", address, "--scenario", "idle", "--sessions",
             str(sessions), "--broker-pid", str(proc.pid), "--settle",
             str(window + 10), "--json"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        time.sleep(7)  # the sessions open, the server settles
        before = cpu_seconds(proc.pid)
        time.sleep(window)
        used = cpu_seconds(proc.pid) - before
        idle.wait(timeout=60)
        return {"cores": used / window}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def median(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def show(name, m):
    cells = []
    for key, fmt in (("p50", "p50 {:.0f} us"), ("p99", "p99 {:.0f} us"),
                     ("msgs_per_s", "{:,.0f} msgs/s"),
                     ("cores", "server {:.3f} cores"),
                     ("bench_cores", "client {:.3f} cores"),
                     ("switches", "switches/msg {:.2f}"),
                     ("migrations", "migrations/msg {:.3f}"),
                     ("sched_switches", "sched switches/msg {:.2f}"),
                     ("wait_ms", "wait mean {:.3f} ms"),
                     ("wait_max_ms", "max {:.2f} ms")):
        if m.get(key) is not None:
            cells.append(fmt.format(m[key]))
    print(f"  {name:8} " + "  ".join(cells))


def interleaved(names, rounds, one_run):
    """Runs `one_run(name)` for every name, `rounds` times, alternating the
    order; returns the medians per name."""
    runs = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            runs[name].append(one_run(name))
    return {name: {k: median(runs[name], k) for k in runs[name][0]}
            for name in names}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["s4", "bulk", "pingpong", "idle"])
    parser.add_argument("--build", default=BUILD)
    parser.add_argument("--servers",
                        default="relay,cq1,cq2,cq1spin,cq2spin,broker")
    parser.add_argument("--spin-us", type=int, default=50,
                        help="the spin of the *spin forms")
    parser.add_argument("--rates", default="1000,5000,50000")
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=1000000,
                        help="bulk: messages per run; pingpong: round trips")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--sched", action="store_true",
                        help="s4: perf sched record, system-wide")
    args = parser.parse_args()
    forms = server_forms(args.build, args.spin_us)
    names = args.servers.split(",")
    for name in names:
        if name not in forms:
            sys.exit(f"cq_floor: unknown server form {name!r} "
                     f"(one of {', '.join(forms)})")
    bench = os.path.join(args.build, "tinybroker-bench")
    if args.mode in ("pingpong", "idle") and "nats" in names:
        sys.exit("cq_floor: the nats form runs s4 and bulk only")
    print("before:\n" + load_line(), flush=True)
    if args.mode == "s4":
        for rate in (int(x) for x in args.rates.split(",")):
            bench_args = ["--scenario", "s4", "--rate", str(rate),
                          "--messages", str(int(rate * args.seconds))]
            medians = interleaved(names, args.rounds, lambda n: run_bench(
                forms[n], bench_for(forms[n], args.build), bench_args,
                args.sched))
            print(f"s4 at {rate} msgs/s, medians of {args.rounds}:")
            for name in names:
                show(name, medians[name])
    elif args.mode == "bulk":
        for scenario in ("s1", "s2"):
            bench_args = ["--scenario", scenario, "--paced", "--messages",
                          str(args.messages)]
            medians = interleaved(names, args.rounds, lambda n: run_bench(
                forms[n], bench_for(forms[n], args.build), bench_args, False))
            print(f"{scenario} --paced, medians of {args.rounds}:")
            for name in names:
                show(name, {k: v for k, v in medians[name].items()
                            if k not in ("p50", "p99")})
    elif args.mode == "pingpong":
        pingpong = os.path.join(args.build, "tinybroker-pingpong")
        medians = interleaved(names, args.rounds, lambda n: run_pingpong(
            forms[n], pingpong, args.messages))
        print(f"ping-pong, one message in flight, medians of {args.rounds}:")
        for name in names:
            show(name, medians[name])
    else:
        medians = interleaved(names, args.rounds, lambda n: run_idle(
            forms[n], bench, args.sessions, 8))
        print(f"idle, {args.sessions} streams open, medians of "
              f"{args.rounds}:")
        for name in names:
            show(name, medians[name])
    print("after:\n" + load_line(), flush=True)


if __name__ == "__main__":
    main()
