// Benchmarks of the wire frames: a ServerFrame of 256 deliveries and a
// ClientFrame publishing 256 messages, 128-byte payloads. Each case builds
// or parses one frame per iteration, with the messages on the heap (one
// allocation per message and string) or on a reused protobuf arena (one
// block, reset per frame). Items processed = messages.
//
//   build/bench/frame_bench
//   build/bench/frame_bench --benchmark_filter=Parse --benchmark_repetitions=3

#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>
#include <google/protobuf/arena.h>

#include "tinybroker.pb.h"

namespace {

namespace pb = tinybroker::v1;

// Messages per frame and payload bytes per message.
constexpr int batch = 256;
constexpr std::size_t payload_bytes = 128;

// The topic every message uses (three tokens, as in the load generator).
const std::string& topic() {
  static const std::string name = "orders.eu.created";
  return name;
}

// The payload every message carries.
const std::string& payload() {
  static const std::string bytes(payload_bytes, 'x');
  return bytes;
}

// Fills `frame` with a Deliveries frame of `batch` deliveries, as the
// broker sends to a subscriber.
void fill_deliveries(pb::ServerFrame& frame) {
  auto* deliveries = frame.mutable_deliveries()->mutable_deliveries();
  deliveries->Reserve(batch);
  for (int i = 0; i < batch; ++i) {
    auto* d = deliveries->Add();
    d->set_subscription_id(1);
    d->set_message_id(1'000'000 + static_cast<uint64_t>(i));
    d->set_accepted_unix_nanos(1'700'000'000'000'000'000 + i);
    d->set_topic(topic());
    d->set_payload(payload());
    d->set_delivery_id(5'000'000 + static_cast<uint64_t>(i));
    d->set_attempt(1);
  }
}

// Fills `frame` with a Publish frame of `batch` messages, as a client sends.
void fill_publish(pb::ClientFrame& frame) {
  frame.set_request_id(7);
  auto* publish = frame.mutable_publish();
  publish->set_confirm(true);
  auto* msgs = publish->mutable_messages();
  msgs->Reserve(batch);
  for (int i = 0; i < batch; ++i) {
    auto* msg = msgs->Add();
    msg->set_topic(topic());
    msg->set_payload(payload());
  }
}

// Reports `batch` messages and `wire`'s bytes per iteration.
void count_frames(benchmark::State& state, const std::string& wire) {
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(wire.size()));
}

// Returns the wire bytes of a frame made by `fill`.
template <class Frame, class Fill>
std::string encoded(Fill fill) {
  Frame frame;
  fill(frame);
  return frame.SerializeAsString();
}

// Builds a frame on the heap and serializes it: what the sender pays.
template <class Frame, void (*Fill)(Frame&)>
void BM_BuildSerialize(benchmark::State& state) {
  std::string wire;
  for (auto _ : state) {
    Frame frame;
    Fill(frame);
    frame.SerializeToString(&wire);
    benchmark::DoNotOptimize(wire.data());
  }
  count_frames(state, wire);
}

// Builds a frame on a reused arena and serializes it.
template <class Frame, void (*Fill)(Frame&)>
void BM_BuildSerializeArena(benchmark::State& state) {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 128 << 10;
  google::protobuf::Arena arena{options};
  std::string wire;
  for (auto _ : state) {
    auto* frame = google::protobuf::Arena::CreateMessage<Frame>(&arena);
    Fill(*frame);
    frame->SerializeToString(&wire);
    benchmark::DoNotOptimize(wire.data());
    arena.Reset();
  }
  count_frames(state, wire);
}

// Serializes an already built frame: the encoding alone.
template <class Frame, void (*Fill)(Frame&)>
void BM_SerializeOnly(benchmark::State& state) {
  Frame frame;
  Fill(frame);
  std::string wire;
  for (auto _ : state) {
    frame.SerializeToString(&wire);
    benchmark::DoNotOptimize(wire.data());
  }
  count_frames(state, wire);
}

// Parses a frame into a fresh heap message and destroys it: what the
// receiver pays.
template <class Frame, void (*Fill)(Frame&)>
void BM_Parse(benchmark::State& state) {
  auto wire = encoded<Frame>(Fill);
  for (auto _ : state) {
    Frame frame;
    bool ok = frame.ParseFromString(wire);
    benchmark::DoNotOptimize(ok);
  }
  count_frames(state, wire);
}

// Parses a frame into one heap message reused across frames (Clear keeps
// the allocated sub-messages and strings).
template <class Frame, void (*Fill)(Frame&)>
void BM_ParseReused(benchmark::State& state) {
  auto wire = encoded<Frame>(Fill);
  Frame frame;
  for (auto _ : state) {
    bool ok = frame.ParseFromString(wire);
    benchmark::DoNotOptimize(ok);
  }
  count_frames(state, wire);
}

// Parses a frame into a message on a reused arena.
template <class Frame, void (*Fill)(Frame&)>
void BM_ParseArena(benchmark::State& state) {
  auto wire = encoded<Frame>(Fill);
  google::protobuf::ArenaOptions options;
  options.start_block_size = 128 << 10;
  google::protobuf::Arena arena{options};
  for (auto _ : state) {
    auto* frame = google::protobuf::Arena::CreateMessage<Frame>(&arena);
    bool ok = frame->ParseFromString(wire);
    benchmark::DoNotOptimize(ok);
    arena.Reset();
  }
  count_frames(state, wire);
}

// ServerFrame: 256 deliveries, broker -> subscriber.
BENCHMARK_TEMPLATE(BM_BuildSerialize, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/BuildSerialize/heap");
BENCHMARK_TEMPLATE(BM_BuildSerializeArena, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/BuildSerialize/arena");
BENCHMARK_TEMPLATE(BM_SerializeOnly, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/SerializeOnly");
BENCHMARK_TEMPLATE(BM_Parse, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/Parse/heap");
BENCHMARK_TEMPLATE(BM_ParseReused, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/Parse/heap_reused");
BENCHMARK_TEMPLATE(BM_ParseArena, pb::ServerFrame, fill_deliveries)
    ->Name("Deliveries/Parse/arena");

// ClientFrame: publish of 256 messages, publisher -> broker.
BENCHMARK_TEMPLATE(BM_BuildSerialize, pb::ClientFrame, fill_publish)
    ->Name("Publish/BuildSerialize/heap");
BENCHMARK_TEMPLATE(BM_BuildSerializeArena, pb::ClientFrame, fill_publish)
    ->Name("Publish/BuildSerialize/arena");
BENCHMARK_TEMPLATE(BM_SerializeOnly, pb::ClientFrame, fill_publish)
    ->Name("Publish/SerializeOnly");
BENCHMARK_TEMPLATE(BM_Parse, pb::ClientFrame, fill_publish)
    ->Name("Publish/Parse/heap");
BENCHMARK_TEMPLATE(BM_ParseReused, pb::ClientFrame, fill_publish)
    ->Name("Publish/Parse/heap_reused");
BENCHMARK_TEMPLATE(BM_ParseArena, pb::ClientFrame, fill_publish)
    ->Name("Publish/Parse/arena");

} // namespace
