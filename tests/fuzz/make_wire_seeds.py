#!/usr/bin/env python3
"""Writes the seeds of fuzz_wire into the directory given (default
tests/fuzz/corpus/wire): a type byte (0: a message, 1: a group's
deliveries), then the bytes a peer node sends, laid out as
message_record::save and save_deliveries write them (docs/cluster.md,
"Types that cross nodes"; little-endian)."""
import os
import struct
import sys


def record(topic=b"orders.eu.created", payload=b"p" * 32, key=b"customer-7",
           headers=((b"priority", b"high"), (b"trace", b"abc")), ttl=0,
           delay=0, priority=0, msg_id=42, nanos=123):
    """A message record: the 45-byte head, then topic, payload, key and
    headers (each a name size, a value size, the name and the value)."""
    hb = b"".join(struct.pack("<II", len(n), len(v)) + n + v
                  for n, v in headers)
    head = struct.pack("<QqIIIIIIIB", msg_id, nanos, len(topic), len(payload),
                       len(key), len(hb), len(headers), ttl, delay, priority)
    assert len(head) == 45
    return head + topic + payload + key + hb


def batch(items):
    """A group's deliveries: the count, then per delivery a 21-byte head
    (subscription id, delivery id, attempt, flags 0) and its record."""
    out = struct.pack("<I", len(items))
    for sub, delivery, attempt, rec in items:
        out += struct.pack("<QQIB", sub, delivery, attempt, 0) + rec
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "wire")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "message_with_headers": b"\x00" + record(),
        "message_empty": b"\x00" + record(topic=b"", payload=b"", key=b"",
                                          headers=()),
        "message_ttl_delay_priority": b"\x00" + record(
            ttl=60000, delay=500, priority=9, headers=()),
        "batch_of_two": b"\x01" + batch([
            (5, 70, 1, record()),
            (6, 71, 3, record(payload=b"x" * 200, headers=()))]),
        "batch_empty": b"\x01" + struct.pack("<I", 0),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
