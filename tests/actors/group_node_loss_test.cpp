// Tests of a session whose group lives on a node that is lost (cluster,
// issue 30 points 3-4; docs/cluster.md, "What a client sees when a group's
// node dies"): what waits on the group is answered at its down message and
// the bounded timeout ends what the down did not (point 1: publishes and
// requests). Memberships re-joining by themselves (point 2) are in
// group_node_loss_rejoin_test.cpp; how a lost node is simulated is in
// group_node_loss_fixture.hpp.

#include <memory>
#include <string>
#include <vector>

#include <caf/exit_reason.hpp>

#include "tests/actors/group_node_loss_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

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

} // namespace
} // namespace tb::test
