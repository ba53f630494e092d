// The fixture of the tests of consumer groups across nodes as real
// processes on loopback (tests/cluster/cluster_groups_test.cpp,
// cluster_groups_kill_test.cpp): the admin calls on a node, a group created
// with a chosen owner, joins, publishes and what a member received.
//
// The owner of a group is the rendezvous (HRW) winner over the live nodes,
// computed here with the routers' own function (router_directory.hpp);
// where ListGroups names it (GroupInfo.owner_node, read through reflection),
// the test checks that it agrees.

#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "actors/router/router_directory.hpp"
#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_fixture.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

/// How long these tests wait for something that should happen.
inline constexpr auto group_patience = 5000ms;

/// The test nodes' dead_after (cluster_fixture.cpp).
inline constexpr auto group_dead_after = 500ms;

/// Three nodes of one cluster, and the admin calls, joins and publishes
/// that the groups tests make through them.
class ClusterGroupsTest : public ClusterFixture {
protected:
  /// Returns a stub for the admin calls on node `n`.
  static std::unique_ptr<pb::Broker::Stub> stub(const cluster_node& n) {
    return pb::Broker::NewStub(client::make_channel(n.process->address()));
  }

  /// Creates group `name` on `pattern` through node `n`.
  static grpc::Status create_group(const cluster_node& n,
                                   const std::string& name,
                                   const std::string& pattern,
                                   uint32_t ack_wait_ms = 30000) {
    pb::CreateGroupRequest req;
    req.set_name(name);
    req.mutable_settings()->set_pattern(pattern);
    req.mutable_settings()->set_ack_wait_ms(ack_wait_ms);
    pb::GroupInfo info;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + group_patience);
    return stub(n)->CreateGroup(&ctx, req, &info);
  }

  /// Returns group `name` as node `n` lists it (empty name if it does not).
  static pb::GroupInfo group_info(const cluster_node& n,
                                  const std::string& name) {
    pb::ListGroupsReply reply;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + group_patience);
    auto status = stub(n)->ListGroups(&ctx, pb::ListGroupsRequest{}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (auto& g : reply.groups())
      if (g.name() == name)
        return g;
    return {};
  }

  /// Returns the owner node of group `name` as node `n` lists it ("" if it
  /// does not, or without GroupInfo.owner_node).
  static std::string owner_of(const cluster_node& n, const std::string& name) {
    auto info = group_info(n, name);
    auto* field = info.GetDescriptor()->FindFieldByName("owner_node");
    if (field == nullptr || info.name().empty())
      return {};
    return info.GetReflection()->GetString(info, field);
  }

  /// Returns the HRW owner of group `name` among the nodes called `live`.
  static std::string hrw_winner(const std::vector<std::string>& live,
                                const std::string& name) {
    auto best = live.front();
    for (auto& node : live)
      if (hrw_beats(node, best, name))
        best = node;
    return best;
  }

  /// Creates, through n1, a group on `pattern` whose owner is node `owner`
  /// and whose next owner, once `owner` is gone, is `next`; returns its
  /// name.
  std::string group_owned_by(const cluster_node& owner,
                             const std::string& pattern,
                             uint32_t ack_wait_ms = 30000,
                             const std::string& next = {}) {
    std::vector<std::string> all, rest;
    for (auto& n : nodes) {
      all.push_back(n->name);
      if (n->name != owner.name)
        rest.push_back(n->name);
    }
    for (int i = 0; i < 1000; ++i) {
      auto name = pattern.substr(0, pattern.find('.')) + std::to_string(i);
      if (hrw_winner(all, name) != owner.name ||
          (!next.empty() && hrw_winner(rest, name) != next))
        continue;
      auto status = create_group(*nodes[0], name, pattern, ack_wait_ms);
      EXPECT_TRUE(status.ok()) << status.error_message();
      auto listed = owner_of(*nodes[0], name);
      EXPECT_TRUE(listed.empty() || listed == owner.name) << listed;
      return name;
    }
    ADD_FAILURE() << "no group name owned by " << owner.name;
    return {};
  }

  /// Joins `group` on `pattern` as subscription `id` on `s` and waits for
  /// its Subscribed.
  static void join(client::session& s, uint64_t id, const std::string& group,
                   const std::string& pattern, uint32_t max_in_flight = 0) {
    ASSERT_TRUE(s.join(id, group, pattern, max_in_flight));
    std::vector<pb::ServerFrame> skipped;
    auto frame =
        s.wait_for(pb::ServerFrame::kSubscribed, group_patience, &skipped);
    std::string others;
    for (auto& x : skipped)
      others += x.ShortDebugString() + "\n";
    ASSERT_TRUE(frame.has_value()) << "no Subscribed for " << group << "\n"
                                   << others;
    ASSERT_EQ(frame->subscribed().subscription_id(), id);
  }

  /// Publishes messages `first`..`last-1` to `topic` with the unary call;
  /// expects each one accepted.
  static void publish_range(client::connection& conn, const std::string& topic,
                            int first, int last) {
    std::vector<client::outgoing_message> batch;
    for (int i = first; i < last; ++i)
      batch.push_back({topic, std::to_string(i), {}, {}});
    std::vector<pb::PublishResult> results;
    auto status = conn.publish(batch, &results);
    ASSERT_TRUE(status.ok()) << status.error_message();
    for (auto& r : results)
      ASSERT_FALSE(r.has_error()) << r.error().message();
  }

  /// Returns the payloads of `deliveries`.
  static std::vector<std::string>
  payloads(const std::vector<pb::Delivery>& deliveries) {
    std::vector<std::string> result;
    for (auto& d : deliveries)
      result.push_back(d.payload());
    return result;
  }

  /// Returns the delivery ids of `deliveries`.
  static std::vector<uint64_t> ids(const std::vector<pb::Delivery>& xs) {
    std::vector<uint64_t> result;
    for (auto& d : xs)
      result.push_back(d.delivery_id());
    return result;
  }
};

} // namespace tb::test
