// End to end: consumer groups as a work queue, with several real client
// streams against a real broker (spec 6): each message to exactly one member,
// redelivery when a member dies, holding while nobody listens, bounds, dead
// letters, nack and ack_wait.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_fixture.hpp"

namespace tb::test {
namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;
using ids = std::vector<uint64_t>;

constexpr int resource_exhausted = 8;

// Consumer groups: admin calls, joining, and publishing numbered messages.
class GroupsTest : public BrokerTest {
protected:
  // Creates group `name` on `pattern` with `settings`; expects success.
  void create_group(const std::string& name, const std::string& pattern,
                    pb::GroupSettings settings = {}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::CreateGroupRequest req;
    req.set_name(name);
    *req.mutable_settings() = std::move(settings);
    req.mutable_settings()->set_pattern(pattern);
    pb::GroupInfo reply;
    auto status = conn_->stub().CreateGroup(&ctx, req, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.name(), name);
  }

  // Returns group `name` as ListGroups shows it, if listed.
  std::optional<pb::GroupInfo> find_group(const std::string& name) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + patience);
    pb::ListGroupsReply reply;
    auto status = conn_->stub().ListGroups(&ctx, {}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (auto& group : reply.groups())
      if (group.name() == name)
        return group;
    return std::nullopt;
  }

  // Opens a session that joins `group` on `pattern` as subscription 1 and
  // waits for the Subscribed frame.
  std::unique_ptr<client::session> worker(const std::string& group,
                                          const std::string& pattern,
                                          uint32_t max_in_flight) {
    auto session = conn_->open_session();
    EXPECT_TRUE(session->join(1, group, pattern, max_in_flight));
    auto frame = session->wait_for(pb::ServerFrame::kSubscribed, patience);
    EXPECT_TRUE(frame.has_value()) << "no Subscribed frame for " << group;
    return session;
  }

  // Publishes `count` messages to `topic` with payloads "0", "1", ... in
  // unary batches of `batch`; expects all accepted and returns their ids.
  ids publish_numbered(const std::string& topic, int count, int batch = 50) {
    ids result;
    std::vector<client::outgoing_message> msgs;
    for (int i = 0; i < count; ++i) {
      msgs.push_back({topic, std::to_string(i), {}, {}});
      if (static_cast<int>(msgs.size()) < batch && i + 1 < count)
        continue;
      std::vector<pb::PublishResult> results;
      auto status = conn_->publish(msgs, &results);
      EXPECT_TRUE(status.ok()) << status.error_message();
      for (auto& r : results) {
        EXPECT_FALSE(r.has_error()) << r.error().message();
        result.push_back(r.id());
      }
      msgs.clear();
    }
    return result;
  }
};

// Returns the message ids of `deliveries`, in order.
ids message_ids(const std::vector<pb::Delivery>& deliveries) {
  ids result;
  for (auto& d : deliveries)
    result.push_back(d.message_id());
  return result;
}

// Returns the delivery ids of `deliveries`, in order.
ids delivery_ids(const std::vector<pb::Delivery>& deliveries) {
  ids result;
  for (auto& d : deliveries)
    result.push_back(d.delivery_id());
  return result;
}

// Returns header `name` of `d`, or "" if it has none.
std::string header(const pb::Delivery& d, const std::string& name) {
  auto i = d.headers().find(name);
  return i != d.headers().end() ? i->second : "";
}

TEST_F(GroupsTest, ThreeWorkersShareSixHundredMessagesExactlyOnce) {
  constexpr size_t messages = 600;
  std::vector<std::unique_ptr<client::session>> workers;
  for (int i = 0; i < 3; ++i)
    workers.push_back(worker("work", "jobs.>", 16));
  std::atomic<size_t> acked{0};
  std::vector<ids> received(workers.size());
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers.size(); ++w)
    threads.emplace_back([&, w] {
      auto deadline = std::chrono::steady_clock::now() + patience;
      while (acked.load() < messages &&
             std::chrono::steady_clock::now() < deadline) {
        auto frame = workers[w]->next(50ms);
        if (!frame || !frame->has_deliveries())
          continue;
        for (auto& d : frame->deliveries().deliveries()) {
          received[w].push_back(d.message_id());
          EXPECT_EQ(d.attempt(), 1u) << "nothing should be redelivered";
          ASSERT_TRUE(workers[w]->ack({d.delivery_id()}));
          ++acked;
        }
      }
    });
  auto published = publish_numbered("jobs.build", messages);
  for (auto& t : threads)
    t.join();

  ids all;
  for (size_t w = 0; w < workers.size(); ++w) {
    EXPECT_FALSE(received[w].empty()) << "worker " << w << " got nothing";
    all.insert(all.end(), received[w].begin(), received[w].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end())
      << "a message was delivered twice";
  std::sort(published.begin(), published.end());
  EXPECT_EQ(all, published)
      << "received " << all.size() << " of " << published.size();
  for (auto& w : workers)
    EXPECT_TRUE(w->receive(1, quiet_period).empty()) << "a late duplicate";
}

TEST_F(GroupsTest, AKilledWorkersUnackedMessagesGoToAnotherWorker) {
  auto doomed = worker("work", "jobs.>", 10);
  auto published = publish_numbered("jobs.resize", 30);
  auto held = doomed->receive(10, patience);
  ASSERT_EQ(held.size(), 10u) << "the first worker fills its max_in_flight";
  auto survivor = worker("work", "jobs.>", 100);
  auto rest = survivor->receive(20, patience);
  ASSERT_EQ(rest.size(), 20u);
  for (auto& d : rest)
    EXPECT_EQ(d.attempt(), 1u);
  ASSERT_TRUE(survivor->ack(delivery_ids(rest)));

  doomed->cancel();
  auto redelivered = survivor->receive(10, patience);
  ASSERT_EQ(redelivered.size(), 10u) << "messages of the dead worker lost";
  EXPECT_EQ(message_ids(redelivered), message_ids(held))
      << "redelivered at the head of the queue, in their order";
  for (auto& d : redelivered)
    EXPECT_EQ(d.attempt(), 2u);
  ASSERT_TRUE(survivor->ack(delivery_ids(redelivered)));

  auto all = message_ids(rest);
  for (auto id : message_ids(redelivered))
    all.push_back(id);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, published);
  EXPECT_TRUE(survivor->receive(1, quiet_period).empty());
}

TEST_F(GroupsTest, CreatedGroupHoldsMessagesUntilAMemberJoins) {
  create_group("work", "jobs.>");
  auto published = publish_numbered("jobs.encode", 5);
  auto before = find_group("work");
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->counters().pending(), 5u);
  EXPECT_EQ(before->counters().members(), 0u);

  auto late = worker("work", "jobs.>", 0);
  auto got = late->receive(5, patience);
  EXPECT_EQ(message_ids(got), published) << "held in publish order";
  for (auto& d : got)
    EXPECT_EQ(d.attempt(), 1u);
}

TEST_F(GroupsTest, AutoCreatedGroupHoldsMessagesAfterItsLastMemberLeft) {
  {
    auto first = worker("later", "tasks.>", 0);
    ASSERT_TRUE(first->unsubscribe(1, 2));
    auto bye = first->wait_for(pb::ServerFrame::kUnsubscribed, patience);
    ASSERT_TRUE(bye.has_value());
    EXPECT_EQ(bye->unsubscribed().reason(), "") << "the client asked";
  }
  auto published = publish_numbered("tasks.mail", 3);
  auto next = worker("later", "tasks.>", 0);
  EXPECT_EQ(message_ids(next->receive(3, patience)), published);
}

TEST_F(GroupsTest, FullGroupRefusesWhileFanoutStillGetsEverything) {
  pb::GroupSettings settings;
  settings.set_max_pending_messages(5);
  settings.set_overflow(pb::OVERFLOW_REJECT);
  create_group("small", "jobs.>", settings);
  auto fanout = subscriber(1, "jobs.>");

  std::vector<client::outgoing_message> batch;
  for (int i = 1; i <= 8; ++i)
    batch.push_back({"jobs.thumb", std::to_string(i), {}, {}});
  std::vector<pb::PublishResult> results;
  ASSERT_TRUE(conn_->publish(batch, &results).ok());
  ASSERT_EQ(results.size(), 8u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FALSE(results[i].has_error()) << "message " << i + 1;
    EXPECT_GT(results[i].id(), 0u);
  }
  for (size_t i = 5; i < 8; ++i) {
    ASSERT_TRUE(results[i].has_error()) << "message " << i + 1;
    EXPECT_EQ(results[i].error().code(), resource_exhausted);
    EXPECT_EQ(results[i].error().reason(), "group_full");
    EXPECT_NE(results[i].error().message().find("small"), std::string::npos)
        << results[i].error().message();
  }

  auto copies = fanout->receive(8, patience);
  ASSERT_EQ(copies.size(), 8u) << "other destinations still get it";
  for (size_t i = 0; i < copies.size(); ++i)
    EXPECT_EQ(copies[i].payload(), std::to_string(i + 1));
  auto group = find_group("small");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ(group->counters().pending(), 5u);
  EXPECT_EQ(group->counters().received(), 5u);
}

TEST_F(GroupsTest, RejectedMessageGoesToTheDeadLetterTopicWithHeaders) {
  auto dlq = subscriber(1, "$dlq.work");
  auto w = worker("work", "jobs.>", 0);
  ASSERT_TRUE(
      conn_->publish({{"jobs.bad", "poison", {{"trace", "t-1"}}, "k"}}).ok());
  auto got = w->receive(1, patience);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(w->reject({got[0].delivery_id()}));

  auto dead = dlq->receive(1, patience);
  ASSERT_EQ(dead.size(), 1u) << "nothing on $dlq.work";
  auto& d = dead[0];
  EXPECT_EQ(d.topic(), "$dlq.work");
  EXPECT_EQ(d.payload(), "poison");
  EXPECT_EQ(d.key(), "k");
  EXPECT_EQ(header(d, "trace"), "t-1") << "the original headers stay";
  EXPECT_EQ(header(d, "x-tinybroker-original-topic"), "jobs.bad");
  EXPECT_EQ(header(d, "x-tinybroker-group"), "work");
  EXPECT_EQ(header(d, "x-tinybroker-attempts"), "1");
  EXPECT_EQ(header(d, "x-tinybroker-reason"), "rejected");
  EXPECT_NE(d.message_id(), got[0].message_id()) << "a new message";
  EXPECT_TRUE(w->receive(1, quiet_period).empty()) << "it left the group";
}

TEST_F(GroupsTest, NackRedeliversWithANewIdAndTheOldIdAcksNothing) {
  auto w = worker("work", "jobs.>", 1);
  auto published = publish_numbered("jobs.render", 1);
  auto first = w->receive(1, patience);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].attempt(), 1u);
  ASSERT_TRUE(w->nack({first[0].delivery_id()}));

  auto second = w->receive(1, patience);
  ASSERT_EQ(second.size(), 1u) << "nacked with requeue: redelivered";
  EXPECT_EQ(second[0].message_id(), published[0]);
  EXPECT_EQ(second[0].attempt(), 2u);
  EXPECT_NE(second[0].delivery_id(), first[0].delivery_id());

  // A second answer for the superseded delivery, then a published message
  // on the same stream: the group handles the ack before that publish, so
  // its confirm tells the ack arrived (the message waits: no credit).
  ASSERT_TRUE(w->ack({first[0].delivery_id()}));
  ASSERT_TRUE(w->publish({{"jobs.render", "barrier", {}, {}}}, true, 5));
  ASSERT_TRUE(w->wait_for(pb::ServerFrame::kPublishConfirm, patience));
  auto group = find_group("work");
  ASSERT_TRUE(group.has_value());
  EXPECT_GE(group->counters().stale_answers(), 1u);
  EXPECT_EQ(group->counters().acked(), 0u) << "the stale ack acked something";
  EXPECT_EQ(group->counters().in_flight(), 1u);
  EXPECT_EQ(group->counters().pending(), 1u);

  ASSERT_TRUE(w->ack({second[0].delivery_id()}));
  auto barrier = w->receive(1, patience);
  ASSERT_EQ(barrier.size(), 1u) << "the new delivery's ack freed the credit";
  EXPECT_EQ(barrier[0].payload(), "barrier");
  group = find_group("work");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ(group->counters().acked(), 1u);
}

TEST_F(GroupsTest, UnansweredDeliveryIsRedeliveredAfterAckWait) {
  pb::GroupSettings settings;
  settings.set_ack_wait_ms(300);
  create_group("slow", "slow.>", settings);
  auto w = worker("slow", "slow.>", 0);
  auto start = std::chrono::steady_clock::now();
  auto published = publish_numbered("slow.job", 1);
  auto first = w->receive(1, patience);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].attempt(), 1u);

  auto second = w->receive(1, patience);
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(second.size(), 1u) << "not redelivered after ack_wait";
  EXPECT_EQ(second[0].message_id(), published[0]);
  EXPECT_EQ(second[0].attempt(), 2u);
  EXPECT_NE(second[0].delivery_id(), first[0].delivery_id());
  EXPECT_GE(waited, 300ms) << "redelivered before ack_wait passed";
  auto group = find_group("slow");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ(group->counters().redelivered(), 1u);
}

} // namespace
} // namespace tb::test
