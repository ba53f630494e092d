// The fixture of the tests of a session whose group lives on a node that is
// lost (tests/actors/group_node_loss_test.cpp,
// group_node_loss_rejoin_test.cpp).
//
// A test coordinator has one node, so a lost node is simulated: the sessions
// treat local groups as remote (`group_watch::local_as_remote`) and a test
// kills a group with `remote_link_unreachable`, the exit reason CAF 0.17
// gives the proxies of a lost node's actors. A remote request whose node
// dies is never answered; a stand-in group that holds every enqueue and
// request without answering plays that part.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "tests/actors/group_fixture.hpp"

namespace tb::test {

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
inline group_actor::behavior_type
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
  /// Stops the stand-in group if a test installed one.
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
    for (auto& frame :
         s.sink->of_kind(pb::ServerFrame::KindCase::kPublishConfirm))
      result.push_back(frame.publish_confirm());
    return result;
  }

  /// The stand-in group of `install_silent` (null before).
  group_actor silent;
};

} // namespace tb::test
