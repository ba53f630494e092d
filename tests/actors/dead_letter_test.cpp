// Tests of dead letters that meet groups again (spec 6, docs/semantics.md):
// a dead letter dead-lettered once more keeps its first origin, groups whose
// dead letter topics feed each other cannot loop, and a group whose own
// pattern matches its dead letter topic is refused.

#include <string>
#include <vector>

#include "actors/group/group_actor.hpp"
#include "tests/actors/group_fixture.hpp"

namespace tb::test {
namespace {

namespace headers = tb::dead_letter_headers;
using kind = tinybroker::v1::ServerFrame::KindCase;

/// Two groups, "work" on "jobs.>" and "retry" on "retry.>", with member `a`
/// in "work" and member `b` in "retry"; each test picks the dead letter
/// topics that link them.
class DeadLetters : public group_test {
protected:
  /// Creates both groups with the given dead letter topics and joins the
  /// members.
  void create_pair(const std::string& work_dead_letter,
                   const std::string& retry_dead_letter) {
    auto work = group_settings("jobs.>");
    work.dead_letter = work_dead_letter;
    create_group("work", work);
    auto retry = group_settings("retry.>");
    retry.dead_letter = retry_dead_letter;
    create_group("retry", retry);
    join(a, 1, "work", "jobs.>");
    join(b, 1, "retry", "retry.>");
  }

  /// Returns the delivery id of `session`'s `n`th delivery.
  static uint64_t delivery_id(const test_session& session, size_t n) {
    auto got = session.sink->deliveries();
    EXPECT_LT(n, got.size()) << "too few deliveries";
    return n < got.size() ? got[n].delivery_id() : 0;
  }

  /// Returns the value of `header` in `delivery`, or "(none)".
  static std::string header(const tinybroker::v1::Delivery& delivery,
                            std::string_view header) {
    auto& all = delivery.headers();
    auto i = all.find(std::string{header});
    return i == all.end() ? "(none)" : i->second;
  }

  test_session pub = spawn_session();
  test_session a = spawn_session();
  test_session b = spawn_session();
};

TEST_F(DeadLetters, ADeadLetterDeadLetteredAgainKeepsItsFirstOrigin) {
  auto dlq = spawn_session();
  subscribe(dlq, 9, "$dlq.retry");
  create_pair("retry.work", "");
  publish(pub, "jobs.a", 1);
  auto first_id = a.sink->deliveries().at(0).message_id();
  reject(a, {delivery_id(a, 0)});
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  EXPECT_EQ(b.sink->deliveries()[0].topic(), "retry.work");
  reject(b, {delivery_id(b, 0)});
  auto dead = dlq.sink->deliveries();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(header(dead[0], headers::original_topic), "jobs.a");
  EXPECT_EQ(header(dead[0], headers::original_id), std::to_string(first_id));
  EXPECT_EQ(header(dead[0], headers::group), "retry");
  EXPECT_EQ(header(dead[0], headers::attempts), "1");
  EXPECT_EQ(header(dead[0], headers::path), "work,retry");
  // Each header once: a map on the wire would keep only one of two.
  size_t originals = 0;
  for (auto& [name, value] : dead[0].headers())
    originals += name == headers::original_topic ? 1 : 0;
  EXPECT_EQ(originals, 1u);
}

TEST_F(DeadLetters, GroupsWhoseDeadLettersFeedEachOtherDoNotLoop) {
  // work -> retry.x (held by retry) -> jobs.back (held by work again): the
  // second time "work" would dead-letter the message, it drops it instead.
  create_pair("retry.x", "jobs.back");
  publish(pub, "jobs.a", 1);
  reject(a, {delivery_id(a, 0)});
  ASSERT_EQ(b.sink->deliveries().size(), 1u);
  reject(b, {delivery_id(b, 0)});
  ASSERT_EQ(a.sink->deliveries().size(), 2u);
  EXPECT_EQ(a.sink->deliveries()[1].topic(), "jobs.back");
  EXPECT_EQ(header(a.sink->deliveries()[1], headers::path), "work,retry");
  reject(a, {delivery_id(a, 1)});
  EXPECT_EQ(b.sink->deliveries().size(), 1u); // not again
  EXPECT_EQ(a.sink->deliveries().size(), 2u);
  auto work = counters("work");
  EXPECT_EQ(work.dead_lettered, 1u);
  EXPECT_EQ(work.dropped, 1u);
  EXPECT_EQ(work.pending + work.in_flight, 0u);
  EXPECT_EQ(counters("retry").dead_lettered, 1u);
}

TEST_F(DeadLetters, AGroupWhosePatternMatchesItsDeadLetterTopicIsRefused) {
  for (auto [pattern, dead_letter] :
       {std::pair{"y.>", "y.dead"}, std::pair{"$dlq.>", ""}}) {
    auto settings = group_settings(pattern);
    settings.dead_letter = dead_letter;
    auto response = self->request(router, caf::infinite, tb::create_atom_v,
                                  std::string{"y"}, settings);
    run();
    ASSERT_FALSE(self->mailbox().empty());
    response.receive(
        [](tb::group_info&) { ADD_FAILURE() << "created a looping group"; },
        [&](caf::error& err) {
          auto text = sys.render(err);
          EXPECT_NE(text.find(pattern), std::string::npos) << text;
          auto topic = *dead_letter ? std::string{dead_letter} : "$dlq.y";
          EXPECT_NE(text.find(topic), std::string::npos) << text;
        });
    EXPECT_FALSE(group("y"));
  }
}

TEST_F(DeadLetters, JoiningCannotAutoCreateALoopingGroup) {
  // Auto-created groups take the defaults; a default dead letter topic that
  // their pattern matches makes the join fail instead of looping.
  run(); // the router sets its defaults when it first runs
  deref<tb::router_state>(router).group_defaults.dead_letter = "y.dead";
  send_frame(a, join_frame(41, 1, "y.>", "y", 0, {}));
  run();
  auto errors = a.sink->of_kind(kind::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().error().reason(), "invalid_request");
  EXPECT_NE(errors[0].error().error().message().find("y.dead"),
            std::string::npos);
  EXPECT_FALSE(group("y"));
}

} // namespace
} // namespace tb::test
