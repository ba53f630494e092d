#!/usr/bin/env python3
# Any gRPC language works (Python, code generated from proto/): publish a batch
# with the unary Publish call, and a consumer-group worker that acks its jobs.
"""tinybroker from Python with Debian's python3-grpcio.

The build generates tinybroker_pb2.py and tinybroker_pb2_grpc.py into
build/examples/python; put that directory on PYTHONPATH:

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
import queue
import sys

try:
    import grpc

    import tinybroker_pb2 as pb
    import tinybroker_pb2_grpc as pb_grpc
except ImportError as missing:
    sys.exit(f"{missing}: install python3-grpcio and python3-protobuf (Debian), "
             "build the project, and set PYTHONPATH=build/examples/python")


def publish(stub, metadata, topic, payloads):
    """Publishes one message per payload in one batch; prints their ids."""
    request = pb.PublishRequest(
        messages=[pb.Message(topic=topic, payload=p.encode()) for p in payloads])
    try:
        reply = stub.Publish(request, timeout=10, metadata=metadata)
    except grpc.RpcError as err:
        print(f"publish failed: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    failed = 0
    for result in reply.results:
        if result.HasField("error"):
            print(f"refused ({result.error.code}): {result.error.message}",
                  file=sys.stderr)
            failed += 1
        else:
            print(f"published #{result.id}", flush=True)
    return 1 if failed else 0


def worker(stub, metadata, group, pattern, count):
    """Joins `group` on `pattern`, acks `count` jobs, then leaves."""
    outgoing = queue.Queue(maxsize=1024)  # frames to send; None ends the stream

    def frames():
        while True:
            frame = outgoing.get()
            if frame is None:
                return
            yield frame

    outgoing.put(pb.ClientFrame(
        request_id=1,
        subscribe=pb.Subscribe(subscription_id=1, pattern=pattern, group=group,
                               max_in_flight=16)))
    handled = 0
    stream = stub.Session(frames(), metadata=metadata)
    try:
        for frame in stream:
            kind = frame.WhichOneof("kind")
            if kind == "subscribed":
                print(f"joined {group}", flush=True)
            elif kind == "error":
                print(f"refused ({frame.error.error.code}): "
                      f"{frame.error.error.message}", file=sys.stderr)
                outgoing.put(None)
                return 1
            elif kind == "deliveries":
                done = []
                for d in frame.deliveries.deliveries:
                    print(f"job {d.payload.decode()} on {d.topic} "
                          f"(attempt {d.attempt})", flush=True)
                    done.append(d.delivery_id)
                outgoing.put(pb.ClientFrame(ack=pb.Ack(delivery_ids=done)))
                handled += len(done)
                if handled >= count:
                    outgoing.put(None)  # half-close: the broker ends the stream
    except grpc.RpcError as err:
        print(f"stream ended: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    print(f"acked {handled} jobs", flush=True)
    return 0


def read_file(path, what):
    """Returns the bytes of `path`; exits with a clear message if unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        sys.exit(f"tinybroker_example: cannot read {what} \"{path}\": "
                 f"{err.strerror}")


def security(args):
    """Returns (channel credentials or None, call metadata) from the flags
    and, for what they leave unset, the TINYBROKER_* variables."""
    def pick(flag, var):
        return flag if flag is not None else (os.environ.get(var) or None)
    token, token_file = args.token, args.token_file
    if token is None and token_file is None:
        token = os.environ.get("TINYBROKER_TOKEN") or None
        token_file = os.environ.get("TINYBROKER_TOKEN_FILE") or None
        if token and token_file:
            sys.exit("tinybroker_example: TINYBROKER_TOKEN and "
                     "TINYBROKER_TOKEN_FILE are both set; use one")
    if token_file is not None:
        token = read_file(token_file, "token file").decode().rstrip()
        if not token:
            sys.exit(f"tinybroker_example: token file \"{token_file}\" "
                     "holds no token")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    ca = pick(args.ca, "TINYBROKER_CA")
    cert = pick(args.cert, "TINYBROKER_CERT")
    key = pick(args.key, "TINYBROKER_KEY")
    if (cert is None) != (key is None):
        sys.exit("tinybroker_example: --cert and --key go together")
    if ca is None and cert is None:
        return None, metadata
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read_file(ca, "CA file") if ca else None,
        private_key=read_file(key, "key file") if key else None,
        certificate_chain=read_file(cert, "certificate file") if cert else None)
    return credentials, metadata


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:7400",
                        help="the broker's HOST:PORT")
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
    credentials, metadata = security(args)
    if credentials is None:
        channel = grpc.insecure_channel(args.server)
    else:
        name = args.tls_server_name or os.environ.get("TINYBROKER_TLS_SERVER_NAME")
        options = [("grpc.ssl_target_name_override", name)] if name else []
        channel = grpc.secure_channel(args.server, credentials, options=options)
    with channel:
        stub = pb_grpc.BrokerStub(channel)
        if args.command == "publish":
            return publish(stub, metadata, args.topic, args.data)
        return worker(stub, metadata, args.group, args.pattern, args.count)


if __name__ == "__main__":
    sys.exit(main())
