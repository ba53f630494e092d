// Consumer groups across nodes as real processes on loopback (issue 30
// points 3-4, docs/cluster.md "Groups across nodes" and "What a client sees
// when a group's node dies"): publisher, owner and members on different
// nodes; one message to exactly one member; acks, nacks and redelivery
// across nodes; a member's node killed (its deliveries go to the other
// member); the owner killed (every pending publish answered UNAVAILABLE,
// the members re-join and the group works on its next owner). A few
// seconds each.
//
// The owner of a group is the rendezvous (HRW) winner over the live nodes,
// computed here with the routers' own function (router_directory.hpp);
// where ListGroups names it (GroupInfo.owner_node, read through reflection),
// the test checks that it agrees.

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "actors/router/router_directory.hpp"
#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_fixture.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

/// How long these tests wait for something that should happen.
constexpr auto group_patience = 5000ms;

/// The test nodes' dead_after (cluster_fixture.cpp).
constexpr auto group_dead_after = 500ms;

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

TEST_F(ClusterGroupsTest, EachMessageGoesToExactlyOneMemberAcrossNodes) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "work.>");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto on_n1 = c1->open_session();
  auto on_n2 = c2->open_session();
  join(*on_n1, 1, g, "work.>");
  join(*on_n2, 1, g, "work.>");
  // Publisher on n1, owner n3, members on n1 and n2.
  constexpr int total = 100;
  publish_range(*c1, "work.items", 0, total);
  std::vector<pb::Delivery> a, b;
  auto deadline = std::chrono::steady_clock::now() + group_patience;
  while (a.size() + b.size() < size_t{total} &&
         std::chrono::steady_clock::now() < deadline) {
    for (auto& d : on_n1->receive(total, 50ms))
      a.push_back(d);
    for (auto& d : on_n2->receive(total, 50ms))
      b.push_back(d);
  }
  std::multiset<std::string> seen;
  for (auto& p : payloads(a))
    seen.insert(p);
  for (auto& p : payloads(b))
    seen.insert(p);
  ASSERT_EQ(seen.size(), size_t{total});
  for (int i = 0; i < total; ++i)
    EXPECT_EQ(seen.count(std::to_string(i)), 1u) << "message " << i;
  EXPECT_FALSE(a.empty()) << "round robin reaches the member on n1";
  EXPECT_FALSE(b.empty()) << "round robin reaches the member on n2";
  ASSERT_TRUE(on_n1->ack(ids(a)));
  ASSERT_TRUE(on_n2->ack(ids(b)));
  auto acked = 0ull;
  for (auto until = std::chrono::steady_clock::now() + group_patience;
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(20ms))
    if ((acked = group_info(n3, g).counters().acked()) == total)
      break;
  EXPECT_EQ(acked, uint64_t{total}) << "the owner n3 counts every ack";
  EXPECT_TRUE(on_n1->receive(1, 200ms).empty()) << "a duplicate";
  EXPECT_TRUE(on_n2->receive(1, 200ms).empty()) << "a duplicate";
}

TEST_F(ClusterGroupsTest, AcksNacksAndRedeliveryCrossNodes) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "jobs.>", 1000);
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto member = c2->open_session();
  join(*member, 7, g, "jobs.>");

  publish_range(*c1, "jobs.a", 0, 3);
  auto first = member->receive(3, group_patience);
  ASSERT_EQ(first.size(), 3u);
  std::map<std::string, pb::Delivery> by_payload;
  for (auto& d : first)
    by_payload[d.payload()] = d;
  ASSERT_TRUE(member->ack({by_payload["0"].delivery_id()}));
  ASSERT_TRUE(member->nack({by_payload["1"].delivery_id()}));
  // "1" comes back at once (attempt 2) and is acked; "2" stays unanswered
  // and comes back after ack_wait (1 s).
  auto nacked = member->receive(1, group_patience);
  ASSERT_EQ(nacked.size(), 1u);
  EXPECT_EQ(nacked[0].payload(), "1");
  EXPECT_EQ(nacked[0].attempt(), 2u);
  ASSERT_TRUE(member->ack(ids(nacked)));
  auto expired = member->receive(1, group_patience);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].payload(), "2");
  EXPECT_EQ(expired[0].attempt(), 2u);
  EXPECT_EQ(expired[0].subscription_id(), 7u);
  ASSERT_TRUE(member->ack(ids(expired)));
  auto info = group_info(n3, g);
  for (auto until = std::chrono::steady_clock::now() + group_patience;
       info.counters().acked() < 3 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(20ms))
    info = group_info(n3, g);
  EXPECT_EQ(info.counters().acked(), 3u);
  EXPECT_EQ(info.counters().in_flight(), 0u);
  EXPECT_TRUE(member->receive(1, 200ms).empty());
}

TEST_F(ClusterGroupsTest, AKilledMembersDeliveriesGoToTheOtherMember) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  auto g = group_owned_by(n3, "tasks.>");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto c3 = connect(n3);
  auto doomed = c1->open_session();
  auto survivor = c2->open_session();
  join(*doomed, 1, g, "tasks.>");
  join(*survivor, 1, g, "tasks.>");
  // Publisher on n3 (the owner), members on n1 and n2; n1 is killed with
  // its deliveries unanswered.
  constexpr int total = 20;
  publish_range(*c3, "tasks.t", 0, total);
  auto held = doomed->receive(total, 300ms);
  auto kept = survivor->receive(total, 300ms);
  ASSERT_EQ(held.size() + kept.size(), size_t{total});
  ASSERT_FALSE(held.empty());
  signal(n1, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  auto moved = survivor->receive(held.size(), group_patience);
  auto took = millis_since(killed);
  std::cout << "[ figure ] SIGKILL of a member's node: " << moved.size()
            << " deliveries redelivered to the member on n2 in " << took
            << " ms" << std::endl;
  ASSERT_EQ(moved.size(), held.size());
  std::set<std::string> all;
  for (auto& p : payloads(kept))
    all.insert(p);
  for (auto& p : payloads(moved))
    all.insert(p);
  EXPECT_EQ(all.size(), size_t{total}) << "0 lost";
  EXPECT_LT(took, 1000) << "redelivery at the member's down message";
}

TEST_F(ClusterGroupsTest, AKilledOwnerAnswersPendingPublishesAndMembersRejoin) {
  start_three();
  auto& n1 = *nodes[0];
  auto& n2 = *nodes[1];
  auto& n3 = *nodes[2];
  // Owned by n3; once n3 is gone, by n2.
  auto g = group_owned_by(n3, "orders.>", 30000, "n2");
  ASSERT_FALSE(g.empty());
  auto c1 = connect(n1);
  auto c2 = connect(n2);
  auto member1 = c1->open_session();
  auto member2 = c2->open_session();
  join(*member1, 3, g, "orders.>");
  join(*member2, 4, g, "orders.>");
  // A first publish (the publisher's session learns the group's name, for
  // its errors); then the owner hangs: publishes on n1 wait for it; then it
  // dies.
  auto publisher = c1->open_session();
  ASSERT_TRUE(publisher->publish({{"orders.x", "first", {}, {}}}, true, 99));
  ASSERT_TRUE(
      publisher->wait_for(pb::ServerFrame::kPublishConfirm, group_patience)
          .has_value());
  for (auto* m : {member1.get(), member2.get()})
    for (auto& d : m->receive(1, 100ms))
      m->ack({d.delivery_id()});
  signal(n3, SIGSTOP);
  constexpr int frames = 5;
  for (int i = 0; i < frames; ++i)
    ASSERT_TRUE(publisher->publish(
        {{"orders.x", "p" + std::to_string(i), {}, {}}}, true, 100 + i));
  EXPECT_FALSE(publisher->next(100ms).has_value())
      << "the hung owner cannot have answered";
  signal(n3, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  int answered = 0;
  long long last = 0;
  while (answered < frames) {
    auto frame =
        publisher->wait_for(pb::ServerFrame::kPublishConfirm, group_patience);
    ASSERT_TRUE(frame.has_value())
        << answered << " of " << frames << " pending publishes answered";
    last = millis_since(killed);
    auto& results = frame->publish_confirm().results();
    ASSERT_EQ(results.size(), 1);
    EXPECT_EQ(results[0].error().code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(results[0].error().reason(), "node_unavailable");
    EXPECT_NE(results[0].error().message().find("group \"" + g + "\""),
              std::string::npos)
        << results[0].error().message();
    ++answered;
  }
  std::cout << "[ figure ] SIGKILL of the owner: " << frames
            << " pending publishes answered UNAVAILABLE within " << last
            << " ms (dead_after " << group_dead_after.count() << " ms)"
            << std::endl;
  EXPECT_LE(last, (group_dead_after + 100ms).count());
  // The members re-join by themselves; the group works on its next owner
  // (n2) once a member re-created it there: until then a publish routes
  // nowhere.
  auto rejoin_started = std::chrono::steady_clock::now();
  bool probed = false;
  for (int k = 0; !probed && millis_since(rejoin_started) < 5000; ++k) {
    publish_range(*c1, "orders.probe", k, k + 1);
    for (auto* m : {member1.get(), member2.get()})
      for (auto& d : m->receive(1, 20ms)) {
        probed = true;
        m->ack({d.delivery_id()});
      }
  }
  ASSERT_TRUE(probed) << "the group did not work again on its next owner";
  std::cout << "[ figure ] SIGKILL of the owner: the group works again on "
            << "its next owner " << millis_since(killed) << " ms after"
            << std::endl;
  auto listed = owner_of(n1, g);
  EXPECT_TRUE(listed.empty() || listed == "n2") << listed;
  const std::string owner = "n2";
  publish_range(*c1, "orders.y", 1000, 1010);
  std::set<std::string> got;
  auto deadline = std::chrono::steady_clock::now() + group_patience;
  while (got.size() < 10 && std::chrono::steady_clock::now() < deadline) {
    for (auto& d : member1->receive(10, 50ms)) {
      if (d.topic() == "orders.y")
        got.insert(d.payload());
      EXPECT_EQ(d.subscription_id(), 3u);
    }
    for (auto& d : member2->receive(10, 50ms)) {
      if (d.topic() == "orders.y")
        got.insert(d.payload());
      EXPECT_EQ(d.subscription_id(), 4u);
    }
  }
  EXPECT_EQ(got.size(), 10u) << "the group works again on " << owner;
  if (got.size() != 10u)
    std::cout << "n2 lists " << group_info(n2, g).ShortDebugString()
              << "\nn1 lists " << group_info(n1, g).ShortDebugString()
              << std::endl;
  if (got.size() != 10u && getenv("TB_TEST_DUMP_LOGS") != nullptr)
    for (auto& n : nodes)
      if (n->process)
        std::cout << "==== " << n->name << "\n"
                  << n->process->output() << std::endl;
  EXPECT_FALSE(
      member1->wait_for(pb::ServerFrame::kUnsubscribed, 10ms).has_value());
  EXPECT_FALSE(
      member2->wait_for(pb::ServerFrame::kUnsubscribed, 10ms).has_value());
  // ClusterStats counts each node's lost membership and its re-join.
  for (auto* n : {&n1, &n2}) {
    auto c = stats(*n);
    EXPECT_EQ(c.memberships_lost(), 1u) << n->name;
    EXPECT_EQ(c.memberships_rejoined(), 1u) << n->name;
    EXPECT_EQ(c.memberships_ended(), 0u) << n->name;
  }
}

} // namespace
} // namespace tb::test
