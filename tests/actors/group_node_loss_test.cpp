// Tests of a session whose group lives on a node that is lost (cluster,
// issue 30 points 3-4; docs/cluster.md, "What a client sees when a group's
// node dies"): what waits on the group is answered at its down message, the
// bounded timeout ends what the down did not, and memberships re-join by
// themselves.
//
// A test coordinator has one node, so a lost node is simulated: the sessions
// treat local groups as remote (`group_watch::local_as_remote`) and a test
// kills a group with `remote_link_unreachable`, the exit reason CAF 0.17
// gives the proxies of a lost node's actors. A remote request whose node
// dies is never answered; a stand-in group that holds every enqueue and
// request without answering plays that part.

#include <string>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// State of a stand-in group that never answers enqueues or requests.
struct silent_group_state {
  /// The actor's name in logs.
  static inline const char* name = "test.silent_group";
  /// Enqueues held without an answer.
  std::vector<caf::typed_response_promise<enqueue_reply>> enqueues;
  /// Requests held without an answer.
  std::vector<caf::typed_response_promise<caf::ok_atom>> requests;
  /// Stats queries held without an answer (a group that never tells its
  /// name before its node dies).
  std::vector<caf::typed_response_promise<group_info>> stats;
};

/// A group named `group_name` that takes joins but holds every enqueue and
/// request unanswered, as a remote group whose node died does; it tells its
/// name if `tells_name`, else holds that query too.
group_actor::behavior_type
silent_group(group_actor::stateful_pointer<silent_group_state> self,
             std::string group_name, bool tells_name) {
  return {
      [self](enqueue_atom, std::vector<message_ref>&) {
        auto promise = self->make_response_promise<enqueue_reply>();
        self->state.enqueues.push_back(promise);
        return promise;
      },
      [](join_atom, session_actor&, member_spec&) { return caf::ok_atom_v; },
      [](leave_atom, session_actor&, uint64_t) {},
      [](ack_atom, session_actor&, std::vector<uint64_t>&) {},
      [](nack_atom, session_actor&, std::vector<uint64_t>&, uint32_t) {},
      [](reject_atom, session_actor&, std::vector<uint64_t>&) {},
      [](progress_atom, session_actor&, std::vector<uint64_t>&) {},
      [](tick_atom) {},
      [self, group_name, tells_name](stats_atom) {
        auto promise = self->make_response_promise<group_info>();
        if (tells_name) {
          group_info info;
          info.name = group_name;
          promise.deliver(std::move(info));
        } else {
          self->state.stats.push_back(promise);
        }
        return promise;
      },
      [](delete_atom) { return uint64_t{0}; },
      [](delete_atom, replaced_atom) { return uint64_t{0}; },
      [](purge_atom) { return uint64_t{0}; },
      [](log_tick_atom) {},
      [self](request_atom, message_ref&, reply_target&) {
        auto promise = self->make_response_promise<caf::ok_atom>();
        self->state.requests.push_back(promise);
        return promise;
      },
      [](replica_atom, const replica_actor&, uint64_t) {},
      [](rack_atom, uint64_t) {},
  };
}

/// Sessions that treat groups as remote, and a stand-in group.
class GroupNodeLoss : public group_test {
protected:
  ~GroupNodeLoss() override {
    if (silent && !terminated(silent))
      self->send_exit(silent, caf::exit_reason::user_shutdown);
  }

  /// Spawns a session that treats every group as remote.
  test_session remote_session() {
    auto s = spawn_session();
    deref<session_state>(s.hdl).watch.local_as_remote = true;
    return s;
  }

  /// Spawns the stand-in group `name` and routes `pattern` to it: the
  /// router finds and joins it by name, and each topic shard adds it to
  /// the routes of the matching topics (`topic` is created first).
  void install_silent(const std::string& name, const std::string& pattern,
                      const test_session& publisher, const std::string& topic,
                      bool tells_name = true) {
    silent = sys.spawn(silent_group, name, tells_name);
    auto settings = group_settings(pattern);
    router_group entry;
    entry.handle = silent;
    entry.settings = settings;
    deref<router_state>(router).groups.emplace(name, std::move(entry));
    publish(publisher, topic, 1, "warmup"); // creates the topic, caches it
    for (auto& shard : deref<router_state>(router).shards)
      query<caf::ok_atom>(shard, add_group_atom_v, pattern, silent, uint64_t{0},
                          group_actor{});
    run();
  }

  /// Kills `group` as a lost node kills its proxies, and runs.
  template <class Handle>
  void lose_node_of(const Handle& group) {
    self->send_exit(group, caf::exit_reason::remote_link_unreachable);
    run();
  }

  /// Sends `caller`'s request 21 to the group "g" on "svc.1" and checks
  /// that the stand-in group holds it.
  void send_group_request(const test_session& caller) {
    auto frame = std::make_shared<pb::ClientFrame>();
    frame->set_request_id(21);
    *frame->mutable_request()->mutable_message() =
        make_message("svc.1", "ping");
    frame->mutable_request()->set_timeout_ms(30000);
    frame->mutable_request()->set_group("g");
    send_frame(caller, frame);
    run();
    ASSERT_EQ(silent ? deref<silent_group_state>(silent).requests.size() : 0u,
              1u);
  }

  /// Returns the publish confirms `s` wrote.
  static std::vector<pb::PublishConfirm> confirms(const test_session& s) {
    std::vector<pb::PublishConfirm> result;
    for (auto& frame : s.sink->of_kind(kind::kPublishConfirm))
      result.push_back(frame.publish_confirm());
    return result;
  }

  group_actor silent;
};

// -- pending publishes and requests (point 1) ---------------------------------

TEST_F(GroupNodeLoss, PendingPublishIsRefusedAtTheDownNamingTheGroup) {
  auto pub = remote_session();
  install_silent("g", "orders.>", pub, "orders.1");
  auto before = confirms(pub).size();
  send_frame(pub, publish_frame(7, "orders.1", 2));
  send_frame(pub, publish_frame(8, "orders.1", 1));
  run();
  ASSERT_EQ(confirms(pub).size(), before) << "the group holds them unanswered";
  EXPECT_EQ(deref<session_state>(pub.hdl).watch.watched(), 1u)
      << "one watch per handle, not per message";
  EXPECT_EQ(deref<session_state>(pub.hdl).watch.waiting(), 2u);
  lose_node_of(silent);
  auto all = confirms(pub);
  ASSERT_EQ(all.size(), before + 2);
  for (auto i = before; i < all.size(); ++i)
    for (auto& result : all[i].results()) {
      EXPECT_NE(result.id(), 0u);
      EXPECT_EQ(result.error().code(), 14); // UNAVAILABLE
      EXPECT_EQ(result.error().reason(), "node_unavailable");
      EXPECT_NE(
          result.error().message().find(
              "group \"g\": its owner node is gone and this was not taken"),
          std::string::npos)
          << result.error().message();
    }
  EXPECT_EQ(all[before].request_id(), 7u);
  EXPECT_EQ(all[before + 1].request_id(), 8u);
  EXPECT_EQ(deref<session_state>(pub.hdl).watch.waiting(), 0u);
  // The handlers end with their timeout; nothing is answered twice.
  advance(group_watch::reply_timeout + 1s);
  EXPECT_EQ(confirms(pub).size(), before + 2);
}

TEST_F(GroupNodeLoss, PendingPublishIsRefusedWhenItsGroupStopsWithItsNode) {
  // SIGTERM on the owner's node ends its groups `user_shutdown` while the
  // connection still carries the down message: the node is going, as when
  // lost (only a deleted group ends normally).
  auto pub = remote_session();
  install_silent("g", "orders.>", pub, "orders.1");
  auto before = confirms(pub).size();
  send_frame(pub, publish_frame(7, "orders.1", 2));
  run();
  ASSERT_EQ(confirms(pub).size(), before);
  self->send_exit(silent, caf::exit_reason::user_shutdown);
  run();
  auto all = confirms(pub);
  ASSERT_EQ(all.size(), before + 1);
  for (auto& result : all[before].results()) {
    EXPECT_EQ(result.error().code(), 14); // UNAVAILABLE
    EXPECT_NE(result.error().message().find("its owner node is gone"),
              std::string::npos)
        << result.error().message();
  }
}

TEST_F(GroupNodeLoss, ABatchAGroupBouncedIsRefusedNotConfirmed) {
  // A group that ended (deleted, its node stopping, dropped for a newer
  // owner) bounces what its route still sent it: refused, not confirmed
  // into nothing, as the group may live on elsewhere.
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  self->send_exit(silent, caf::exit_reason::user_shutdown);
  run();
  auto before = confirms(pub).size();
  send_frame(pub, publish_frame(9, "orders.1", 2));
  run();
  auto all = confirms(pub);
  ASSERT_EQ(all.size(), before + 1);
  ASSERT_EQ(all[before].results_size(), 2);
  for (auto& result : all[before].results()) {
    EXPECT_EQ(result.error().code(), 14); // UNAVAILABLE
    EXPECT_EQ(result.error().reason(), "node_unavailable");
    EXPECT_NE(result.error().message().find(
                  "it ended before it took this (deleted, its node "
                  "stopping, or replaced by a new owner); retry"),
              std::string::npos)
        << result.error().message();
  }
}

TEST_F(GroupNodeLoss, OnlyTheLostGroupsPositionsAreRefused) {
  auto pub = remote_session();
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  install_silent("g", "orders.eu.>", pub, "orders.eu.1");
  auto before = confirms(pub).size();
  send_frame(pub, publish_frame(9, {make_message("orders.us.1", "a"),
                                    make_message("orders.eu.1", "b"),
                                    make_message("orders.us.2", "c")}));
  run();
  lose_node_of(silent);
  auto all = confirms(pub);
  ASSERT_EQ(all.size(), before + 1);
  auto& results = all.back().results();
  ASSERT_EQ(results.size(), 3);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_EQ(results[1].error().reason(), "node_unavailable");
  EXPECT_FALSE(results[2].has_error());
}

TEST_F(GroupNodeLoss, PublishToASilentGroupIsAnsweredAtTheTimeout) {
  auto pub = remote_session();
  install_silent("g", "orders.>", pub, "orders.1");
  auto before = confirms(pub).size();
  send_frame(pub, publish_frame(7, "orders.1", 1));
  run();
  advance(group_watch::reply_timeout - 1ms);
  EXPECT_EQ(confirms(pub).size(), before);
  advance(2ms);
  auto all = confirms(pub);
  ASSERT_EQ(all.size(), before + 1);
  EXPECT_EQ(all.back().results(0).error().reason(), "node_unavailable");
  EXPECT_NE(all.back().results(0).error().message().find(
                "group \"g\": its owner node did not answer within 5 s"),
            std::string::npos);
  EXPECT_EQ(deref<session_state>(pub.hdl).watch.waiting(), 0u);
}

TEST_F(GroupNodeLoss, ClosingSessionEndsOnceThePendingPublishIsAnswered) {
  auto pub = remote_session();
  install_silent("g", "orders.>", pub, "orders.1");
  // The stream session's pending publish answers the same way as a unary
  // call's (one path: finish_publish); a closing session waits for it and
  // then ends.
  send_frame(pub, publish_frame(7, "orders.1", 1));
  run();
  self->send(pub.hdl, closed_atom_v);
  run();
  EXPECT_FALSE(pub.sink->finished) << "a publish is still routed";
  lose_node_of(silent);
  EXPECT_TRUE(pub.sink->finished);
}

TEST_F(GroupNodeLoss, GroupRequestFailsAtTheDownAndTheSessionReadsOn) {
  auto caller = remote_session();
  install_silent("g", "svc.>", caller, "svc.1");
  send_group_request(caller);
  // The session reads on while the group holds the request.
  auto before = confirms(caller).size();
  publish(caller, "other.1");
  EXPECT_EQ(confirms(caller).size(), before + 1);
  lose_node_of(silent);
  auto errors = caller.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().request_id(), 21u);
  EXPECT_EQ(errors[0].error().request(), "request");
  EXPECT_EQ(errors[0].error().error().reason(), "node_unavailable");
  EXPECT_NE(errors[0].error().error().message().find("group \"g\""),
            std::string::npos);
}

TEST_F(GroupNodeLoss, GroupRequestNamesItsGroupEvenIfTheGroupNeverToldIt) {
  // The caller named the group: its error says which, even if the node
  // died before the group answered the query for its name.
  auto caller = remote_session();
  install_silent("g", "svc.>", caller, "svc.1", false);
  send_group_request(caller);
  lose_node_of(silent);
  auto errors = caller.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().error().reason(), "node_unavailable");
  EXPECT_NE(errors[0].error().error().message().find("group \"g\""),
            std::string::npos)
      << errors[0].error().error().message();
}

// -- memberships (point 2) ----------------------------------------------------

TEST_F(GroupNodeLoss, MemberRejoinsTheGroupOnItsNextOwnerKeepingItsId) {
  auto member = remote_session();
  auto pub = spawn_session();
  join(member, 5, "g", "orders.>");
  publish(pub, "orders.1", 1, "before");
  auto first = member.sink->deliveries();
  ASSERT_EQ(first.size(), 1u);
  auto lost = group("g");
  lose_node_of(lost);
  pass(200ms); // the router may still name the lost group: backoff
  auto next = group("g");
  ASSERT_TRUE(next) << "the re-join created the group on its next owner";
  EXPECT_NE(next, lost);
  publish(pub, "orders.2", 1, "after");
  auto all = member.sink->deliveries();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].payload(), "after0");
  EXPECT_EQ(all[1].subscription_id(), 5u);
  EXPECT_TRUE(member.sink->of_kind(kind::kUnsubscribed).empty());
  // The answer to the lost group's delivery goes nowhere; the new one acks.
  ack(member, {first[0].delivery_id(), all[1].delivery_id()});
  EXPECT_EQ(counters("g").acked, 1u);
  EXPECT_EQ(counters("g").in_flight, 0u);
  // ClusterStats counts the lost membership and its re-join.
  auto& rejoins = *deref<session_state>(member.hdl).ctx.rejoins;
  EXPECT_EQ(rejoins.lost(), 1u);
  EXPECT_EQ(rejoins.rejoined(), 1u);
  EXPECT_EQ(rejoins.ended(), 0u);
}

TEST_F(GroupNodeLoss, RejoinBacksOffWhileTheRouterStillNamesTheLostGroup) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  ASSERT_EQ(member.sink->of_kind(kind::kSubscribed).size(), 1u);
  // The router does not drop the lost group (its peer_down is late): every
  // attempt fails until it does.
  lose_node_of(silent);
  pass(500ms);
  EXPECT_EQ(group("g"), silent) << "no group created yet";
  deref<router_state>(router).groups.erase("g"); // the router's peer_down
  pass(1s + 10ms);                               // at most the largest backoff
  ASSERT_TRUE(group("g"));
  publish(pub, "orders.2", 1, "after");
  auto all = member.sink->deliveries();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].payload(), "after0");
  EXPECT_EQ(all[0].subscription_id(), 5u);
}

TEST_F(GroupNodeLoss, RejoiningGivesUpAfterThirtySecondsWithUnsubscribed) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  lose_node_of(silent);
  pass(29s, 100ms);
  EXPECT_TRUE(member.sink->of_kind(kind::kUnsubscribed).empty());
  pass(2s, 100ms);
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().subscription_id(), 5u);
  EXPECT_NE(ended[0].unsubscribed().reason().find(
                "group \"g\": its owner node is gone and re-joining it "
                "failed: no live owner within 30000 ms"),
            std::string::npos)
      << ended[0].unsubscribed().reason();
  EXPECT_TRUE(deref<session_state>(member.hdl).memberships.empty());
  // ClusterStats counts the lost membership and its end.
  auto& rejoins = *deref<session_state>(member.hdl).ctx.rejoins;
  EXPECT_EQ(rejoins.lost(), 1u);
  EXPECT_EQ(rejoins.rejoined(), 0u);
  EXPECT_EQ(rejoins.ended(), 1u);
}

TEST_F(GroupNodeLoss, UnsubscribeWhileRejoiningEndsIt) {
  auto member = remote_session();
  auto pub = spawn_session();
  install_silent("g", "orders.>", pub, "orders.1");
  join(member, 5, "g", "orders.>");
  lose_node_of(silent);
  pass(100ms);
  send_frame(member, unsubscribe_frame(next_request_id(), 5));
  run();
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().reason(), "");
  deref<router_state>(router).groups.erase("g");
  pass(2s, 100ms);
  EXPECT_FALSE(group("g")) << "no attempt after the unsubscribe";
}

TEST_F(GroupNodeLoss, DeletedGroupKeepsTodaysBehaviourAndIsNotRejoined) {
  auto member = remote_session();
  join(member, 5, "g", "orders.>");
  EXPECT_EQ(query<uint64_t>(router, delete_atom_v, std::string{"g"}), 0u);
  pass(2s, 100ms);
  auto ended = member.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].unsubscribed().reason(), "the group \"g\" was deleted");
  EXPECT_FALSE(group("g"));
}

} // namespace
} // namespace tb::test
