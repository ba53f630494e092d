// End to end: tinybroker-cli pub --msg-id (issue 28): a second message with
// the same id is reported as a duplicate of the first and not routed, and
// `stats` shows the duplicates and the ids remembered.

#include <string>

#include "cli_fixture.hpp"

namespace tb::test {
namespace {

using CliDedupTest = CliTest;

TEST_F(CliDedupTest, PubMsgIdReportsTheDuplicateAndStatsCountIt) {
  auto [code, out] = cli({"pub", "orders.1", "first", "--msg-id", "order-7"});
  ASSERT_EQ(code, 0) << out;
  auto ids = published_ids(out);
  ASSERT_EQ(ids.size(), 1u) << out;
  auto [again, text] = cli({"pub", "orders.1", "again", "--msg-id", "order-7"});
  EXPECT_EQ(again, 0) << text; // a duplicate is not an error
  EXPECT_NE(text.find("duplicate of #" + std::to_string(ids[0]) +
                      " on orders.1: msg_id order-7 was seen within the "
                      "broker's window; not routed again"),
            std::string::npos)
      << text;
  // {{n}} numbers the ids: three new ones, then the same three again.
  auto [n_code, n_out] = cli({"pub", "orders.1", "x", "--count", "3",
                              "--msg-id", "batch-{{n}}", "--json"});
  ASSERT_EQ(n_code, 0) << n_out;
  EXPECT_EQ(n_out.find("duplicate"), std::string::npos) << n_out;
  auto [r_code, r_out] = cli({"pub", "orders.1", "x", "--count", "3",
                              "--msg-id", "batch-{{n}}", "--json"});
  ASSERT_EQ(r_code, 0) << r_out;
  EXPECT_EQ(lines_starting_with(r_out, "{\"topic\"").size(), 3u) << r_out;
  for (auto& line : lines_starting_with(r_out, "{")) {
    auto fields = parse_json(line).fields();
    EXPECT_TRUE(fields["duplicate"].bool_value()) << line;
  }

  auto [s_code, stats] = cli({"stats"});
  ASSERT_EQ(s_code, 0) << stats;
  EXPECT_NE(stats.find("duplicates 4, ids remembered 4"), std::string::npos)
      << stats;
}

TEST_F(CliDedupTest, PubRefusesAMsgIdOverTheLimitNamingIt) {
  auto [code, out] =
      cli({"pub", "orders.1", "x", "--msg-id", std::string(129, 'k')});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("msg_id of a message to \"orders.1\" has 129 bytes; the "
                     "limit is 128"),
            std::string::npos)
      << out;
}

} // namespace
} // namespace tb::test
