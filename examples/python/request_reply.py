#!/usr/bin/env python3
# Request/reply from Python: a service answers with serve(), a caller asks
# with request(); NoRespondersError at once when no service runs.
"""Request/reply with the tinybroker package.

  PYTHONPATH=build/examples/python python3 examples/python/request_reply.py serve
  PYTHONPATH=build/examples/python python3 examples/python/request_reply.py ask hello

`serve` answers requests to "svc.reverse" with the text reversed until
interrupted; `ask TEXT` prints the reply. The
broker is --server, else TINYBROKER_SERVER, else 127.0.0.1:7400 (a token and
TLS come from TINYBROKER_TOKEN, TINYBROKER_CA, ...).
"""

import argparse
import os
import sys

os.environ.setdefault("GRPC_VERBOSITY", "NONE")

try:
    import tinybroker
except ImportError as missing:
    sys.exit(f"{missing}: install the tinybroker package (pip install "
             "./python), or build the project and set "
             "PYTHONPATH=build/examples/python")


def serve(client: "tinybroker.Client") -> int:
    client.serve("svc.reverse", lambda request: request.payload[::-1])
    print("serving svc.reverse", flush=True)
    client.wait_closed()  # until interrupted, or the broker is gone for good
    return 0


def ask(client: "tinybroker.Client", text: str) -> int:
    try:
        reply = client.request("svc.reverse", text, timeout=2.0)
    except tinybroker.NoRespondersError:
        print("request_reply: no responders: start `request_reply.py serve` "
              "first", file=sys.stderr)
        return 1
    except tinybroker.RequestTimeoutError as err:
        print(f"request_reply: {err}", file=sys.stderr)
        return 1
    print(reply.text)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", default=None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve")
    ask_args = sub.add_parser("ask")
    ask_args.add_argument("text")
    args = parser.parse_args()
    try:
        with tinybroker.connect(args.server) as client:
            if args.command == "serve":
                return serve(client)
            return ask(client, args.text)
    except tinybroker.TinybrokerError as err:
        print(f"request_reply: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
