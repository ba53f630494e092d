// Tests of how a group's info reaches the gRPC API (net/group_admin.cpp):
// the replica fields of issue 32 (GroupInfo 8-10).

#include <gtest/gtest.h>

#include "net/group_admin.hpp"
#include "tinybroker.pb.h"

namespace {

TEST(GroupInfoProto, CarriesTheReplicaFields) {
  tb::group_info in;
  in.name = "work";
  in.replica_synced = true;
  in.replica_unacked = 3;
  in.confirmed_unreplicated = 42;
  tinybroker::v1::GroupInfo out;
  tb::to_proto(in, out);
  EXPECT_EQ(out.name(), "work");
  EXPECT_TRUE(out.replica_synced());
  EXPECT_EQ(out.replica_unacked(), 3u);
  EXPECT_EQ(out.confirmed_unreplicated(), 42u);
}

TEST(GroupInfoProto, LeavesTheReplicaFieldsUnsetWithoutAReplica) {
  tb::group_info in;
  in.name = "work";
  tinybroker::v1::GroupInfo out;
  tb::to_proto(in, out);
  EXPECT_FALSE(out.replica_synced());
  EXPECT_EQ(out.replica_unacked(), 0u);
  EXPECT_EQ(out.confirmed_unreplicated(), 0u);
}

} // namespace
