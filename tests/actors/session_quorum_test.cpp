// The majority rule on a session's paths (issue 32 point 3, docs/cluster.md
// "Majority rule"): while the broker's quorum state says this node sees no
// majority, group publishes, joins, acks and requests to a group are
// refused with UNAVAILABLE naming the counts; fan-out is served.

#include <memory>
#include <string>
#include <vector>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

/// A group "work" on jobs.>, a member, a fan-out subscriber to news.> and a
/// publisher, all sharing one quorum state.
class SessionQuorum : public group_test {
protected:
  SessionQuorum() {
    create_group("work", group_settings("jobs.>"));
    join(worker, 1, "work", "jobs.>");
    subscribe(reader, 2, "news.>");
  }

  /// Returns a context that reads the test's quorum state.
  broker_context quorum_context() {
    auto ctx = context();
    ctx.quorum = quorum;
    return ctx;
  }

  /// This node sees 1 of 3 nodes: no quorum.
  void lose_quorum() {
    quorum->set(1, 3, quorum_rule::majority);
  }

  /// This node sees 2 of 3 nodes: quorum.
  void regain_quorum() {
    quorum->set(2, 3, quorum_rule::majority);
  }

  /// Publishes `messages` from the publisher with a confirm; returns it.
  pb::PublishConfirm publish_confirmed(std::vector<pb::Message> messages) {
    auto mark = pub.sink->frames.size();
    send_frame(pub, publish_frame(next_request_id(), std::move(messages)));
    run();
    auto& frames = pub.sink->frames;
    for (auto i = mark; i < frames.size(); ++i)
      if (frames[i].has_publish_confirm())
        return frames[i].publish_confirm();
    ADD_FAILURE() << "no confirm";
    return {};
  }

  /// Returns the last error frame of `session`.
  static pb::ErrorFrame last_error(const test_session& session) {
    auto errors = session.sink->of_kind(kind::kError);
    EXPECT_FALSE(errors.empty()) << "no error frame";
    return errors.empty() ? pb::ErrorFrame{} : errors.back().error();
  }

  /// Checks that `err` is the majority rule's refusal naming `what`.
  static void expect_no_quorum(const pb::Error& err, const std::string& what) {
    EXPECT_EQ(err.code(), 14);
    EXPECT_EQ(err.reason(), "no_quorum");
    EXPECT_NE(err.message().find("no quorum: this node sees 1 of 3 "
                                 "configured nodes (needs 2)"),
              std::string::npos)
        << err.message();
    EXPECT_NE(err.message().find(what), std::string::npos) << err.message();
  }

  std::shared_ptr<quorum_state> quorum = std::make_shared<quorum_state>();
  test_session worker = spawn_session(quorum_context());
  test_session reader = spawn_session(quorum_context());
  test_session pub = spawn_session(quorum_context());
};

TEST_F(SessionQuorum, AGroupPublishIsRefusedWholeAndFanOutIsServed) {
  lose_quorum();
  auto confirm = publish_confirmed({make_message("jobs.1", "a"),
                                    make_message("news.1", "b"),
                                    make_message("jobs.2", "c")});
  ASSERT_EQ(confirm.results_size(), 3);
  expect_no_quorum(confirm.results(0).error(),
                   "the message to \"jobs.1\" routes to a consumer group");
  EXPECT_EQ(confirm.results(0).id(), 0u);
  EXPECT_FALSE(confirm.results(1).has_error());
  EXPECT_NE(confirm.results(1).id(), 0u);
  expect_no_quorum(confirm.results(2).error(), "\"jobs.2\"");
  EXPECT_EQ(counters("work").received, 0u);
  EXPECT_TRUE(worker.sink->deliveries().empty());
  EXPECT_EQ(reader.sink->payloads(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(quorum->refusals(), 2u);
  EXPECT_EQ(stats(pub).refused, 2u);
  EXPECT_EQ(stats(pub).published, 1u);
  // Back: the group takes publishes again.
  regain_quorum();
  confirm = publish_confirmed({make_message("jobs.3", "d")});
  EXPECT_FALSE(confirm.results(0).has_error());
  EXPECT_EQ(counters("work").received, 1u);
  EXPECT_EQ(payloads_of(worker.sink->deliveries()),
            (std::vector<std::string>{"d"}));
}

TEST_F(SessionQuorum, ARefusedMessageIdIsNotADuplicateOnceQuorumIsBack) {
  auto with_id = [](std::string topic, std::string id) {
    auto msg = make_message(std::move(topic), "x");
    msg.set_msg_id(std::move(id));
    return msg;
  };
  lose_quorum();
  auto confirm =
      publish_confirmed({with_id("jobs.1", "k1"), with_id("news.1", "k2"),
                         with_id("jobs.1", "k3"), with_id("news.1", "k4")});
  EXPECT_TRUE(confirm.results(0).has_error());
  EXPECT_FALSE(confirm.results(1).has_error());
  EXPECT_FALSE(confirm.results(1).duplicate());
  EXPECT_TRUE(confirm.results(2).has_error());
  EXPECT_FALSE(confirm.results(3).has_error());
  regain_quorum();
  confirm = publish_confirmed({with_id("jobs.1", "k1"), with_id("news.1", "k2"),
                               with_id("jobs.1", "k3")});
  EXPECT_FALSE(confirm.results(0).duplicate()); // refused: never seen
  EXPECT_TRUE(confirm.results(1).duplicate());  // served: seen
  EXPECT_FALSE(confirm.results(2).duplicate());
  EXPECT_EQ(counters("work").received, 2u);
}

TEST_F(SessionQuorum, AJoinIsRefusedWithAnErrorFrame) {
  lose_quorum();
  auto other = spawn_session(quorum_context());
  send_frame(other, join_frame(77, 5, "jobs.>", "work"));
  run();
  auto err = last_error(other);
  EXPECT_EQ(err.request_id(), 77u);
  EXPECT_EQ(err.request(), "subscribe");
  EXPECT_EQ(err.subscription_id(), 5u);
  expect_no_quorum(err.error(), "group \"work\" refuses joins");
  EXPECT_EQ(counters("work").members, 1u);
  EXPECT_EQ(stats(other).subscriptions, 0u);
  // A fan-out subscription is served.
  subscribe(other, 6, "news.>");
  EXPECT_EQ(other.sink->of_kind(kind::kSubscribed).size(), 1u);
  regain_quorum();
  join(other, 5, "work", "jobs.>");
  EXPECT_EQ(counters("work").members, 2u);
}

TEST_F(SessionQuorum, AcksAreRefusedAndTheDeliveryStaysInFlight) {
  publish_confirmed({make_message("jobs.1", "a")});
  auto ids = ids_of(worker.sink->deliveries());
  ASSERT_EQ(ids.size(), 1u);
  lose_quorum();
  ack(worker, ids);
  auto err = last_error(worker);
  EXPECT_EQ(err.request(), "ack");
  expect_no_quorum(err.error(), "the deliveries stay in flight and come "
                                "back after the group's ack_wait");
  nack(worker, ids);
  EXPECT_EQ(last_error(worker).request(), "nack");
  reject(worker, ids);
  EXPECT_EQ(last_error(worker).request(), "reject");
  in_progress(worker, ids);
  EXPECT_EQ(last_error(worker).request(), "in_progress");
  auto c = counters("work");
  EXPECT_EQ(c.acked, 0u);
  EXPECT_EQ(c.dead_lettered, 0u);
  EXPECT_EQ(c.in_flight, 1u);
  EXPECT_EQ(quorum->refusals(), 4u);
  // Back: the same delivery id is answered.
  regain_quorum();
  ack(worker, ids);
  EXPECT_EQ(counters("work").acked, 1u);
  EXPECT_EQ(counters("work").in_flight, 0u);
}

TEST_F(SessionQuorum, ARequestToAGroupIsRefused) {
  lose_quorum();
  auto frame = std::make_shared<pb::ClientFrame>();
  frame->set_request_id(88);
  *frame->mutable_request()->mutable_message() = make_message("jobs.1", "q");
  frame->mutable_request()->set_group("work");
  send_frame(pub, frame);
  run();
  auto err = last_error(pub);
  EXPECT_EQ(err.request_id(), 88u);
  EXPECT_EQ(err.request(), "request");
  expect_no_quorum(err.error(), "group \"work\" refuses requests");
  EXPECT_EQ(counters("work").received, 0u);
}

TEST_F(SessionQuorum, AMemberRejoinsALostGroupOnlyOnceQuorumIsBack) {
  auto member = spawn_session(quorum_context());
  deref<session_state>(member.hdl).watch.local_as_remote = true;
  join(member, 5, "g", "orders.>");
  auto lost = group("g");
  ASSERT_TRUE(lost);
  lose_quorum();
  self->send_exit(lost, caf::exit_reason::remote_link_unreachable);
  run();
  pass(2s);
  auto meanwhile = group("g");
  EXPECT_TRUE(!meanwhile || meanwhile == lost)
      << "the group was re-created on a node without quorum";
  EXPECT_TRUE(member.sink->of_kind(kind::kUnsubscribed).empty());
  regain_quorum();
  pass(1s + 10ms); // at most the largest backoff
  auto next = group("g");
  ASSERT_TRUE(next);
  EXPECT_NE(next, lost);
  send_frame(pub, publish_frame(next_request_id(), "orders.1", 1, "after"));
  run();
  auto got = member.sink->deliveries();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].subscription_id(), 5u);
}

TEST_F(SessionQuorum, WithQuorumNothingIsRefused) {
  auto confirm = publish_confirmed({make_message("jobs.1", "a")});
  EXPECT_FALSE(confirm.results(0).has_error());
  EXPECT_EQ(quorum->refusals(), 0u);
}

} // namespace
} // namespace tb::test
