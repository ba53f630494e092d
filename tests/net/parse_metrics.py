#!/usr/bin/env python3
"""Parses Prometheus text (version 0.0.4) from standard input with the
official client library's parser (Debian python3-prometheus-client) and
prints what it read, one line each, for the C++ tests to compare:

    family<TAB>NAME<TAB>TYPE
    sample<TAB>NAME<TAB>LABELS<TAB>VALUE

LABELS is a JSON object with sorted keys and no spaces; VALUE is Python's
repr of the float. Text the parser refuses exits 1 with its error.
"""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and others
        print(f"unparsable: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    for family in families:
        print(f"family\t{family.name}\t{family.type}")
        for s in family.samples:
            labels = json.dumps(s.labels, sort_keys=True, separators=(",", ":"))
            print(f"sample\t{s.name}\t{labels}\t{float(s.value)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
