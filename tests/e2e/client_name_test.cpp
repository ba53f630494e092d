// End to end: a client's chosen name (metadata `tinybroker-client-name`, as
// NATS's `name` and RabbitMQ's `connection_name`) in Stats for sessions and
// group members and in the session's log lines; a bad name ends the stream
// with INVALID_ARGUMENT naming the problem.

#include <algorithm>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "client/check.hpp"
#include "group_admin_fixture.hpp"

namespace tb::test {
namespace {

class ClientNameTest : public GroupAdminTest {
protected:
  /// Returns the broker's Stats.
  pb::StatsReply stats() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::StatsReply reply;
    auto status = conn_->stub().Stats(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return reply;
  }

  /// Opens a raw Session stream with `value` as its name's metadata, closes
  /// its sending side and returns how the broker ended it.
  grpc::Status session_named(const std::string& value) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    ctx.AddMetadata("tinybroker-client-name", value);
    auto stream = conn_->stub().Session(&ctx);
    stream->WritesDone();
    pb::ServerFrame ignored;
    while (stream->Read(&ignored)) {
    }
    return stream->Finish();
  }

  /// Returns the sessions of `reply` named `name`.
  static std::vector<pb::SessionStats>
  sessions_named(const pb::StatsReply& reply, const std::string& name) {
    std::vector<pb::SessionStats> result;
    std::copy_if(reply.sessions().begin(), reply.sessions().end(),
                 std::back_inserter(result),
                 [&](auto& s) { return s.client_name() == name; });
    return result;
  }
};

TEST_F(ClientNameTest, SessionsAndMembersShowTheNameTheirClientChose) {
  client::connection named{broker_->address(), {}, "billing-worker"};
  ASSERT_TRUE(named.wait_connected(patience));
  auto first = named.open_session();
  ASSERT_TRUE(first->join(1, "jobs", "jobs.>"));
  ASSERT_TRUE(first->wait_for(pb::ServerFrame::kSubscribed, patience));
  // On the same channel, a stream named on its own: one name per worker.
  auto second = named.open_session("billing-worker-2 ✓");
  ASSERT_TRUE(second->join(1, "jobs", "jobs.>"));
  ASSERT_TRUE(second->wait_for(pb::ServerFrame::kSubscribed, patience));
  auto unnamed = subscriber(1, "news.>");
  auto reply = stats();
  EXPECT_EQ(sessions_named(reply, "billing-worker").size(), 1u);
  EXPECT_EQ(sessions_named(reply, "billing-worker-2 ✓").size(), 1u);
  EXPECT_EQ(sessions_named(reply, "").size(), 1u) << "no name: empty";
  ASSERT_EQ(reply.groups_size(), 1);
  auto& members = reply.groups(0).members();
  ASSERT_EQ(members.size(), 2);
  std::vector<std::string> names{members[0].client_name(),
                                 members[1].client_name()};
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"billing-worker", "billing-worker-2 ✓"}));
  EXPECT_EQ(members[0].token(), "") << "auth is off";
}

TEST_F(ClientNameTest, TheSessionsLogLinesNameIt) {
  {
    client::connection named{broker_->address(), {}, "audit-7"};
    auto s = named.open_session();
    subscribe(*s, 1, "audit.>");
    EXPECT_TRUE(s->close().ok());
  }
  ASSERT_TRUE(broker_->wait_for_output("session closed", patience))
      << broker_->output();
  auto out = broker_->output();
  EXPECT_NE(out.find("session opened peer=ipv4:127.0.0.1:"), std::string::npos)
      << out;
  auto opened = out.find("session opened");
  auto opened_line = out.substr(opened, out.find('\n', opened) - opened);
  EXPECT_NE(opened_line.find(" name=audit-7"), std::string::npos)
      << opened_line;
  auto closed = out.find("session closed");
  auto closed_line = out.substr(closed, out.find('\n', closed) - closed);
  EXPECT_NE(closed_line.find(" name=audit-7 "), std::string::npos)
      << closed_line;
}

TEST_F(ClientNameTest, ABadNameEndsTheStreamWithInvalidArgumentSayingWhy) {
  auto control = session_named("bad%0Aname");
  EXPECT_EQ(control.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(control.error_message().find("tinybroker-client-name"),
            std::string::npos)
      << control.error_message();
  EXPECT_NE(control.error_message().find("control character"),
            std::string::npos)
      << control.error_message();
  auto long_name = session_named(std::string(129, 'x'));
  EXPECT_EQ(long_name.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(long_name.error_message().find("129 bytes; at most 128"),
            std::string::npos)
      << long_name.error_message();
  auto not_utf8 = session_named("caf%C3");
  EXPECT_EQ(not_utf8.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(not_utf8.error_message().find("not UTF-8"), std::string::npos)
      << not_utf8.error_message();
  // 128 bytes is fine, and the broker goes on serving.
  auto s = conn_->open_session(std::string(128, 'y'));
  subscribe(*s, 1, "fine.>");
  EXPECT_EQ(sessions_named(stats(), std::string(128, 'y')).size(), 1u);
}

TEST_F(ClientNameTest, TheClientRefusesABadNameBeforeConnecting) {
  EXPECT_THROW(client::connection(broker_->address(), {}, "tab\there"),
               client::invalid_request);
  EXPECT_THROW(conn_->open_session(std::string(200, 'z')),
               client::invalid_request);
}

} // namespace
} // namespace tb::test
