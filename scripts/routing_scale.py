#!/usr/bin/python3
"""Runs the routing-at-scale scenarios (issue 15) of tinybroker-bench against
two broker binaries, interleaved, and prints the medians of 3 per figure.

usage: scripts/routing_scale.py BASE_BROKER NEW_BROKER [SCENARIO_NAME_PART...]

Each run starts a fresh broker on 127.0.0.1:7640 with scripts/scale.toml
(or scripts/expiry.toml: topic_idle_timeout = "2s") and the bench from
build/. Raw values are printed next to the medians.
"""
import json, os, subprocess, statistics, sys, time

from compare_brokers import wait_listening
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "build", "tinybroker-bench")
BIN = {"base": sys.argv[1], "new": sys.argv[2]}
RUNS = [
  ("topics-new 100k", "scale.toml", "--scenario topics-new --topics 100000", ["elapsed_s", "broker_cpu_us_per_topic"]),
  ("s5 K=1000", "scale.toml", "--scenario s5 --topics 1000 --messages 500000", ["delivered_msgs_per_s"]),
  ("s5 K=2000", "scale.toml", "--scenario s5 --topics 2000 --messages 500000", ["delivered_msgs_per_s"]),
  ("s5 K=10000", "scale.toml", "--scenario s5 --topics 10000 --messages 500000", ["delivered_msgs_per_s"]),
  ("s5 K=100000", "scale.toml", "--scenario s5 --topics 100000 --messages 1000000", ["delivered_msgs_per_s"]),
  ("subscribe-rate 100k", "scale.toml", "--scenario subscribe-rate --subscribes 100000", ["subscribes_per_s", "broker_cpu_us_per_subscribe", "growth"]),
  ("subscribe-one-topic 20k", "scale.toml", "--scenario subscribe-one-topic --subscribes 20000 --max-seconds 120", ["subscribes_per_s", "broker_cpu_us_per_subscribe", "first_10pct_us", "last_10pct_us"]),
  ("subscribe-wildcard 10k", "scale.toml", "--scenario subscribe-wildcard --topics 10000 --max-seconds 60", ["first_ms", "median_ms", "max_ms"]),
  ("expiry 20k", "expiry.toml", "--scenario expiry --topics 20000 --window 6 --max-seconds 60", ["worst_ms", "subscribe_max_ms", "new_topic_max_ms", "broker_cpu_s"]),
  ("topic-memory 100k", "scale.toml", "--scenario topic-memory --topics 100000", ["bytes_per_topic_connected", "bytes_per_topic_closed"]),
]
only = sys.argv[3:]


def run_once(broker, config, args, port="7640"):
    """Starts `broker`, runs the bench with `args`, returns its JSON line."""
    proc = subprocess.Popen([broker, "--config", config, "--listen",
                             "127.0.0.1:" + port, "--metrics-listen", "off"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(int(port), time.time() + 10)
        out = subprocess.run([BENCH, "--server", "127.0.0.1:" + port,
                              "--broker-pid", str(proc.pid), "--json"] + args,
                             capture_output=True, text=True, timeout=400).stdout
        return out.strip().splitlines()[-1] if out.strip() else ""
    finally:
        proc.terminate()
        proc.wait()

rounds = 3
for name, cfg, args, fields in RUNS:
    if only and not any(o in name for o in only):
        continue
    got = {"base": [], "new": []}
    for r in range(rounds):
        for which in ("base", "new") if r % 2 == 0 else ("new", "base"):
            out = run_once(BIN[which], os.path.join(HERE, cfg), args.split())
            try:
                got[which].append(json.loads(out))
            except Exception:
                got[which].append({})
    line = [name]
    for f in fields:
        med = {}
        for which in ("base", "new"):
            vals = [d.get(f) for d in got[which] if isinstance(d.get(f), (int, float))]
            med[which] = statistics.median(vals) if vals else None
        raw = {w: [d.get(f) for d in got[w]] for w in got}
        line.append(f"{f}: base {med['base']} new {med['new']} (base {raw['base']} new {raw['new']})")
    print(" | ".join(line), flush=True)
