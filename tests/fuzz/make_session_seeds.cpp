// Writes the seed corpus of the ClientFrame fuzz target (fuzz_session):
//
//   build-fuzz/tests/fuzz/make_session_seeds tests/fuzz/corpus/session
//
// Each seed is a short, meaningful conversation in the format of
// session_input.hpp: fan-out, groups with acks, nacks, timeouts and a
// broken member, bad requests, a slow reader, a half-close mid-publish.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/fuzz/session_input.hpp"
#include "tinybroker.pb.h"

namespace {

namespace pb = tinybroker::v1;
using tb::fuzz::op;

// Builds the input of one seed, record by record.
class seed {
public:
  /// Adds a subscribe frame (a group join when `group` is not empty).
  seed& sub(size_t who, uint64_t id, const std::string& pattern,
            const std::string& group = {}, uint32_t max_in_flight = 0) {
    pb::ClientFrame f;
    f.set_request_id(++request_);
    f.mutable_subscribe()->set_subscription_id(id);
    f.mutable_subscribe()->set_pattern(pattern);
    f.mutable_subscribe()->set_group(group);
    f.mutable_subscribe()->set_max_in_flight(max_in_flight);
    return frame(who, f);
  }

  /// Adds a SubscribeBatch frame: one entry per pattern, ids from `first`,
  /// joining `group` when it is not empty.
  seed& sub_batch(size_t who, uint64_t first,
                  const std::vector<std::string>& patterns,
                  const std::string& group = {}) {
    pb::ClientFrame f;
    f.set_request_id(++request_);
    for (auto& pattern : patterns) {
      auto* sub = f.mutable_subscribe_batch()->add_subscriptions();
      sub->set_subscription_id(first++);
      sub->set_pattern(pattern);
      sub->set_group(group);
    }
    return frame(who, f);
  }

  /// Adds an unsubscribe frame.
  seed& unsub(size_t who, uint64_t id) {
    pb::ClientFrame f;
    f.set_request_id(++request_);
    f.mutable_unsubscribe()->set_subscription_id(id);
    return frame(who, f);
  }

  /// Adds a publish frame of `n` messages to `topic`.
  seed& pub(size_t who, const std::string& topic, int n = 1,
            bool confirm = true, const std::string& payload = "p") {
    pb::ClientFrame f;
    f.set_request_id(++request_);
    f.mutable_publish()->set_confirm(confirm);
    for (int i = 0; i < n; ++i) {
      auto* msg = f.mutable_publish()->add_messages();
      msg->set_topic(topic);
      msg->set_payload(payload + std::to_string(i));
    }
    return frame(who, f);
  }

  /// Adds an ack (0), nack with requeue (1), reject (2) or in-progress (3)
  /// frame for `ids`.
  seed& answer(size_t who, int how, const std::vector<uint64_t>& ids,
               uint32_t delay_ms = 0) {
    pb::ClientFrame f;
    f.set_request_id(++request_);
    for (auto id : ids) {
      if (how == 0)
        f.mutable_ack()->add_delivery_ids(id);
      else if (how == 3)
        f.mutable_in_progress()->add_delivery_ids(id);
      else
        f.mutable_nack()->add_delivery_ids(id);
    }
    if (how == 1 || how == 2) {
      f.mutable_nack()->set_requeue(how == 1);
      f.mutable_nack()->set_delay_ms(delay_ms);
    }
    return frame(who, f);
  }

  /// Adds a frame record of `f`.
  seed& frame(size_t who, const pb::ClientFrame& f) {
    tb::fuzz::put_frame(data, who, f.SerializeAsString());
    return *this;
  }

  /// Adds a frame record of raw `bytes` (which need not parse).
  seed& raw(size_t who, const std::string& bytes) {
    tb::fuzz::put_frame(data, who, bytes);
    return *this;
  }

  /// Adds a record without payload (busy, close, run).
  seed& then(op what, size_t who = 0, uint8_t bits = 0) {
    tb::fuzz::put_op(data, what, who, bits);
    return *this;
  }

  /// Lets (`steps` + 1) * 50 ms pass.
  seed& wait(uint8_t steps) {
    tb::fuzz::put_advance(data, steps);
    return *this;
  }

  /// The input so far.
  std::string data;

private:
  uint64_t request_ = 0;
};

} // namespace

/// Writes the seeds into the directory named by the only argument.
int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_session_seeds DIR\n");
    return 2;
  }
  std::vector<std::pair<std::string, seed>> seeds;
  seeds.emplace_back("fanout", seed{}
                                   .sub(1, 1, "orders.>")
                                   .then(op::run)
                                   .pub(0, "orders.eu.created", 2)
                                   .sub(0, 7, "orders.*.created")
                                   .pub(1, "orders.us.created", 1, false));
  seeds.emplace_back("group_ack", seed{}
                                      .sub(0, 1, "jobs.>", "workers", 2)
                                      .sub(1, 1, "jobs.>", "workers")
                                      .then(op::run)
                                      .pub(0, "jobs.a", 4)
                                      .then(op::run)
                                      .answer(0, 0, {1, 2})
                                      .answer(1, 0, {3, 4}));
  seeds.emplace_back("group_nack", seed{}
                                       .sub(0, 1, "jobs.*", "w")
                                       .pub(1, "jobs.a", 2)
                                       .then(op::run)
                                       .answer(0, 1, {1}, 100)
                                       .answer(0, 2, {2})
                                       .wait(3)
                                       .answer(0, 3, {3}));
  seeds.emplace_back("group_timeout", seed{}
                                          .sub(0, 1, "t.>", "slow")
                                          .sub(1, 2, "$dlq.slow")
                                          .pub(1, "t.x", 1)
                                          .wait(30)
                                          .wait(30)
                                          .wait(30)
                                          .wait(30));
  seeds.emplace_back("group_member_dies",
                     seed{}
                         .sub(0, 1, "q", "g")
                         .sub(1, 1, "q", "g")
                         .pub(0, "q", 3)
                         .then(op::run)
                         .then(op::close, 0, tb::fuzz::op_kill)
                         .then(op::run)
                         .answer(1, 0, {1, 2, 3, 4}));
  seeds.emplace_back("bad_requests",
                     seed{}
                         .sub(0, 1, "a..b")
                         .unsub(0, 9)
                         .frame(0, pb::ClientFrame{})
                         .pub(0, "$sys.x")
                         .pub(0, "big", 1, true, std::string(300, 'x'))
                         .pub(0, "many", 9)
                         .sub(0, 2, "x", "bad name!")
                         .answer(0, 0, {42}));
  seeds.emplace_back("slow_reader", seed{}
                                        .sub(1, 1, ">")
                                        .then(op::run)
                                        .then(op::busy, 1)
                                        .pub(0, "s.a", 8, false)
                                        .pub(0, "s.b", 8, false)
                                        .then(op::run)
                                        .then(op::busy, 1));
  seeds.emplace_back("close_mid_publish", seed{}
                                              .sub(1, 1, "c.>", "g")
                                              .pub(0, "c.d", 2)
                                              .then(op::close, 0)
                                              .then(op::run));
  seeds.emplace_back("unsubscribe", seed{}
                                        .sub(0, 1, "u.*")
                                        .sub(0, 2, "u.>", "ug")
                                        .pub(1, "u.v", 2)
                                        .unsub(0, 1)
                                        .unsub(0, 2)
                                        .then(op::run)
                                        .pub(1, "u.v", 1)
                                        .answer(0, 0, {1, 2}));
  seeds.emplace_back("subscribe_batch",
                     seed{}
                         .pub(1, "b.x", 1)
                         .sub_batch(0, 1, {"b.x", "b.*", "b..bad", "b.x"})
                         .sub_batch(0, 1, {"b.y"})
                         .sub_batch(0, 10, {"b.>"}, "bg")
                         .unsub(0, 2)
                         .pub(1, "b.x", 2)
                         .then(op::run)
                         .answer(0, 0, {1, 2}));
  seeds.emplace_back("malformed", seed{}.sub(0, 1, "m").raw(0, "\x0a\xff\xff"));
  for (auto& [name, s] : seeds) {
    auto path = std::string{argv[1]} + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << s.data;
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
