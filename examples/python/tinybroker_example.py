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
"""

import argparse
import queue
import sys

try:
    import grpc

    import tinybroker_pb2 as pb
    import tinybroker_pb2_grpc as pb_grpc
except ImportError as missing:
    sys.exit(f"{missing}: install python3-grpcio and python3-protobuf (Debian), "
             "build the project, and set PYTHONPATH=build/examples/python")


def publish(stub, topic, payloads):
    """Publishes one message per payload in one batch; prints their ids."""
    request = pb.PublishRequest(
        messages=[pb.Message(topic=topic, payload=p.encode()) for p in payloads])
    try:
        reply = stub.Publish(request, timeout=10)
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


def worker(stub, group, pattern, count):
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
    stream = stub.Session(frames())
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:7400",
                        help="the broker's HOST:PORT")
    sub = parser.add_subparsers(dest="command", required=True)
    pub = sub.add_parser("publish", help="publish messages")
    pub.add_argument("topic")
    pub.add_argument("data", nargs="+")
    work = sub.add_parser("worker", help="a group worker that acks")
    work.add_argument("group")
    work.add_argument("pattern")
    work.add_argument("count", type=int)
    args = parser.parse_args()
    with grpc.insecure_channel(args.server) as channel:
        stub = pb_grpc.BrokerStub(channel)
        if args.command == "publish":
            return publish(stub, args.topic, args.data)
        return worker(stub, args.group, args.pattern, args.count)


if __name__ == "__main__":
    sys.exit(main())
