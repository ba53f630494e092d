// The msg_ids an idempotent C++ client generates (issue 28): 15 bytes, 8
// random bytes of the client and a 7-byte big-endian counter, so that the
// broker's parsed copy fits std::string's inline buffer.

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "client/msg_id.hpp"

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

} // namespace
} // namespace tb::test
