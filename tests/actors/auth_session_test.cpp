// Token permissions in the session actor (spec 10): forbidden publishes,
// subscribes and joins are refused one by one, reach nobody, and leave the
// stream open; a reload that narrows a token ends what it no longer allows.

#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

constexpr int permission_denied_code = 7;

/// A token that may publish and subscribe under `orders.eu` and join only
/// the group `billing`.
tb::access_grant orders_grant() {
  tb::access_grant grant;
  grant.enforced = true;
  grant.token = "orders";
  grant.publish = {"orders.eu.>"};
  grant.subscribe = {"orders.eu.>"};
  grant.groups = {"billing"};
  grant.any_group = false;
  return grant;
}

class AuthSession : public group_test {
protected:
  /// Returns the error frames `session` wrote.
  static std::vector<pb::ErrorFrame> errors(const test_session& session) {
    std::vector<pb::ErrorFrame> result;
    for (auto& frame : session.sink->of_kind(kind::kError))
      result.push_back(frame.error());
    return result;
  }

  /// Returns the payloads delivered to `session`, in order.
  static std::vector<std::string> payloads(const test_session& session) {
    std::vector<std::string> result;
    for (auto& frame : session.sink->of_kind(kind::kDeliveries))
      for (auto& d : frame.deliveries().deliveries())
        result.push_back(d.payload());
    return result;
  }

  test_session client = spawn_session(context(), "client", orders_grant());
  test_session watcher = spawn_session();
};

TEST_F(AuthSession, OnlyTheForbiddenMessagesOfABatchAreRefusedAndRouted) {
  subscribe(watcher, 1, ">");
  create_group("audit", group_settings(">"));
  auto member = spawn_session();
  join(member, 2, "audit", ">");
  send_frame(client,
             publish_frame(7, {make_message("orders.eu.created", "ok-1"),
                               make_message("orders.us.created", "secret-1"),
                               make_message("orders.eu.paid", "ok-2"),
                               make_message("invoices.eu", "secret-2")}));
  run();
  auto confirms = client.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 1u);
  auto& results = confirms[0].publish_confirm().results();
  ASSERT_EQ(results.size(), 4);
  EXPECT_FALSE(results[0].has_error());
  EXPECT_EQ(results[1].error().code(), permission_denied_code);
  EXPECT_EQ(results[1].error().reason(), "permission_denied");
  EXPECT_EQ(results[1].error().message(),
            "token \"orders\" may not publish to \"orders.us.created\"");
  EXPECT_FALSE(results[2].has_error());
  EXPECT_EQ(results[3].error().code(), permission_denied_code);
  // Neither the fan-out subscriber nor the group saw a forbidden message.
  EXPECT_EQ(payloads(watcher), (std::vector<std::string>{"ok-1", "ok-2"}));
  EXPECT_EQ(payloads(member), (std::vector<std::string>{"ok-1", "ok-2"}));
  EXPECT_EQ(counters("audit").received, 2u);
  auto counts = stats(client);
  EXPECT_EQ(counts.published, 2u);
  EXPECT_EQ(counts.refused, 2u);
  EXPECT_EQ(counts.denied, 2u);
}

TEST_F(AuthSession, AForbiddenSubscribeIsAnErrorFrameAndTheStreamGoesOn) {
  send_frame(client, subscribe_frame(11, 1, "orders.>"));
  run();
  auto refused = errors(client);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].request_id(), 11u);
  EXPECT_EQ(refused[0].request(), "subscribe");
  EXPECT_EQ(refused[0].error().code(), permission_denied_code);
  EXPECT_NE(refused[0].error().message().find("token \"orders\" may not "
                                              "subscribe to \"orders.>\""),
            std::string::npos);
  // Nothing was subscribed: a message under orders.us does not arrive, and
  // a narrower subscription is allowed on the same stream.
  subscribe(client, 2, "orders.eu.*");
  publish(watcher, "orders.us.created", 1, "us");
  publish(watcher, "orders.eu.created", 1, "eu");
  EXPECT_EQ(payloads(client), std::vector<std::string>{"eu0"});
  EXPECT_EQ(client.sink->of_kind(kind::kSubscribed).size(), 1u);
  EXPECT_EQ(stats(client).denied, 1u);
}

TEST_F(AuthSession, JoiningAGroupNeedsTheGroupAndThePattern) {
  create_group("billing", group_settings("orders.eu.>"));
  create_group("shipping", group_settings("orders.eu.>"));
  join(client, 1, "shipping", "orders.eu.>");
  join(client, 2, "billing", "orders.>");
  auto refused = errors(client);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0].error().message(),
            "token \"orders\" may not join group \"shipping\"");
  EXPECT_NE(refused[1].error().message().find("may not subscribe to"),
            std::string::npos);
  EXPECT_EQ(counters("shipping").members, 0u);
  join(client, 3, "billing", "orders.eu.>");
  EXPECT_EQ(counters("billing").members, 1u);
}

TEST_F(AuthSession, ANarrowedTokenEndsTheSubscriptionsItNoLongerAllows) {
  create_group("billing", group_settings("orders.eu.>"));
  subscribe(client, 1, "orders.eu.created");
  subscribe(client, 2, "orders.eu.paid");
  join(client, 3, "billing", "orders.eu.>");
  ASSERT_EQ(client.sink->of_kind(kind::kSubscribed).size(), 3u);
  auto narrower = orders_grant();
  narrower.subscribe = {"orders.eu.created"};
  self->send(client.hdl, tb::auth_atom_v, narrower);
  run();
  auto ended = client.sink->of_kind(kind::kUnsubscribed);
  ASSERT_EQ(ended.size(), 2u);
  std::vector<uint64_t> ids;
  for (auto& frame : ended) {
    ids.push_back(frame.unsubscribed().subscription_id());
    EXPECT_EQ(frame.unsubscribed().reason().rfind("permission_denied: ", 0), 0u)
        << frame.unsubscribed().reason();
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(counters("billing").members, 0u);
  // What is still allowed still arrives; what is not, no longer does.
  publish(watcher, "orders.eu.created", 1, "c");
  publish(watcher, "orders.eu.paid", 1, "p");
  EXPECT_EQ(payloads(client), std::vector<std::string>{"c0"});
  // The new grant applies to new requests too.
  send_frame(client, subscribe_frame(20, 4, "orders.eu.paid"));
  run();
  EXPECT_EQ(errors(client).size(), 1u);
}

TEST_F(AuthSession, AWidenedTokenAllowsWhatWasRefused) {
  send_frame(client, publish_frame(1, "invoices.eu", 1));
  run();
  auto wider = orders_grant();
  wider.publish.push_back("invoices.>");
  self->send(client.hdl, tb::auth_atom_v, wider);
  run();
  subscribe(watcher, 1, "invoices.>");
  send_frame(client, publish_frame(2, "invoices.eu", 1, "after"));
  run();
  EXPECT_EQ(payloads(watcher), std::vector<std::string>{"after0"});
  EXPECT_EQ(stats(client).denied, 1u);
}

} // namespace
} // namespace tb::test
