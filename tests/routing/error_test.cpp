// The one table from error codes to gRPC status codes (routing/error.cpp):
// each code has a stable name and the status the protocol documents.

#include <set>
#include <string_view>

#include <gtest/gtest.h>

#include "routing/error.hpp"

namespace tb {
namespace {

TEST(ErrorTable, EveryCodeHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(ec::no_quorum); ++i) {
    auto name = to_string(static_cast<ec>(i));
    EXPECT_NE(name, "unknown") << "code " << i << " has no name";
    EXPECT_TRUE(names.insert(name).second) << "name " << name << " twice";
  }
}

TEST(ErrorTable, ANodeThatIsGoneIsUnavailable) {
  EXPECT_EQ(to_string(ec::node_unavailable), "node_unavailable");
  EXPECT_EQ(grpc_status_code(ec::node_unavailable), 14);
}

TEST(ErrorTable, ANodeWithoutQuorumIsUnavailable) {
  EXPECT_EQ(to_string(ec::no_quorum), "no_quorum");
  EXPECT_EQ(grpc_status_code(ec::no_quorum), 14);
}

TEST(ErrorTable, CodesMapToTheDocumentedStatus) {
  EXPECT_EQ(grpc_status_code(ec::none), 0);
  EXPECT_EQ(grpc_status_code(ec::invalid_topic), 3);
  EXPECT_EQ(grpc_status_code(ec::request_timeout), 4);
  EXPECT_EQ(grpc_status_code(ec::unknown_group), 5);
  EXPECT_EQ(grpc_status_code(ec::permission_denied), 7);
  EXPECT_EQ(grpc_status_code(ec::group_full), 8);
  EXPECT_EQ(grpc_status_code(ec::group_pattern_conflict), 9);
  EXPECT_EQ(grpc_status_code(ec::unimplemented), 12);
  EXPECT_EQ(grpc_status_code(ec::internal), 13);
  EXPECT_EQ(grpc_status_code(ec::no_responders), 14);
  EXPECT_EQ(grpc_status_code(ec::unauthenticated), 16);
}

} // namespace
} // namespace tb
