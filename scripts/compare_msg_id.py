#!/usr/bin/env python3
"""Measures the cost of msg_id (issue 28) for several broker binaries at once.

Each round runs S1 (`--paced`) against a fresh broker of every binary, with
and without `--msg-id`, in a shuffled order, so that the machine's load
hits every pair alike. Prints, per binary, the medians with and without
ids, the ratio of the medians and the median of the rounds' own ratios.

  scripts/compare_msg_id.py --bench build/tinybroker-bench --rounds 10 \\
      before=/path/old/tinybroker after=build/tinybroker

With ids, the load generator numbers each frame's messages from one
msg_id_base, as the idempotent clients send them; `--each NAME` gives that
broker's runs one msg_id in each message instead (`--msg-id-each`, as a
user's own ids travel, and as brokers before msg_id_base need). The same
binary may be named twice:

  scripts/compare_msg_id.py --bench build/tinybroker-bench --each each \
      each=build/tinybroker base=build/tinybroker

Anything after "--" goes to tinybroker-bench (e.g. -- --size 1024). Use the
medians of several sets, never one run.
"""
import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_brokers  # noqa: E402  (run_once, free ports, fresh brokers)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True, help="tinybroker-bench")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--each", action="append", default=[], metavar="NAME",
                        help="this broker's runs carry one msg_id per message")
    parser.add_argument("brokers", nargs="+", help="NAME=PATH of a broker")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    brokers = []
    for spec in args.brokers:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            parser.error(f"{spec!r}: expected NAME=PATH")
        if not Path(path).is_file():
            parser.error(f"{path}: no such broker binary")
        brokers.append((name, path))
    for name in args.each:
        if name not in [b[0] for b in brokers]:
            parser.error(f"--each {name}: no broker of that name")
    bench_args = ["--scenario", "s1", "--paced"] + extra
    runs = {(name, ids): [] for name, _ in brokers for ids in (False, True)}
    for round_no in range(1, args.rounds + 1):
        order = [(b, ids) for b in brokers for ids in (False, True)]
        random.shuffle(order)
        for (name, path), ids in order:
            id_args = ["--msg-id"] + (["--msg-id-each"] if name in args.each else [])
            value = compare_brokers.run_once(
                path, [], args.bench, bench_args + (id_args if ids else []),
                "delivered_msgs_per_s")
            runs[(name, ids)].append(value)
            print(f"round {round_no} {name} {'with' if ids else 'without'} ids: "
                  f"{value:,.0f} msgs/s", flush=True)
    for name, _ in brokers:
        without, with_ids = runs[(name, False)], runs[(name, True)]
        ratios = [w / o for o, w in zip(without, with_ids)]
        print(f"{name}: without {statistics.median(without):,.0f}  with "
              f"{statistics.median(with_ids):,.0f}  ratio of medians "
              f"{statistics.median(with_ids) / statistics.median(without):.3f}  "
              f"median of the rounds' ratios {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
