#!/usr/bin/python3
"""Instructions per message: S4 under callgrind, by library (issue 31 point 5).

The machine's timings move by 10-20% between runs; the number of
instructions a server executes per message does not. This runs each server
under valgrind's callgrind, with instrumentation off until a warm-up S4 run
is over, counts the instructions (Ir) of one S4 run (1 publisher, 1
subscriber, 128 B, a fixed rate low enough for valgrind), and sums them per
message by library:

  scripts/callgrind_s4.py --servers nats,cq1,broker-cq,broker-cb
  scripts/callgrind_s4.py --servers broker-cq --top 40    # ... and functions

The forms are scripts/cq_floor.py's (nats, relay, cq1, broker-cq,
broker-cb, other-cq-conf with $CQ_FLOOR_OTHER, ...). Counts are user space
only: the kernel's share (syscalls, wake-ups; more than half of the CPU at
everyday rates, docs/performance.md) is not in them, and neither are cache
misses. Needs valgrind (`apt-get install valgrind`).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from compare_brokers import free_port, wait_listening
from cq_floor import BUILD, bench_for, server_forms

# Libraries by the layer they belong to; the server's own executable is
# "own code", anything else "other".
LAYERS = [
    ("gRPC", re.compile(r"^lib(grpc|gpr|upb|address_sorting|absl_)|^ld-linux")),
    ("CAF", re.compile(r"^libcaf_")),
    ("protobuf", re.compile(r"^libprotobuf")),
    ("allocator", re.compile(r"^libjemalloc")),
    ("libc, libstdc++", re.compile(r"^lib(c|stdc\+\+|m|gcc_s)\.so")),
]


def layer_of(obj, own):
    """The layer of object file `obj` for a server whose binary is `own`."""
    base = os.path.basename(obj or "???")
    if base == own:
        return "own code"
    for name, pattern in LAYERS:
        if pattern.search(base):
            return name
    return "other"


def parse(path):
    """Self cost (Ir) of a callgrind dump by (object, function)."""
    names = {"ob": {}, "fn": {}}
    cost = collections.Counter()
    ob = fn = None
    skip_call_cost = False

    def name(kind, rest):
        m = re.match(r"\((\d+)\)(?: (.*))?", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), rest)

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                ob = name("ob", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cob="):
                name("ob", line[4:])
            elif line.startswith("cfn="):
                name("fn", line[4:])
            elif line.startswith("calls="):
                skip_call_cost = True  # the next line is the call's cost
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                if skip_call_cost:
                    skip_call_cost = False
                    continue
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    cost[(ob, fn)] += int(parts[1])
    return cost


def run_one(name, cmd, build, args, workdir):
    """Runs `cmd` under callgrind through one S4 run; returns its dump."""
    port = free_port()
    line = ([str(port) if a == "{port}" else a for a in cmd]
            if "{port}" in cmd else cmd + ["--listen", f"127.0.0.1:{port}"])
    out = os.path.join(workdir, f"{name}.callgrind")
    log = open(os.path.join(workdir, f"{name}.log"), "w")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind",
                             "--instr-atstart=no",
                             f"--callgrind-out-file={out}"] + line,
                            stdout=log, stderr=subprocess.STDOUT,
                            # Go's preemption signals trip callgrind's
                            # signal bookkeeping (nats-server).
                            env=dict(os.environ, GODEBUG="asyncpreemptoff=1"))
    try:
        if not wait_listening(port, time.time() + 120):
            sys.exit(f"callgrind_s4: {name} did not listen on {port}")
        bench = bench_for(cmd, build)
        s4 = [bench, "--server", f"127.0.0.1:{port}", "--scenario", "s4",
              "--rate", str(args.rate)]
        subprocess.run(s4 + ["--messages", str(args.rate)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)  # warm-up: connections, caches, topics
        def control(*what):
            subprocess.run(["callgrind_control", *what, str(proc.pid)],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)

        control("-i", "on")
        time.sleep(2)  # a server under valgrind is slow to take up a change
        run = subprocess.run(s4 + ["--messages", str(args.messages)],
                             capture_output=True, text=True)
        control("-i", "off")
        control("-d")
        if run.returncode != 0:
            sys.exit(f"callgrind_s4: the S4 run against {name} failed:\n"
                     + run.stdout + run.stderr)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    dumps = sorted(p for p in os.listdir(workdir)
                   if p.startswith(f"{name}.callgrind."))
    if not dumps:
        sys.exit(f"callgrind_s4: no dump from {name}")
    return os.path.join(workdir, dumps[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default="nats,cq1,broker-cq")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--top", type=int, default=0,
                        help="also list the N costliest functions")
    parser.add_argument("--build", default=BUILD)
    parser.add_argument("--keep", help="keep the dumps in this directory")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("callgrind_s4: needs valgrind (apt-get install valgrind)")
    forms = server_forms(args.build, 0)
    names = args.servers.split(",")
    for n in names:
        if n not in forms:
            sys.exit(f"callgrind_s4: unknown server {n}; one of "
                     + ", ".join(sorted(forms)))
    workdir = args.keep or tempfile.mkdtemp(prefix="callgrind_s4.")
    os.makedirs(workdir, exist_ok=True)
    columns = ["own code", "gRPC", "CAF", "protobuf", "allocator",
               "libc, libstdc++", "other"]
    print(f"S4 at {args.rate} msgs/s, {args.messages} messages of 128 B; "
          "instructions per message (user space), by layer:")
    print(f"{'server':<14}{'total':>9}" +
          "".join(f"{c:>17}" for c in columns))
    for n in names:
        cost = parse(run_one(n, forms[n], args.build, args, workdir))
        own = os.path.basename(forms[n][0])
        layers = collections.Counter()
        for (ob, _), c in cost.items():
            layers[layer_of(ob, own)] += c
        per = {k: v / args.messages for k, v in layers.items()}
        print(f"{n:<14}{sum(per.values()):>9,.0f}" +
              "".join(f"{per.get(c, 0):>17,.0f}" for c in columns),
              flush=True)
        if args.top:
            for (ob, fn), c in cost.most_common(args.top):
                print(f"    {c / args.messages:>8,.0f}  "
                      f"{os.path.basename(ob or '???')}  {(fn or '')[:110]}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
