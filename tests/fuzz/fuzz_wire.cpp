// libFuzzer target: what a peer node's bytes make of the types that cross
// nodes as runs of raw bytes (docs/cluster.md, "Types that cross nodes").
//
// The first byte picks the type (even: a `message_ref`, odd: a
// `group_delivery_batch`); the rest goes to CAF's binary deserializer, as a
// peer's message does. Loading may fail, with an error, but must not
// crash, read out of bounds or trip a sanitizer; a failed load leaves the
// target as the loader promises (a message unchanged, a batch empty). What
// loads is read through (topic, payload, key, headers), and saving it must
// give bytes that load to the same bytes again: save(load(x)) is a fixed
// point.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "actors/group_types.hpp"
#include "actors/message.hpp"

namespace {

// Returns the actor system that gives the (de)serializers their context,
// created on first use and never destroyed (exit does not wait for it).
caf::actor_system& system_of_process() {
  static auto* instance = [] {
    auto* cfg = new caf::actor_system_config;
    return new caf::actor_system{*cfg};
  }();
  return *instance;
}

// Aborts with `what` if `ok` is false: libFuzzer reports it as a crash.
void check(bool ok, const char* what) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz_wire: %s\n", what);
  std::abort();
}

// Reads every part of `msg`, so that ASan sees any byte out of bounds;
// returns a number that depends on them.
size_t touch(const tb::message_ref& msg) {
  if (!msg)
    return 0;
  size_t sum = msg->topic().size() + msg->payload().size() + msg->key().size();
  for (auto& [name, value] : msg->headers())
    sum += name.size() + value.size();
  return sum;
}

// Saves `x` with CAF's binary serializer.
template <class T>
std::vector<char> save(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{system_of_process(), buf};
  check(!sink(x), "a loaded value failed to save");
  return buf;
}

// Loads a `T` from `bytes`; false if the load failed.
template <class T>
bool load(const std::vector<char>& bytes, T& x) {
  caf::binary_deserializer source{system_of_process(), bytes};
  return !source(x);
}

// Checks that what `bytes` loads to saves to a fixed point.
template <class T>
void check_fixed_point(const std::vector<char>& bytes) {
  T first;
  if (!load(bytes, first))
    return;
  auto once = save(first);
  T second;
  check(load(once, second), "saved bytes failed to load");
  auto twice = save(second);
  check(once == twice, "save(load(x)) is not a fixed point");
}

void fuzz_message(const std::vector<char>& bytes) {
  auto kept = tb::message_record::make(7, 0, "kept", "as it was");
  caf::binary_deserializer source{system_of_process(), bytes};
  if (source(kept)) {
    check(kept && kept->topic() == "kept", "a failed load changed the target");
    return;
  }
  check(touch(kept) < (size_t{1} << 31), "more bytes than a record holds");
  check_fixed_point<tb::message_ref>(bytes);
}

void fuzz_batch(const std::vector<char>& bytes) {
  tb::group_delivery_batch batch;
  if (!load(bytes, batch)) {
    check(batch.items.empty(), "a failed load left deliveries");
    return;
  }
  size_t sum = 0;
  for (auto& item : batch.items)
    sum += touch(item.message);
  check(sum < (size_t{1} << 40), "more bytes than the records hold");
  check_fixed_point<tb::group_delivery_batch>(bytes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::vector<char> bytes(reinterpret_cast<const char*>(data) + 1,
                          reinterpret_cast<const char*>(data) + size);
  if ((data[0] & 1) == 0)
    fuzz_message(bytes);
  else
    fuzz_batch(bytes);
  return 0;
}
