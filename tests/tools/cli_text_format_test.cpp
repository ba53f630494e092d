// tinybroker-cli's text output: aligned tables, ages, rates, byte counts,
// latencies, the JSON writer's numbers, and the group table and JSON that
// `groups ls` and `stats` share.

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tools/cli/group_view.hpp"
#include "tools/cli/json_writer.hpp"
#include "tools/cli/text_format.hpp"

namespace tb::cli {
namespace {

namespace pb = tinybroker::v1;

TEST(TextTable, AlignsNamesLeftAndNumbersRightWithoutTrailingBlanks) {
  text_table table{{"NAME", "PATTERN", "COUNT"}, 2};
  table.add_row({"workers", "jobs.>", "7"});
  table.add_row({"a", "b", "12345"});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(), "NAME     PATTERN  COUNT\n"
                       "workers  jobs.>       7\n"
                       "a        b        12345\n");
}

TEST(TextTable, RefusesARowWithTheWrongNumberOfCells) {
  text_table table{{"A", "B"}};
  EXPECT_TRUE(table.empty());
  EXPECT_THROW(table.add_row({"1"}), std::logic_error);
  table.add_row({"1", "2"});
  EXPECT_FALSE(table.empty());
}

TEST(TextFormat, ElapsedTimeUsesTheLargestSensibleUnits) {
  EXPECT_EQ(format_elapsed(0), "0ms");
  EXPECT_EQ(format_elapsed(999), "999ms");
  EXPECT_EQ(format_elapsed(1000), "1.0s");
  EXPECT_EQ(format_elapsed(12345), "12.3s");
  EXPECT_EQ(format_elapsed(59999), "59.9s");
  EXPECT_EQ(format_elapsed(60000), "1m00s");
  EXPECT_EQ(format_elapsed(303000), "5m03s");
  EXPECT_EQ(format_elapsed(3600000), "1h00m");
  EXPECT_EQ(format_elapsed(7500000), "2h05m");
  EXPECT_EQ(format_elapsed(3 * 86400000ull + 4 * 3600000ull), "3d04h");
  EXPECT_EQ(format_age(0), "-");
  EXPECT_EQ(format_age(850), "850ms");
}

TEST(TextFormat, RatesBytesAndLatencies) {
  EXPECT_EQ(format_rate(0), "0");
  EXPECT_EQ(format_rate(-1), "0");
  EXPECT_EQ(format_rate(std::nan("")), "0");
  EXPECT_EQ(format_rate(0.5), "0.5");
  EXPECT_EQ(format_rate(12.34), "12.3");
  EXPECT_EQ(format_rate(1234.4), "1234");
  EXPECT_EQ(format_bytes(0), "0B");
  EXPECT_EQ(format_bytes(512), "512B");
  EXPECT_EQ(format_bytes(1536), "1.5KiB");
  EXPECT_EQ(format_bytes(47395635), "45.2MiB");
  EXPECT_EQ(format_bytes(3ull << 40), "3.0TiB");
  EXPECT_EQ(format_latency(0.00085), "850us");
  EXPECT_EQ(format_latency(0.00125), "1.25ms");
  EXPECT_EQ(format_latency(2.5), "2.50s");
}

TEST(JsonWriter, RealNumbersInShortestFormAndNullWhenNotFinite) {
  json_writer out;
  out.open_object()
      .real("half", 0.5)
      .real("small", 1e-05)
      .real("whole", 3)
      .real("nan", std::nan(""))
      .real("inf", std::numeric_limits<double>::infinity())
      .close_object();
  EXPECT_EQ(out.str(), R"({"half":0.5,"small":1e-05,"whole":3,)"
                       R"("nan":null,"inf":null})");
}

// Returns a group with every counter set to a distinct value.
pb::GroupInfo sample_group() {
  pb::GroupInfo g;
  g.set_name("workers");
  g.mutable_settings()->set_pattern("jobs.>");
  g.mutable_settings()->set_overflow(pb::OVERFLOW_DROP_OLDEST);
  auto& c = *g.mutable_counters();
  c.set_members(2);
  c.set_pending(40);
  c.set_in_flight(3);
  c.set_oldest_pending_age_ms(12345);
  c.set_received(1000);
  c.set_delivered(960);
  c.set_acked(950);
  c.set_redelivered(7);
  c.set_dead_lettered(1);
  c.set_dropped(2);
  c.set_refused(4);
  c.set_held_bytes(4096);
  c.set_scheduled(5);
  c.set_expired_ttl(6);
  c.set_next_due_unix_ms(1'700'000'000'123);
  c.set_received_per_second_1s(120);
  c.set_received_per_second_10s(98.5);
  c.set_acked_per_second_1s(110);
  c.set_acked_per_second_10s(97.25);
  auto& m = *g.add_members();
  m.set_peer("ipv4:127.0.0.1:50000");
  m.set_subscription_id(1);
  m.set_in_flight(3);
  m.set_credit(253);
  m.set_max_in_flight(256);
  m.set_acks(950);
  m.set_nacks(5);
  m.set_rejects(1);
  m.set_oldest_in_flight_age_ms(1500);
  m.set_active(true);
  return g;
}

TEST(GroupView, TableShowsEveryCounterAgeAndRates) {
  auto g = sample_group();
  std::ostringstream out;
  print_group_table(out, {&g});
  EXPECT_EQ(out.str(),
            "NAME     PATTERN  MEMBERS  PENDING  IN_FLIGHT  OLDEST_PENDING  "
            "RECEIVED  DELIVERED  ACKED  REDELIVERED  DEAD_LETTERED  DROPPED  "
            "SCHEDULED  EXPIRED_TTL    RECV/S     ACK/S\n"
            "workers  jobs.>         2       40          3           12.3s  "
            "    1000        960    950            7              1        2  "
            "        5            6  120/98.5  110/97.2\n");
  std::ostringstream none;
  print_group_table(none, {});
  EXPECT_EQ(none.str(), "no groups\n");
}

TEST(GroupView, TableNamesEachGroupsOwnerNodeInACluster) {
  auto g = sample_group();
  g.set_owner_node("n2");
  auto h = sample_group();
  h.set_name("audit");
  std::ostringstream out;
  print_group_table(out, {&g, &h});
  EXPECT_EQ(out.str().substr(0, out.str().find('\n')),
            "NAME     OWNER  PATTERN  MEMBERS  PENDING  IN_FLIGHT  "
            "OLDEST_PENDING  RECEIVED  DELIVERED  ACKED  REDELIVERED  "
            "DEAD_LETTERED  DROPPED  SCHEDULED  EXPIRED_TTL    RECV/S     "
            "ACK/S");
  EXPECT_NE(out.str().find("\nworkers  n2     jobs.>  "), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\naudit    -      jobs.>  "), std::string::npos)
      << out.str();
  json_writer json;
  write_group(json, g, false, {});
  EXPECT_NE(json.str().find("\"owner_node\":\"n2\""), std::string::npos)
      << json.str();
}

TEST(GroupView, TableNamesEachGroupsReplicaNodeWhenOneHasAReplica) {
  auto g = sample_group();
  g.set_owner_node("n2");
  g.set_replica_node("n3");
  g.set_term(1);
  g.mutable_settings()->set_replicas(1);
  g.set_replica_synced(true);
  g.set_replica_unacked(2);
  g.set_confirmed_unreplicated(10);
  auto h = sample_group();
  h.set_name("audit");
  h.set_owner_node("n1");
  std::ostringstream out;
  print_group_table(out, {&g, &h});
  EXPECT_EQ(out.str().substr(0, out.str().find("  MEMBERS")),
            "NAME     OWNER  REPLICA  PATTERN")
      << out.str();
  EXPECT_NE(out.str().find("\nworkers  n2     n3       jobs.>  "),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\naudit    n1     -        jobs.>  "),
            std::string::npos)
      << out.str();
  json_writer json;
  write_group(json, g, false, {});
  EXPECT_NE(json.str().find("\"replica_node\":\"n3\",\"term\":1,"
                            "\"replica_synced\":true,\"replica_unacked\":2,"
                            "\"confirmed_unreplicated\":10"),
            std::string::npos)
      << json.str();
  json_writer unreplicated;
  write_group(unreplicated, h, false, {});
  EXPECT_EQ(unreplicated.str().find("replica_synced"), std::string::npos)
      << unreplicated.str();
}

TEST(GroupView, MemberTableHasARowPerMember) {
  auto g = sample_group();
  g.mutable_members(0)->set_client_name("resize-1");
  std::ostringstream out;
  print_member_table(out, {&g});
  EXPECT_EQ(out.str(),
            "GROUP    NAME      PEER                  SUBSCRIPTION  IN_FLIGHT  "
            "CREDIT  MAX_IN_FLIGHT  ACKS  NACKS  REJECTS  OLDEST_IN_FLIGHT   "
            "STATE\n"
            "workers  resize-1  ipv4:127.0.0.1:50000             1          3  "
            "   253            256   950      5        1              1.5s  "
            "active\n");
  // Without a name: "-"; with a token, its name follows the peer.
  g.mutable_members(0)->clear_client_name();
  g.mutable_members(0)->set_token("orders");
  std::ostringstream with_token;
  print_member_table(with_token, {&g});
  EXPECT_NE(with_token.str().find("GROUP    NAME  PEER (TOKEN)  "),
            std::string::npos)
      << with_token.str();
  EXPECT_NE(with_token.str().find("workers  -     ipv4:127.0.0.1:50000 "
                                  "(orders)  "),
            std::string::npos)
      << with_token.str();
  g.clear_members();
  std::ostringstream none;
  print_member_table(none, {&g});
  EXPECT_EQ(none.str(), "no members\n");
}

TEST(GroupView, MemberTableSaysStalledInItsState) {
  auto g = sample_group();
  g.mutable_members(0)->set_stalled(true);
  std::ostringstream out;
  print_member_table(out, {&g});
  EXPECT_NE(out.str().find(" stalled\n"), std::string::npos) << out.str();
  g.mutable_members(0)->set_active(false);
  std::ostringstream left;
  print_member_table(left, {&g});
  EXPECT_NE(left.str().find(" left\n"), std::string::npos) << left.str();
}

TEST(GroupView, JsonHasSettingsCountersAndMembersOnlyWhenAsked) {
  auto g = sample_group();
  json_writer out;
  write_group(out, g, true);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(out.str(), &parsed).ok())
      << out.str();
  auto& fields = parsed.fields();
  auto& counters = fields.at("counters").struct_value().fields();
  EXPECT_EQ(counters.at("pending").number_value(), 40);
  EXPECT_EQ(counters.at("oldest_pending_age_ms").number_value(), 12345);
  EXPECT_EQ(counters.at("refused").number_value(), 4);
  EXPECT_EQ(counters.at("held_bytes").number_value(), 4096);
  EXPECT_EQ(counters.at("received_per_second_10s").number_value(), 98.5);
  EXPECT_EQ(counters.at("acked_per_second_10s").number_value(), 97.25);
  EXPECT_EQ(counters.at("scheduled").number_value(), 5);
  EXPECT_EQ(counters.at("expired_ttl").number_value(), 6);
  EXPECT_EQ(counters.at("next_due_unix_ms").number_value(), 1'700'000'000'123);
  EXPECT_EQ(fields.at("settings")
                .struct_value()
                .fields()
                .at("on_expiry")
                .string_value(),
            "dead_letter");
  EXPECT_EQ(fields.at("settings")
                .struct_value()
                .fields()
                .at("overflow")
                .string_value(),
            "drop_oldest");
  auto& member =
      fields.at("members").list_value().values(0).struct_value().fields();
  EXPECT_EQ(member.at("peer").string_value(), "ipv4:127.0.0.1:50000");
  EXPECT_EQ(member.at("name").string_value(), "");
  EXPECT_EQ(member.at("token").string_value(), "");
  EXPECT_EQ(member.at("credit").number_value(), 253);
  EXPECT_TRUE(member.at("active").bool_value());

  json_writer without;
  write_group(without, g, false);
  EXPECT_EQ(without.str().find("\"members\":["), std::string::npos)
      << without.str();
}

} // namespace
} // namespace tb::cli
