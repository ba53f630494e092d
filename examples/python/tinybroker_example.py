#!/usr/bin/env python3
# Any gRPC language works; in Python the `tinybroker` package (python/) wraps
# the generated code: publish a batch with the unary Publish call, and a
# consumer-group worker that acks its jobs.
"""tinybroker from Python with the tinybroker package.

Install the package (docs/client.md, "Python client"), or use the build
tree's copy: the build puts it, with its generated gRPC code, into
build/examples/python:

  PYTHONPATH=build/examples/python python3 examples/python/tinybroker_example.py \
      worker workers 'jobs.>' 3
  PYTHONPATH=build/examples/python python3 examples/python/tinybroker_example.py \
      publish jobs.resize a b c

With a token and TLS (each flag also comes from its environment variable:
TINYBROKER_TOKEN, TINYBROKER_TOKEN_FILE, TINYBROKER_CA, TINYBROKER_CERT,
TINYBROKER_KEY, TINYBROKER_TLS_SERVER_NAME; a flag beats its variable):

  ... tinybroker_example.py --server broker.example:7400 --token-file app.token \
      --ca ca.pem --cert client.pem --key client.key publish jobs.resize a
"""

import argparse
import os
import sys

# gRPC's C core writes lines of its own ("E1204 ... ssl_transport_security.cc
# ...") to the terminal; the client's errors name the cause, so they are off
# unless GRPC_VERBOSITY asks for them. Set before grpc is imported.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

try:
    import tinybroker
except ImportError as missing:
    sys.exit(f"{missing}: install python3-grpcio and python3-protobuf (Debian) "
             "and the tinybroker package (pip install ./python), or build the "
             "project and set PYTHONPATH=build/examples/python")


def publish(client, topic, payloads):
    """Publishes one message per payload in one batch; prints their ids."""
    try:
        results = client.publish_unary([(topic, p) for p in payloads])
    except tinybroker.TinybrokerError as err:
        print(f"publish failed: {err}", file=sys.stderr)
        return 1
    failed = 0
    for result in results:
        if result.ok:
            print(f"published #{result.id}", flush=True)
        else:
            print(f"refused ({result.code.value[0]}): {result.message}",
                  file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def worker(client, group, pattern, count):
    """Joins `group` on `pattern`, acks `count` jobs, then leaves."""
    handled = 0
    try:
        jobs = client.join(group, pattern, max_in_flight=16)
        print(f"joined {group}", flush=True)
        for job in jobs:
            print(f"job {job.text} on {job.topic} (attempt {job.attempt})",
                  flush=True)
            job.ack()
            handled += 1
            if handled >= count:
                break
    except tinybroker.SubscribeError as err:
        print(f"refused ({err.code.value[0]}): {err}", file=sys.stderr)
        return 1
    except tinybroker.TinybrokerError as err:
        print(f"stream ended: {err}", file=sys.stderr)
        return 1
    print(f"acked {handled} jobs", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=None,
                        help="the broker's HOST:PORT (TINYBROKER_SERVER, "
                             "else 127.0.0.1:7400)")
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--token", help="bearer token (TINYBROKER_TOKEN)")
    tokens.add_argument("--token-file",
                        help="file holding the token (TINYBROKER_TOKEN_FILE)")
    parser.add_argument("--ca", help="TLS: CA certificate, PEM (TINYBROKER_CA)")
    parser.add_argument("--cert",
                        help="mutual TLS: client certificate (TINYBROKER_CERT)")
    parser.add_argument("--key", help="mutual TLS: its key (TINYBROKER_KEY)")
    parser.add_argument("--tls-server-name",
                        help="TLS: name in the broker's certificate, if not "
                             "the host of --server (TINYBROKER_TLS_SERVER_NAME)")
    sub = parser.add_subparsers(dest="command", required=True)
    pub = sub.add_parser("publish", help="publish messages")
    pub.add_argument("topic")
    pub.add_argument("data", nargs="+")
    work = sub.add_parser("worker", help="a group worker that acks")
    work.add_argument("group")
    work.add_argument("pattern")
    work.add_argument("count", type=int)
    args = parser.parse_args()
    try:
        # publish needs no Session stream: a lazy client opens none.
        client = tinybroker.connect(
            args.server, token=args.token, token_file=args.token_file,
            ca=args.ca, cert=args.cert, key=args.key,
            tls_server_name=args.tls_server_name,
            lazy=args.command == "publish")
    except tinybroker.SecurityError as err:
        sys.exit(f"tinybroker_example: {err}")
    except tinybroker.TinybrokerError as err:
        print(f"{args.command} failed: {err}", file=sys.stderr)
        return 1
    with client:
        if args.command == "publish":
            return publish(client, args.topic, args.data)
        return worker(client, args.group, args.pattern, args.count)


if __name__ == "__main__":
    sys.exit(main())
