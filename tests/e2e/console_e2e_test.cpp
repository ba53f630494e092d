// End to end: the console's JSON and actions on a real broker (issue 27):
// the Stats reply in the console's order (groups most backed up first,
// sessions busiest first, actors largest mailbox first, each cut to the
// limit), the groups' totals over every group, a purge through the
// console, and `[console] enabled = false`.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <httplib.h>

#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

// Returns the console's address from a broker's log (`console on
// http://HOST:PORT/`), or "".
std::string console_address_of(const std::string& output) {
  constexpr std::string_view marker = "console on http://";
  auto at = output.find(marker);
  if (at == std::string::npos)
    return {};
  at += marker.size();
  return output.substr(at, output.find('/', at) - at);
}

/// A broker with its metrics listener (and so the console) on a free port,
/// actions allowed.
class ConsoleE2eTest : public GroupAdminTest {
protected:
  std::vector<std::string> broker_args() override {
    config_ = write_temp_file("[console]\nallow_actions = true\n", ".toml");
    return {"--metrics-listen", "127.0.0.1:0", "--config", config_};
  }

  httplib::Client http() {
    auto address = console_address_of(broker_->output());
    EXPECT_FALSE(address.empty()) << broker_->output();
    auto colon = address.rfind(':');
    httplib::Client client{address.substr(0, colon),
                           std::stoi(address.substr(colon + 1))};
    client.set_read_timeout(10, 0);
    return client;
  }

  /// GETs /api/stats?QUERY; returns the Stats reply and sets `totals` to
  /// the groups' totals.
  pb::StatsReply stats(const std::string& query,
                       std::pair<double, double>* totals = nullptr) {
    auto res = http().Get("/api/stats?" + query);
    EXPECT_TRUE(res);
    if (!res)
      return {};
    EXPECT_EQ(res->status, 200) << res->body;
    google::protobuf::Struct whole;
    EXPECT_TRUE(
        google::protobuf::util::JsonStringToMessage(res->body, &whole).ok())
        << res->body;
    auto& fields = whole.fields();
    if (totals != nullptr) {
      auto& t = fields.at("groups_total").struct_value().fields();
      *totals = {t.at("pending").number_value(),
                 t.at("in_flight").number_value()};
    }
    std::string stats_json;
    google::protobuf::util::MessageToJsonString(fields.at("stats"),
                                                &stats_json);
    pb::StatsReply reply;
    EXPECT_TRUE(
        google::protobuf::util::JsonStringToMessage(stats_json, &reply).ok())
        << stats_json;
    return reply;
  }

  std::string config_;
};

TEST_F(ConsoleE2eTest, GroupsComeMostBackedUpFirstAndTotalsCoverAll) {
  for (auto* name : {"alpha", "bravo", "charlie"})
    ASSERT_TRUE(create_group(name, on(std::string{name} + ".>")).ok());
  publish({"bravo.1", "bravo.2", "bravo.3", "charlie.1"});
  std::pair<double, double> totals;
  auto reply = stats("limit=2", &totals);
  ASSERT_EQ(reply.groups_size(), 2);
  EXPECT_EQ(reply.groups(0).name(), "bravo");
  EXPECT_EQ(reply.groups(0).counters().pending(), 3u);
  EXPECT_EQ(reply.groups(1).name(), "charlie");
  EXPECT_EQ(reply.groups_matched(), 3u);
  EXPECT_EQ(totals.first, 4);
  EXPECT_EQ(totals.second, 0);
  // Stats itself keeps its order by name.
  grpc::ClientContext ctx;
  pb::StatsRequest req;
  req.set_limit(2);
  pb::StatsReply by_name;
  ASSERT_TRUE(conn_->stub().Stats(&ctx, req, &by_name).ok());
  ASSERT_EQ(by_name.groups_size(), 2);
  EXPECT_EQ(by_name.groups(0).name(), "alpha");
}

TEST_F(ConsoleE2eTest, SessionsComeBusiestFirstAndActorsByMailbox) {
  auto quiet = subscriber(1, "nothing.>");
  auto busy = subscriber(2, "busy.>");
  publish({"busy.1", "busy.2", "busy.3"});
  ASSERT_EQ(busy->receive(3, patience).size(), 3u);
  auto reply = stats("limit=1&actors=1");
  ASSERT_EQ(reply.sessions_size(), 1);
  EXPECT_EQ(reply.sessions(0).delivered(), 3u);
  EXPECT_EQ(reply.sessions_matched(), 2u);
  ASSERT_EQ(reply.actors_size(), 1) << "cut to the limit";
  auto all = stats("limit=100&actors=1");
  EXPECT_GE(all.actors_size(), 8) << "router, 4 shards, 2 sessions, ...";
  for (int i = 1; i < all.actors_size(); ++i)
    EXPECT_GE(all.actors(i - 1).mailbox(), all.actors(i).mailbox());
}

TEST_F(ConsoleE2eTest, APurgeThroughTheConsoleDropsPendingAndIsLogged) {
  ASSERT_TRUE(create_group("jobs", on("jobs.>")).ok());
  auto member = worker("jobs", "jobs.>", 1);
  publish({"jobs.1", "jobs.2", "jobs.3"});
  ASSERT_EQ(member->receive(1, patience).size(), 1u);
  auto res = http().Post("/api/groups/purge",
                         httplib::Headers{{"X-Tinybroker-Console", "1"}},
                         "name=jobs", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, "{\"action\":\"purge\",\"group\":\"jobs\","
                       "\"messages\":2}\n");
  auto info = find_group("jobs");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->counters().pending(), 0u);
  EXPECT_EQ(info->counters().in_flight(), 1u);
  EXPECT_TRUE(broker_->wait_for_output("console action", patience));
  auto out = broker_->output();
  EXPECT_NE(out.find("group purged"), std::string::npos) << out;
  EXPECT_NE(out.find("token=\"(auth off)\""), std::string::npos) << out;
  auto gone = http().Post("/api/groups/purge",
                          httplib::Headers{{"X-Tinybroker-Console", "1"}},
                          "name=nobody", "application/x-www-form-urlencoded");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  EXPECT_NE(gone->body.find("no group named"), std::string::npos);
}

/// A broker with `[console] enabled = false`.
class ConsoleOffTest : public GroupAdminTest {
protected:
  std::vector<std::string> broker_args() override {
    config_ = write_temp_file("[console]\nenabled = false\n", ".toml");
    return {"--metrics-listen", "127.0.0.1:0", "--config", config_};
  }
  std::string config_;
};

TEST_F(ConsoleOffTest, OnlyTheMetricsAreServed) {
  auto out = broker_->output();
  EXPECT_EQ(out.find("console on"), std::string::npos) << out;
  EXPECT_NE(out.find("console: off"), std::string::npos) << out;
  constexpr std::string_view marker = "metrics on http://";
  auto at = out.find(marker) + marker.size();
  auto address = out.substr(at, out.find("/metrics", at) - at);
  auto colon = address.rfind(':');
  httplib::Client client{address.substr(0, colon),
                         std::stoi(address.substr(colon + 1))};
  EXPECT_EQ(client.Get("/")->status, 404);
  EXPECT_EQ(client.Get("/api/stats")->status, 404);
  EXPECT_EQ(client.Get("/metrics")->status, 200);
  grpc::ClientContext ctx;
  pb::InfoReply info;
  ASSERT_TRUE(conn_->stub().Info(&ctx, {}, &info).ok());
  EXPECT_FALSE(info.console_enabled());
}

} // namespace
} // namespace tb::test
