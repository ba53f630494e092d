// The fixture of the end-to-end group administration tests: a broker and
// helpers for CreateGroup, DeleteGroup, ListGroups and joining.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {

namespace pb = tinybroker::v1;

/// Consumer groups through the admin calls.
class GroupAdminTest : public BrokerTest {
protected:
  /// Calls CreateGroup for `name` with `settings`; fills `reply` if given.
  grpc::Status create_group(const std::string& name,
                            const pb::GroupSettings& settings,
                            pb::GroupInfo* reply = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::CreateGroupRequest req;
    req.set_name(name);
    *req.mutable_settings() = settings;
    pb::GroupInfo ignored;
    return conn_->stub().CreateGroup(&ctx, req, reply ? reply : &ignored);
  }

  /// Calls DeleteGroup for `name`; fills `reply`.
  grpc::Status delete_group(const std::string& name,
                            pb::DeleteGroupReply& reply) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::DeleteGroupRequest req;
    req.set_name(name);
    return conn_->stub().DeleteGroup(&ctx, req, &reply);
  }

  /// Returns the groups ListGroups shows.
  std::vector<pb::GroupInfo> list_groups() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::ListGroupsReply reply;
    auto status = conn_->stub().ListGroups(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {reply.groups().begin(), reply.groups().end()};
  }

  /// Returns group `name` as ListGroups shows it, if listed.
  std::optional<pb::GroupInfo> find_group(const std::string& name) {
    for (auto& group : list_groups())
      if (group.name() == name)
        return group;
    return std::nullopt;
  }

  /// Opens a session that joins `group` on `pattern` as subscription 1 and
  /// waits for the Subscribed frame.
  std::unique_ptr<client::session> worker(const std::string& group,
                                          const std::string& pattern,
                                          uint32_t max_in_flight = 0) {
    auto session = conn_->open_session();
    EXPECT_TRUE(session->join(1, group, pattern, max_in_flight));
    auto frame = session->wait_for(pb::ServerFrame::kSubscribed, patience);
    EXPECT_TRUE(frame.has_value()) << "no Subscribed frame for " << group;
    return session;
  }
};

/// Returns group settings with just a pattern.
inline pb::GroupSettings on(const std::string& pattern) {
  pb::GroupSettings settings;
  settings.set_pattern(pattern);
  return settings;
}

} // namespace tb::test
