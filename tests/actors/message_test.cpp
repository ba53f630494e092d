// Tests of the broker's message representation: one allocation holding
// topic, payload, key and headers; shared references; the size that counts
// against limits; and the serialization that lets messages cross nodes.

#include <cstring>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/send.hpp>
#include <gtest/gtest.h>

#include "actors/group_types.hpp"
#include "actors/message.hpp"

namespace tb::test {
namespace {

message_ref sample() {
  return message_record::make(
      42, 123, "orders.eu.created", std::string(128, 'p'), "customer-7",
      header_list{{"priority", "high"}, {"trace", "abc"}, {"priority", "low"}});
}

// Returns `x` as CAF's binary serializer writes it for another node.
std::vector<char> to_bytes(caf::actor_system& sys, message_ref x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  EXPECT_FALSE(sink(x));
  return buf;
}

TEST(MessageRecord, HoldsEveryPartAsPublished) {
  auto msg = sample();
  EXPECT_EQ(msg->id(), 42u);
  EXPECT_EQ(msg->accepted_unix_nanos(), 123);
  EXPECT_EQ(msg->topic(), "orders.eu.created");
  EXPECT_EQ(msg->payload(), std::string(128, 'p'));
  EXPECT_EQ(msg->key(), "customer-7");
  EXPECT_EQ(msg->header_count(), 3u);
  EXPECT_EQ(msg->headers(),
            (header_list{
                {"priority", "high"}, {"trace", "abc"}, {"priority", "low"}}));
}

TEST(MessageRecord, FindsTheFirstHeaderOfAName) {
  auto msg = sample();
  EXPECT_EQ(msg->header("priority"), std::string_view{"high"});
  EXPECT_EQ(msg->header("trace"), std::string_view{"abc"});
  EXPECT_FALSE(msg->header("missing").has_value());
  EXPECT_FALSE(msg->header("prio").has_value());
}

TEST(MessageRecord, EmptyPartsAndBinaryBytesSurvive) {
  std::string binary{"a\0b\0", 4};
  auto msg = message_record::make(1, 0, "t", binary);
  EXPECT_EQ(msg->payload(), binary);
  EXPECT_TRUE(msg->key().empty());
  EXPECT_EQ(msg->header_count(), 0u);
  auto empty = message_record::make(2, 0, "t", "", "", header_list{{"", ""}});
  EXPECT_TRUE(empty->payload().empty());
  EXPECT_EQ(empty->header(""), std::string_view{});
}

TEST(MessageRecord, SizeCountsPayloadKeyAndHeadersButNotTopic) {
  auto msg = sample();
  auto headers = 8 + 4 + 5 + 3 + 8 + 3;
  EXPECT_EQ(msg->size_bytes(), 128u + 10u + headers);
  EXPECT_EQ(message_record::make(1, 0, "long.topic.name", "abc")->size_bytes(),
            3u);
}

TEST(MessageRef, CopiesShareOneRecordAndMovesEmptyTheSource) {
  auto a = sample();
  auto b = a;
  EXPECT_EQ(a.get(), b.get());
  message_ref c = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(c.get(), b.get());
  b = message_ref{};
  EXPECT_EQ(c->payload().size(), 128u); // still alive through c
  auto& same = c;
  c = same; // self-assignment keeps it
  EXPECT_EQ(c->id(), 42u);
}

TEST(MessageRef, SerializesByContentAndLoadsAFreshRecord) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto original = sample();
  auto buf = to_bytes(sys, original);
  message_ref loaded;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(loaded));
  ASSERT_TRUE(loaded);
  EXPECT_NE(loaded.get(), original.get());
  EXPECT_EQ(loaded->id(), 42u);
  EXPECT_EQ(loaded->accepted_unix_nanos(), 123);
  EXPECT_EQ(loaded->topic(), original->topic());
  EXPECT_EQ(loaded->payload(), original->payload());
  EXPECT_EQ(loaded->key(), original->key());
  EXPECT_EQ(loaded->headers(), original->headers());
}

TEST(MessageRecord, CarriesTtlDelayAndPriorityInFortyEightBytes) {
  EXPECT_EQ(sizeof(message_record), 48u);
  auto plain = sample();
  EXPECT_EQ(plain->ttl_ms(), 0u);
  EXPECT_EQ(plain->delay_ms(), 0u);
  EXPECT_EQ(plain->priority(), 0u);
  EXPECT_EQ(plain->due_unix_nanos(), 123);
  EXPECT_EQ(plain->expires_unix_nanos(), INT64_MAX);
  auto timed =
      message_record::make(7, 1'000'000'000, "t", "p", "", header_list{},
                           message_timing{500, 2000, 9});
  EXPECT_EQ(timed->ttl_ms(), 500u);
  EXPECT_EQ(timed->delay_ms(), 2000u);
  EXPECT_EQ(timed->priority(), 9u);
  // Due 2 s after acceptance; the TTL runs from then.
  EXPECT_EQ(timed->due_unix_nanos(), 3'000'000'000);
  EXPECT_EQ(timed->expires_unix_nanos(), 3'500'000'000);
  EXPECT_EQ(timed->topic(), "t");
  EXPECT_EQ(timed->payload(), "p");
}

TEST(MessageRef, SerializesTtlDelayAndPriority) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto original =
      message_record::make(9, 5, "a.b", "x", "k", header_list{{"h", "v"}},
                           message_timing{UINT32_MAX, 4'000'000'000u, 3});
  auto buf = to_bytes(sys, original);
  message_ref loaded;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(loaded));
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->ttl_ms(), UINT32_MAX);
  EXPECT_EQ(loaded->delay_ms(), 4'000'000'000u);
  EXPECT_EQ(loaded->priority(), 3u);
  EXPECT_EQ(loaded->headers(), original->headers());
}

// The wire form of a record (cluster protocol v2): its fixed fields, then
// topic, payload, key and headers as one run of the record's own bytes.
TEST(MessageRef, CrossesNodesAsItsRecordsBytes) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto original = sample();
  auto buf = to_bytes(sys, original);
  // 8 + 8 bytes of id and time, 7 sizes and times of 4, 1 of priority.
  constexpr std::size_t fixed = 8 + 8 + 7 * 4 + 1;
  auto headers = 3 * 8 + std::string{"priorityhightraceabcprioritylow"}.size();
  EXPECT_EQ(buf.size(), fixed + original->topic().size() +
                            original->payload().size() +
                            original->key().size() + headers);
}

// Writes a record's wire form with the given sizes and `tail` bytes: the
// 45-byte head (little-endian words), then the tail.
std::vector<char> wire(caf::actor_system& sys, uint32_t topic_size,
                       uint32_t header_bytes, uint32_t header_count,
                       uint8_t priority, const std::string& tail) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  uint64_t id = 1;
  int64_t nanos = 2;
  uint32_t words[7] = {topic_size,
                       static_cast<uint32_t>(tail.size()) - topic_size -
                           header_bytes, // payload
                       0,                // key
                       header_bytes,
                       header_count,
                       0,  // TTL
                       0}; // delay
  char head[45];
  std::memcpy(head, &id, 8);
  std::memcpy(head + 8, &nanos, 8);
  std::memcpy(head + 16, words, sizeof(words));
  head[44] = static_cast<char>(priority);
  EXPECT_FALSE(sink.apply_raw(sizeof(head), head));
  EXPECT_FALSE(sink.apply_raw(tail.size(), const_cast<char*>(tail.data())));
  return buf;
}

// Sizes that do not fit are refused with an error, and the target is left
// as it was: headers that overrun their bytes, a priority over 9, a topic
// over 64 KiB, fewer bytes than the sizes promise.
TEST(MessageRef, RefusesSizesThatDoNotFit) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto load = [&](const std::vector<char>& buf) {
    auto target = message_record::make(7, 0, "kept", "as it was");
    caf::binary_deserializer source{sys, buf};
    auto err = source(target);
    if (err) { // a refusal leaves the target as it was
      EXPECT_EQ(target->topic(), "kept");
    }
    return err;
  };
  // One header of name "h" and value "v": 4 + 4 + 2 bytes.
  std::string header{"\x01\0\0\0\x01\0\0\0hv", 10};
  ASSERT_FALSE(load(wire(sys, 1, 10, 1, 0, "t" + std::string{"p"} + header)))
      << "the well-formed case loads";
  EXPECT_TRUE(load(wire(sys, 1, 10, 2, 0, "tp" + header)));
  EXPECT_TRUE(load(wire(sys, 1, 9, 1, 0, "tp" + header.substr(0, 9))));
  EXPECT_TRUE(load(wire(sys, 1, 0, 0, 10, "tp")));
  EXPECT_TRUE(load(wire(sys, 70000, 0, 0, 0, std::string(70001, 't'))));
  auto short_buf = wire(sys, 1, 0, 0, 0, "tp");
  short_buf.pop_back();
  EXPECT_TRUE(load(short_buf));
  // A head that promises 500 MB with 2 bytes behind it is refused before
  // the record is allocated.
  auto huge = wire(sys, 1, 0, 0, 0, "tp");
  uint32_t promised = 500'000'000;
  std::memcpy(huge.data() + 20, &promised, 4); // the payload's size
  auto err = load(huge);
  ASSERT_TRUE(err);
  EXPECT_NE(caf::to_string(err).find("beyond the bytes received"),
            std::string::npos)
      << caf::to_string(err);
}

// A group's deliveries cross as runs of raw bytes: the count, then per
// delivery 21 bytes of ids, attempt and flags, the record, and the reply
// target only for a request; every field comes back.
TEST(GroupDeliveryBatch, CrossesNodesAsRunsOfRawBytes) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto caller = sys.spawn([]() -> caf::behavior {
    return {[](int) {
    }};
  });
  group_delivery_batch batch;
  batch.items.push_back(group_delivery{sample(), 5, 70, 1, reply_target{}});
  batch.items.push_back(
      group_delivery{sample(), 6, 71, 3, reply_target{caller, 99, 1234}});
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(batch));
  auto record = to_bytes(sys, sample()).size();
  std::vector<char> target_buf;
  caf::binary_serializer target_sink{sys, target_buf};
  auto target = reply_target{caller, 99, 1234};
  ASSERT_FALSE(target_sink(target));
  EXPECT_EQ(buf.size(), 4 + 2 * (21 + record) + target_buf.size());
  group_delivery_batch copy;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(copy));
  ASSERT_EQ(copy.items.size(), 2u);
  EXPECT_EQ(copy.items[0].subscription_id, 5u);
  EXPECT_EQ(copy.items[0].delivery_id, 70u);
  EXPECT_EQ(copy.items[0].attempt, 1u);
  EXPECT_FALSE(copy.items[0].reply);
  EXPECT_EQ(copy.items[1].subscription_id, 6u);
  EXPECT_EQ(copy.items[1].delivery_id, 71u);
  EXPECT_EQ(copy.items[1].attempt, 3u);
  EXPECT_EQ(copy.items[1].reply.caller, caller);
  EXPECT_EQ(copy.items[1].reply.request, 99u);
  EXPECT_EQ(copy.items[1].reply.deadline_unix_nanos, 1234);
  for (auto& item : copy.items) {
    EXPECT_EQ(item.message->topic(), "orders.eu.created");
    EXPECT_EQ(item.message->payload(), std::string(128, 'p'));
    EXPECT_EQ(item.message->id(), 42u);
  }
  caf::anon_send_exit(caller, caf::exit_reason::user_shutdown);
}

// A flag the reader does not know, or fewer bytes than the count promises,
// fails the batch and leaves it empty.
TEST(GroupDeliveryBatch, RefusesUnknownFlagsAndTruncatedBuffers) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  group_delivery_batch batch;
  batch.items.push_back(group_delivery{sample(), 5, 70, 1, reply_target{}});
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(batch));
  auto load = [&](const std::vector<char>& bytes) {
    group_delivery_batch target;
    target.items.push_back(group_delivery{sample(), 1, 1, 1, reply_target{}});
    caf::binary_deserializer source{sys, bytes};
    auto err = source(target);
    if (err) {
      EXPECT_TRUE(target.items.empty());
    }
    return err;
  };
  ASSERT_FALSE(load(buf)) << "the well-formed batch loads";
  auto flagged = buf;
  flagged[4 + 20] = 2; // the flags byte of the first delivery
  EXPECT_TRUE(load(flagged));
  auto short_buf = buf;
  short_buf.pop_back();
  EXPECT_TRUE(load(short_buf));
  auto more = buf;
  more[0] = 2; // a count of 2 with bytes for 1
  EXPECT_TRUE(load(more));
}

} // namespace
} // namespace tb::test
