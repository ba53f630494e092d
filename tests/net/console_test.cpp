// Tests of the console's HTTP side (issue 27) with stand-in sources, over a
// real metrics listener: the page from memory, the JSON of a Stats reply
// with the page's filters, who may see and act (auth on and off, admin and
// other tokens, allow_actions, the CSRF header), and the action log line.

#include "net/console_api.hpp"
#include "net/metrics_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <string>
#include <vector>

#include "log/log.hpp"

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// What the stand-in sources saw and answer.
struct stand_in {
  std::mutex mutex;
  std::vector<pb::StatsRequest> requests;
  std::vector<tb::group_action> actions;
  tb::error_info action_error;
  tb::token_table tokens;

  tb::console_sources sources() {
    tb::console_sources result;
    result.stats = [this](const pb::StatsRequest& req,
                          tb::console_stats_callback done) {
      {
        std::lock_guard<std::mutex> guard{mutex};
        requests.push_back(req);
      }
      pb::StatsReply reply;
      reply.mutable_broker()->set_published(42);
      auto* group = reply.add_groups();
      group->set_name("work");
      group->mutable_counters()->set_pending(7);
      tb::group_totals totals{9, 3};
      done(reply, {}, totals);
    };
    result.act = [this](const tb::group_action& action,
                        tb::action_callback done) {
      {
        std::lock_guard<std::mutex> guard{mutex};
        actions.push_back(action);
      }
      done(action_error ? 0 : 5, action_error);
    };
    result.authenticate = [this](std::string_view authorization,
                                 std::string_view subject) {
      return tokens.authenticate(authorization, subject);
    };
    return result;
  }
};

// Returns an auth config with an admin token "ops" (secret "ops-secret")
// and a publishing token "app" (secret "app-secret").
tb::auth_config two_tokens() {
  tb::auth_config cfg;
  cfg.enabled = true;
  tb::token_config ops;
  ops.name = "ops";
  ops.secret_sha256 = tb::sha256_hex("ops-secret");
  ops.admin = true;
  tb::token_config app;
  app.name = "app";
  app.secret_sha256 = tb::sha256_hex("app-secret");
  app.publish = {">"};
  cfg.tokens = {ops, app};
  return cfg;
}

class ConsoleTest : public ::testing::Test {
protected:
  // Starts a listener with the console (unless `console` is false).
  void start(tb::console_settings settings, bool console = true) {
    tb::metrics_server_settings s;
    s.listen = "127.0.0.1:0";
    s.stats_timeout = 2s;
    if (console)
      s.console = tb::make_console_handler(fake.sources(), settings);
    server = std::make_unique<tb::metrics_server>(
        [](const pb::StatsRequest&, tb::stats_callback done) {
          pb::StatsReply reply;
          done(reply, {});
        },
        s);
    ASSERT_FALSE(server->start());
  }

  httplib::Client client() {
    auto address = server->address();
    auto colon = address.rfind(':');
    httplib::Client c{address.substr(0, colon),
                      std::stoi(address.substr(colon + 1))};
    c.set_read_timeout(10, 0);
    return c;
  }

  httplib::Result get(const std::string& path, const std::string& token = "") {
    httplib::Headers headers;
    if (!token.empty())
      headers.emplace("Authorization", "Bearer " + token);
    return client().Get(path, headers);
  }

  httplib::Result post(const std::string& path, const std::string& body,
                       const std::string& token = "", bool header = true) {
    httplib::Headers headers;
    if (!token.empty())
      headers.emplace("Authorization", "Bearer " + token);
    if (header)
      headers.emplace("X-Tinybroker-Console", "1");
    return client().Post(path, headers, body,
                         "application/x-www-form-urlencoded");
  }

  stand_in fake;
  std::unique_ptr<tb::metrics_server> server;
};

TEST_F(ConsoleTest, ThePageIsServedFromTheBinary) {
  start({});
  auto page = get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<title>tinybroker console</title>"),
            std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy")
                .find("default-src 'self'"),
            std::string::npos);
  for (auto* path : {"/console.js", "/charts.js", "/console.css"}) {
    auto res = get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_GT(res->body.size(), 1000u) << path;
  }
  // Nothing of the page comes from elsewhere.
  EXPECT_EQ(page->body.find("http://"), std::string::npos);
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(get("/console.js")->body.find("https://"), std::string::npos);
}

TEST_F(ConsoleTest, WithTheConsoleOffItsPathsAreNotFound) {
  start({}, false);
  for (auto* path : {"/", "/console.js", "/api/stats"}) {
    auto res = get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << path;
  }
  EXPECT_EQ(get("/metrics")->status, 200);
}

TEST_F(ConsoleTest, StatsJsonPassesTheFiltersOnAndCarriesTheReply) {
  start({});
  auto res = get("/api/stats?topic_pattern=orders.%3E&group_filter=wo&"
                 "session_filter=127.0&limit=7&actors=1");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(res->body.find("\"published\":\"42\""), std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("\"name\":\"work\""), std::string::npos);
  EXPECT_NE(res->body.find("\"groups_total\":{\"pending\":9,\"in_flight\":3}"),
            std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("\"console\":{\"auth\":false,\"actions\":false,"
                           "\"token\":\"\"}"),
            std::string::npos)
      << res->body;
  std::lock_guard<std::mutex> guard{fake.mutex};
  ASSERT_EQ(fake.requests.size(), 1u);
  auto& req = fake.requests[0];
  EXPECT_EQ(req.topic_pattern(), "orders.>");
  EXPECT_EQ(req.group_filter(), "wo");
  EXPECT_EQ(req.session_filter(), "127.0");
  EXPECT_EQ(req.limit(), 7u);
  EXPECT_TRUE(req.actors());
}

TEST_F(ConsoleTest, BadParametersAre400NamingThem) {
  start({});
  for (auto [query, named] : std::vector<std::pair<std::string, std::string>>{
           {"limit=abc", "limit \\\"abc\\\" is not a number"},
           {"limit=0", "limit \\\"0\\\""},
           {"limit=10001", "from 1 to 10000"},
           {"actors=maybe", "actors \\\"maybe\\\""},
           {"group_filter=" + std::string(1100, 'x'), "group_filter has"}}) {
    auto res = get("/api/stats?" + query);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << query;
    EXPECT_NE(res->body.find(named), std::string::npos) << res->body;
  }
  EXPECT_EQ(get("/api/nothing")->status, 404);
}

TEST_F(ConsoleTest, WithAuthOnOnlyAnAdminTokenSeesTheConsole) {
  fake.tokens = tb::token_table{two_tokens()};
  start({true, false});
  auto none = get("/api/stats");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(none->body.find("admin token"), std::string::npos) << none->body;
  EXPECT_EQ(get("/api/stats", "wrong")->status, 401);
  auto app = get("/api/stats", "app-secret");
  ASSERT_TRUE(app);
  EXPECT_EQ(app->status, 403);
  EXPECT_NE(app->body.find("token \\\"app\\\" may not use the console"),
            std::string::npos)
      << app->body;
  EXPECT_EQ(post("/api/groups/purge", "name=work", "app-secret")->status, 403);
  auto ops = get("/api/stats", "ops-secret");
  ASSERT_TRUE(ops);
  EXPECT_EQ(ops->status, 200);
  EXPECT_NE(ops->body.find("\"auth\":true,\"actions\":true,\"token\":\"ops\""),
            std::string::npos)
      << ops->body;
  std::lock_guard<std::mutex> guard{fake.mutex};
  EXPECT_EQ(fake.requests.size(), 1u) << "refused requests reach nothing";
  EXPECT_TRUE(fake.actions.empty());
}

TEST_F(ConsoleTest, WithoutAuthActionsAreOffUnlessAllowed) {
  start({false, false});
  auto res = post("/api/groups/purge", "name=work");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_NE(res->body.find("allow_actions is false"), std::string::npos)
      << res->body;
  std::lock_guard<std::mutex> guard{fake.mutex};
  EXPECT_TRUE(fake.actions.empty());
}

TEST_F(ConsoleTest, AnActionNeedsPostAndTheConsoleHeader) {
  start({false, true});
  auto no_header = post("/api/groups/delete", "name=work", "", false);
  ASSERT_TRUE(no_header);
  EXPECT_EQ(no_header->status, 403);
  EXPECT_NE(no_header->body.find("X-Tinybroker-Console"), std::string::npos);
  EXPECT_EQ(get("/api/groups/delete?name=work")->status, 405);
  auto unnamed = post("/api/groups/purge", "");
  EXPECT_EQ(unnamed->status, 400);
  EXPECT_NE(unnamed->body.find("needs a group name"), std::string::npos);
  httplib::Headers rebound{{"X-Tinybroker-Console", "1"},
                           {"Host", "evil.example:7401"}};
  auto dns = client().Post("/api/groups/purge", rebound, "name=work",
                           "application/x-www-form-urlencoded");
  ASSERT_TRUE(dns);
  EXPECT_EQ(dns->status, 403);
  EXPECT_NE(dns->body.find("evil.example"), std::string::npos) << dns->body;
  auto no_pattern = post("/api/groups/create", "name=new");
  EXPECT_EQ(no_pattern->status, 400);
  EXPECT_NE(no_pattern->body.find("needs a pattern"), std::string::npos);
  std::lock_guard<std::mutex> guard{fake.mutex};
  EXPECT_TRUE(fake.actions.empty());
}

TEST_F(ConsoleTest, AnAdminsActionRunsAndIsLoggedWithTheTokensName) {
  fake.tokens = tb::token_table{two_tokens()};
  start({true, false});
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  auto old = tb::log::set_writer([&](std::string_view line) {
    std::lock_guard<std::mutex> guard{lines_mutex};
    lines.emplace_back(line);
  });
  auto res = post("/api/groups/purge", "name=work", "ops-secret");
  auto created =
      post("/api/groups/create", "name=fresh&pattern=jobs.%3E", "ops-secret");
  fake.action_error =
      tb::make_error_info(tb::ec::unknown_group, "no group named \"gone\"");
  auto gone = post("/api/groups/delete", "name=gone", "ops-secret");
  tb::log::set_writer(old);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body,
            "{\"action\":\"purge\",\"group\":\"work\",\"messages\":5}\n");
  EXPECT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(gone->status, 404);
  EXPECT_NE(gone->body.find("no group named"), std::string::npos);
  {
    std::lock_guard<std::mutex> guard{fake.mutex};
    ASSERT_EQ(fake.actions.size(), 3u);
    EXPECT_EQ(fake.actions[0].kind, "purge");
    EXPECT_EQ(fake.actions[0].name, "work");
    EXPECT_EQ(fake.actions[1].kind, "create");
    EXPECT_EQ(fake.actions[1].pattern, "jobs.>");
  }
  std::lock_guard<std::mutex> guard{lines_mutex};
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("console action"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("action=purge"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("token=ops"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("messages=5"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("console action refused"), std::string::npos)
      << lines[2];
  EXPECT_NE(lines[2].find("token=ops"), std::string::npos) << lines[2];
}

} // namespace
