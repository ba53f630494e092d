// The msg_ids an idempotent C++ client generates (issue 28): 15 bytes, 8
// random bytes of the client and a 7-byte big-endian counter, so that the
// broker's parsed copy fits std::string's inline buffer; a frame of
// consecutive generated ids carries its first alone, as Publish.msg_id_base.

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/async_client.hpp"
#include "client/msg_id.hpp"
#include "fake_broker.hpp"

namespace tb::test {
namespace {

TEST(ClientMsgId, IsTheClientsPrefixAndASevenByteCounter) {
  client::msg_id_prefix prefix;
  prefix.fill('p');
  auto id = client::make_msg_id(prefix, 0x0102030405060708ull);
  ASSERT_EQ(id.size(), client::generated_msg_id_bytes);
  EXPECT_EQ(id.size(), 15u);
  EXPECT_EQ(id.substr(0, 8), "pppppppp");
  // The low 56 bits, big-endian.
  EXPECT_EQ(id.substr(8), std::string("\x02\x03\x04\x05\x06\x07\x08", 7));
  EXPECT_EQ(client::make_msg_id(prefix, 1).substr(8),
            std::string("\0\0\0\0\0\0\x01", 7));
  // Short enough to stay in std::string's inline buffer.
  EXPECT_LE(id.size(), std::string{}.capacity());
}

TEST(ClientMsgId, NumbersGiveDistinctIdsAndClientsDistinctPrefixes) {
  auto prefix = client::random_msg_id_prefix();
  std::set<std::string> ids;
  for (uint64_t n = 0; n < 70000; ++n)
    ids.insert(client::make_msg_id(prefix, n));
  EXPECT_EQ(ids.size(), 70000u);
  EXPECT_NE(client::random_msg_id_prefix(), client::random_msg_id_prefix());
}

/// Returns the msg_id of each message of `frames` in order: its own, or
/// numbered from its frame's msg_id_base as the broker numbers them (for a
/// base in the client's form, docs/protocol.md); "" for neither.
std::vector<std::string> ids_as_the_broker_reads_them(
    const std::vector<tinybroker::v1::Publish>& frames) {
  std::vector<std::string> ids;
  for (auto& frame : frames) {
    auto& base = frame.msg_id_base();
    client::msg_id_prefix prefix{};
    uint64_t first = 0;
    if (base.size() == client::generated_msg_id_bytes) {
      std::copy(base.begin(), base.begin() + 8, prefix.begin());
      for (std::size_t i = 8; i < base.size(); ++i)
        first = first << 8 | static_cast<unsigned char>(base[i]);
    }
    for (int i = 0; i < frame.messages_size(); ++i) {
      auto& own = frame.messages(i).msg_id();
      if (!own.empty() || base.empty())
        ids.push_back(own);
      else
        ids.push_back(
            client::make_msg_id(prefix, first + static_cast<uint64_t>(i)));
    }
  }
  return ids;
}

TEST(ClientMsgId, AFrameOfGeneratedIdsCarriesOnlyItsFirstAsTheBase) {
  using namespace std::chrono_literals;
  fake_broker broker;
  client::client_options options;
  options.idempotent = true;
  client::async_client client{broker.address(), options};
  ASSERT_TRUE(client.wait_connected(10s));
  constexpr int count = 300;
  constexpr int own_at = 250; // this one carries the user's own id
  for (int i = 0; i < count; ++i) {
    client::outgoing_message message;
    message.topic = "orders.created";
    message.payload = "m" + std::to_string(i);
    if (i == own_at)
      message.msg_id = "my-own-id";
    client.publish(std::move(message), nullptr);
  }
  ASSERT_TRUE(client.flush(10s));
  auto frames = broker.wait_publishes(1, 10s);
  client.close();
  // Every message has an id: the generated ones numbered 1, 2, ... in
  // publish order (the user's own in between takes no number).
  auto ids = ids_as_the_broker_reads_them(frames);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(count));
  auto generated = ids.front();
  ASSERT_EQ(generated.size(), client::generated_msg_id_bytes);
  client::msg_id_prefix prefix;
  std::copy(generated.begin(), generated.begin() + 8, prefix.begin());
  uint64_t number = 0;
  for (int i = 0; i < count; ++i)
    EXPECT_EQ(ids[static_cast<std::size_t>(i)],
              i == own_at ? "my-own-id" : client::make_msg_id(prefix, ++number))
        << "message " << i;
  // Frames of generated ids alone carry one base and no id per message;
  // the frame with the user's id carries each id in its message.
  std::size_t with_base = 0;
  for (auto& frame : frames) {
    if (frame.messages_size() == 0)
      continue; // the probe that opens a stream
    bool has_own = false;
    for (auto& message : frame.messages())
      has_own = has_own || message.msg_id() == "my-own-id";
    if (has_own) {
      EXPECT_TRUE(frame.msg_id_base().empty());
      continue;
    }
    EXPECT_EQ(frame.msg_id_base().size(), client::generated_msg_id_bytes)
        << frame.messages_size() << " messages, the first with msg_id of "
        << frame.messages(0).msg_id().size() << " bytes";
    for (auto& message : frame.messages())
      EXPECT_TRUE(message.msg_id().empty());
    ++with_base;
  }
  EXPECT_GE(with_base, 1u);
}

} // namespace
} // namespace tb::test
