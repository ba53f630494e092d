// Tests of idempotent publish (issue 28): a message whose msg_id was seen on
// its topic within the window is confirmed as a duplicate, with the first
// message's id, and routed nowhere; the window ends by time (one timer per
// shard, simulated here) and by count.

#include <string>
#include <vector>

#include "actors/topic/dedup_table.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

using kind = pb::ServerFrame::KindCase;

constexpr std::chrono::milliseconds window = 10s;

/// One shard, a 10 s window, at most 4 ids remembered (or `shards`
/// shards and `max_ids` ids).
class Dedup : public group_test {
protected:
  explicit Dedup(std::size_t shards = 1, std::size_t max_ids = 4)
      : group_test([shards, max_ids](tb::router_settings& settings) {
          settings.topic_shards = shards;
          settings.dedup.window = window;
          settings.dedup.max_ids = max_ids;
        }) {
    // nop
  }

  /// Returns a message to `topic` with `payload` and `msg_id`.
  static pb::Message with_id(std::string topic, std::string payload,
                             std::string msg_id) {
    auto msg = make_message(std::move(topic), std::move(payload));
    msg.set_msg_id(std::move(msg_id));
    return msg;
  }

  /// Publishes `messages` from `session` with a confirm (their ids
  /// numbered from `msg_id_base` if it is not empty), runs, and returns the
  /// confirm's results.
  std::vector<pb::PublishResult>
  publish_all(const test_session& session, std::vector<pb::Message> messages,
              const std::string& msg_id_base = {}) {
    auto before = session.sink->of_kind(kind::kPublishConfirm).size();
    auto frame = publish_frame(next_request_id(), std::move(messages));
    if (!msg_id_base.empty())
      frame->mutable_publish()->set_msg_id_base(msg_id_base);
    send_frame(session, frame);
    run();
    auto confirms = session.sink->of_kind(kind::kPublishConfirm);
    EXPECT_EQ(confirms.size(), before + 1) << "no confirm";
    if (confirms.size() != before + 1)
      return {};
    auto& results = confirms.back().publish_confirm().results();
    return {results.begin(), results.end()};
  }

  /// Publishes one message with `msg_id` and returns its result.
  pb::PublishResult publish_id(const test_session& session,
                               const std::string& topic,
                               const std::string& payload,
                               const std::string& msg_id) {
    auto results = publish_all(session, {with_id(topic, payload, msg_id)});
    return results.empty() ? pb::PublishResult{} : results.front();
  }

  /// Returns the shard's counters.
  tb::shard_view shard_stats() {
    auto shard = deref<tb::router_state>(router).shards.at(0);
    return query<tb::shard_view>(shard, tb::stats_atom_v, tb::stats_query{});
  }
};

TEST_F(Dedup, SecondMessageWithTheSameIdIsConfirmedAsDuplicateAndNotRouted) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto first = publish_id(pub, "orders.1", "first", "id-1");
  EXPECT_FALSE(first.duplicate());
  EXPECT_FALSE(first.has_error());
  EXPECT_GT(first.id(), 0u);
  auto second = publish_id(pub, "orders.1", "second", "id-1");
  EXPECT_TRUE(second.duplicate());
  EXPECT_FALSE(second.has_error());
  EXPECT_EQ(second.id(), first.id()); // the first message's id
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"first"}));
  EXPECT_EQ(stats(pub).published, 1u);
  auto view = shard_stats();
  EXPECT_EQ(view.duplicates, 1u);
  EXPECT_EQ(view.dedup_ids, 1u);
}

TEST_F(Dedup, AnotherSessionSeesTheSameWindow) {
  // A client that reconnects publishes through a new session.
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto before = spawn_session();
  publish_id(before, "orders.1", "first", "id-1");
  auto after = spawn_session();
  EXPECT_TRUE(publish_id(after, "orders.1", "retry", "id-1").duplicate());
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"first"}));
}

TEST_F(Dedup, IdsAreScopedByTopicAndMessagesWithoutIdAreNeverDuplicates) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  publish_id(pub, "orders.1", "a", "id-1");
  EXPECT_FALSE(publish_id(pub, "orders.2", "b", "id-1").duplicate());
  publish(pub, "orders.1", 2, "plain");
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"a", "b", "plain0", "plain1"}));
}

TEST_F(Dedup, DuplicateWithinOneBatchKeepsTheFirstAndOrder) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto results = publish_all(
      pub, {with_id("orders.1", "a", "x"), make_message("orders.2", "plain"),
            with_id("orders.1", "again", "x"), with_id("orders.2", "b", "y")});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[0].duplicate());
  EXPECT_FALSE(results[1].duplicate());
  EXPECT_TRUE(results[2].duplicate());
  EXPECT_EQ(results[2].id(), results[0].id());
  EXPECT_FALSE(results[3].duplicate());
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"a", "plain", "b"}));
}

/// Four shards, so that the topics of one batch go to several.
class DedupShards : public Dedup {
protected:
  DedupShards() : Dedup(4, 1000) {
    // nop
  }
};

TEST_F(DedupShards, RunsOfTopicsInOneBatchAreEachCheckedOnTheirOwnTopic) {
  // A session asks once per run of messages to one topic (one route, one
  // topic hash): runs that come back (orders.1 after orders.2), topics on
  // several shards, a message without id between, the same id on other
  // topics, and a duplicate within a run and across runs.
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto results = publish_all(
      pub,
      {with_id("orders.1", "1x", "x"), with_id("orders.1", "1y", "y"),
       with_id("orders.2", "2x", "x"), make_message("orders.2", "plain"),
       with_id("orders.2", "2x again", "x"),
       with_id("orders.1", "1y again", "y"), with_id("orders.3", "3y", "y"),
       with_id("orders.1", "1z", "z"), with_id("orders.4", "4x", "x")});
  ASSERT_EQ(results.size(), 9u);
  std::vector<bool> duplicate;
  for (auto& result : results)
    duplicate.push_back(result.duplicate());
  EXPECT_EQ(duplicate, (std::vector<bool>{false, false, false, false, true,
                                          true, false, false, false}));
  EXPECT_EQ(results[4].id(), results[2].id());
  EXPECT_EQ(results[5].id(), results[1].id());
  EXPECT_EQ(
      sub.sink->payloads(),
      (std::vector<std::string>{"1x", "1y", "2x", "plain", "3y", "1z", "4x"}));
  // The next batch finds each id on its own topic only.
  results = publish_all(pub, {with_id("orders.3", "3x", "x"),
                              with_id("orders.4", "4x again", "x"),
                              with_id("orders.1", "1z again", "z")});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].duplicate());
  EXPECT_TRUE(results[1].duplicate());
  EXPECT_TRUE(results[2].duplicate());
}

TEST_F(Dedup, EachRunOfABatchKeepsItsTopicsWindow) {
  // jobs.1's group remembers ids 3 windows, orders.1 the broker's one: in
  // one batch of alternating runs each keeps its own.
  auto settings = group_settings("jobs.>");
  settings.dedup_window = 3 * window;
  create_group("slow", settings);
  auto pub = spawn_session();
  publish_all(pub,
              {with_id("jobs.1", "a", "a"), with_id("orders.1", "a", "a"),
               with_id("jobs.1", "b", "b"), with_id("orders.1", "b", "b")});
  advance(window);
  auto results = publish_all(
      pub, {with_id("jobs.1", "a2", "a"), with_id("orders.1", "a2", "a"),
            with_id("jobs.1", "b2", "b"), with_id("orders.1", "b2", "b")});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].duplicate());
  EXPECT_FALSE(results[1].duplicate());
  EXPECT_TRUE(results[2].duplicate());
  EXPECT_FALSE(results[3].duplicate());
}

TEST_F(Dedup, WindowEndsByTimeWithOneTimerPerShard) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  publish_id(pub, "orders.1", "first", "id-1");
  advance(window - 1ms);
  EXPECT_TRUE(publish_id(pub, "orders.1", "late", "id-1").duplicate());
  advance(1ms); // the window of id-1 ended
  EXPECT_EQ(shard_stats().dedup_ids, 0u);
  EXPECT_FALSE(publish_id(pub, "orders.1", "after", "id-1").duplicate());
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"first", "after"}));
  // One tick per shard, not one timer per id: the shard has one pending.
  auto shard = deref<tb::router_state>(router).shards.at(0);
  EXPECT_TRUE(deref<tb::topic_shard_state>(shard).dedup_tick_scheduled);
}

TEST_F(Dedup, WindowEndsByCountOldestFirst) {
  auto pub = spawn_session();
  for (auto id : {"a", "b", "c", "d", "e"}) // max_ids is 4: a goes
    EXPECT_FALSE(publish_id(pub, "orders.1", id, id).duplicate());
  EXPECT_FALSE(publish_id(pub, "orders.1", "a2", "a").duplicate());
  EXPECT_TRUE(publish_id(pub, "orders.1", "e2", "e").duplicate());
  auto view = shard_stats();
  EXPECT_EQ(view.dedup_ids, 4u);
  EXPECT_EQ(view.dedup_evicted, 2u); // a, then b for a's return
}

TEST_F(Dedup, DuplicatesAreNotHeldByGroups) {
  create_group("workers", group_settings("jobs.>"));
  auto pub = spawn_session();
  publish_id(pub, "jobs.1", "first", "job-1");
  EXPECT_TRUE(publish_id(pub, "jobs.1", "again", "job-1").duplicate());
  EXPECT_EQ(counters("workers").received, 1u);
}

TEST_F(Dedup, GroupWithALongerWindowKeepsItsTopicsIdsLonger) {
  auto settings = group_settings("jobs.>");
  settings.dedup_window = 3 * window;
  create_group("slow", settings);
  auto pub = spawn_session();
  publish_id(pub, "jobs.1", "first", "job-1");
  publish_id(pub, "orders.1", "plain", "job-1"); // no group: the broker's
  advance(window);                               // the broker's window ended
  EXPECT_FALSE(publish_id(pub, "orders.1", "again", "job-1").duplicate());
  EXPECT_TRUE(publish_id(pub, "jobs.1", "retry", "job-1").duplicate());
  advance(2 * window - 1ms);
  EXPECT_TRUE(publish_id(pub, "jobs.1", "late", "job-1").duplicate());
  advance(1ms); // the group's window ended
  EXPECT_FALSE(publish_id(pub, "jobs.1", "after", "job-1").duplicate());
  EXPECT_EQ(counters("slow").received, 2u);
}

TEST_F(Dedup, GroupWithAShorterWindowDoesNotShortenTheBrokers) {
  auto settings = group_settings("jobs.>");
  settings.dedup_window = window / 2;
  create_group("quick", settings);
  auto pub = spawn_session();
  publish_id(pub, "jobs.1", "first", "job-1");
  advance(window - 1ms);
  EXPECT_TRUE(publish_id(pub, "jobs.1", "retry", "job-1").duplicate());
}

TEST_F(Dedup, MsgIdOverTheLimitIsRefusedNamingIt) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto result = publish_id(pub, "orders.1", "x",
                           std::string(tb::max_msg_id_bytes + 1, 'k'));
  ASSERT_TRUE(result.has_error());
  EXPECT_EQ(result.error().code(), 3); // INVALID_ARGUMENT
  EXPECT_NE(result.error().message().find("msg_id"), std::string::npos);
  EXPECT_NE(result.error().message().find("129 bytes; the limit is 128"),
            std::string::npos)
      << result.error().message();
  EXPECT_TRUE(sub.sink->payloads().empty());
  // At the limit it is accepted.
  EXPECT_FALSE(
      publish_id(pub, "orders.1", "y", std::string(tb::max_msg_id_bytes, 'k'))
          .has_error());
}

TEST_F(Dedup, MessagesNumberedFromAFramesBaseAreDeduplicatedAsTheirIds) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto base = std::string("client-A\0\0\0\0\0\0\x01", 15);
  auto numbered = [&](std::vector<pb::Message> messages) {
    return publish_all(pub, std::move(messages), base);
  };
  auto first =
      numbered({make_message("orders.1", "a"), make_message("orders.1", "b"),
                make_message("orders.2", "c")});
  ASSERT_EQ(first.size(), 3u);
  for (auto& result : first)
    EXPECT_FALSE(result.duplicate());
  // Message 1's id is the base plus one: the same id sent on its own.
  auto plus_one = std::string("client-A\0\0\0\0\0\0\x02", 15);
  auto alone = publish_id(pub, "orders.1", "b again", plus_one);
  EXPECT_TRUE(alone.duplicate());
  EXPECT_EQ(alone.id(), first[1].id());
  // The frame sent again (a retry): every message a duplicate; a message
  // with an id of its own keeps it, and still counts in the numbering.
  auto retried = numbered({with_id("orders.1", "own", "own-id"),
                           make_message("orders.1", "b retried"),
                           make_message("orders.2", "c retried")});
  ASSERT_EQ(retried.size(), 3u);
  EXPECT_FALSE(retried[0].duplicate());
  EXPECT_TRUE(retried[1].duplicate());
  EXPECT_EQ(retried[1].id(), first[1].id());
  EXPECT_TRUE(retried[2].duplicate());
  EXPECT_EQ(retried[2].id(), first[2].id());
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"a", "b", "c", "own"}));
}

TEST_F(Dedup, AMsgIdBaseOverTheLimitRefusesTheFrameNamingIt) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  auto frame =
      publish_frame(next_request_id(), {make_message("orders.1", "a"),
                                        with_id("orders.1", "b", "own-id")});
  frame->mutable_publish()->set_msg_id_base(
      std::string(tb::max_msg_id_bytes + 1, 'k'));
  send_frame(pub, frame);
  run();
  auto confirms = pub.sink->of_kind(kind::kPublishConfirm);
  ASSERT_EQ(confirms.size(), 1u);
  for (auto& result : confirms.back().publish_confirm().results()) {
    ASSERT_TRUE(result.has_error());
    EXPECT_EQ(result.error().code(), 3); // INVALID_ARGUMENT
    EXPECT_NE(result.error().message().find(
                  "msg_id_base of the publish has 129 bytes; the limit is 128"),
              std::string::npos)
        << result.error().message();
  }
  EXPECT_TRUE(sub.sink->payloads().empty());
}

TEST_F(Dedup, FramesReadBeforeTheStreamWentAreRoutedBeforeTheSessionStops) {
  // Issue 31: a connection cut while a write to it was pending ended the
  // stream with a publish frame still waiting for its shard's answer. The
  // session stopped at the bridge's exit, the ids stayed marked, and the
  // client's resend was confirmed as a duplicate of a message nobody got.
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  publish_id(pub, "orders.1", "first", "id-0"); // the route is cached now
  send_frame(pub, publish_frame(next_request_id(),
                                {with_id("orders.1", "read", "id-1"),
                                 with_id("orders.1", "also read", "id-2")}));
  run_one(pub.hdl); // the frame: its question goes to the shard
  auto confirms = pub.sink->of_kind(kind::kPublishConfirm).size();
  // The bridge's exit when the stream is gone, before the shard answers.
  caf::anon_send_exit(pub.hdl, caf::exit_reason::user_shutdown);
  run_one(pub.hdl);
  run();
  EXPECT_EQ(sub.sink->payloads(),
            (std::vector<std::string>{"first", "read", "also read"}));
  EXPECT_EQ(pub.sink->of_kind(kind::kPublishConfirm).size(), confirms)
      << "nothing is written to a stream that is gone";
  // The session stopped once they were routed.
  EXPECT_TRUE(terminated(pub.hdl));
  // The client's resend from a new session is a duplicate of a delivered
  // message.
  auto again = spawn_session();
  EXPECT_TRUE(publish_id(again, "orders.1", "read", "id-1").duplicate());
  EXPECT_EQ(sub.sink->payloads().size(), 3u);
}

TEST_F(Dedup, ASecondExitStopsASessionStillRouting) {
  auto sub = spawn_session();
  subscribe(sub, 1, "orders.>");
  auto pub = spawn_session();
  publish_id(pub, "orders.1", "first", "id-0");
  send_frame(pub, publish_frame(next_request_id(),
                                {with_id("orders.1", "read", "id-1")}));
  run_one(pub.hdl);
  caf::anon_send_exit(pub.hdl, caf::exit_reason::user_shutdown);
  run_one(pub.hdl); // waits for its frame
  EXPECT_FALSE(terminated(pub.hdl));
  // The broker stopping, say: it does not wait for the frame.
  caf::anon_send_exit(pub.hdl, caf::exit_reason::user_shutdown);
  run_one(pub.hdl);
  EXPECT_TRUE(terminated(pub.hdl));
  run();
  EXPECT_EQ(sub.sink->payloads(), (std::vector<std::string>{"first"}));
}

} // namespace
} // namespace tb::test
