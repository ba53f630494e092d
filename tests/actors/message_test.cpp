// Tests of the broker's message representation: one allocation holding
// topic, payload, key and headers; shared references; the size that counts
// against limits; and the serialization that lets messages cross nodes.

#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <gtest/gtest.h>

#include "actors/message.hpp"

namespace tb::test {
namespace {

message_ref sample() {
  return message_record::make(
      42, 123, "orders.eu.created", std::string(128, 'p'), "customer-7",
      header_list{{"priority", "high"}, {"trace", "abc"}, {"priority", "low"}});
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
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(original));
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
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  ASSERT_FALSE(sink(original));
  message_ref loaded;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(loaded));
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->ttl_ms(), UINT32_MAX);
  EXPECT_EQ(loaded->delay_ms(), 4'000'000'000u);
  EXPECT_EQ(loaded->priority(), 3u);
  EXPECT_EQ(loaded->headers(), original->headers());
}

} // namespace
} // namespace tb::test
