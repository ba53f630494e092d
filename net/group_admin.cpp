#include "net/group_admin.hpp"

#include <chrono>

#include <caf/event_based_actor.hpp>

#include "config/config_loader.hpp"
#include "net/status.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// How long an admin call waits for the router.
constexpr auto admin_timeout = std::chrono::seconds(10);

// Finishes a call with `err`, which `report` logs (rate limited).
void refuse(const unary_done& done, const refusal_reporter& report,
            const error_info& err) {
  report(err);
  done(to_grpc_status(err));
}

// Spawns a one-shot actor that sends `xs...` to the router and hands the
// reply to `on_reply` (which fills the gRPC reply), then finishes the call.
template <class T, class OnReply, class... Ts>
void ask_router(caf::actor_system& sys, router_actor router, unary_done done,
                refusal_reporter report, OnReply on_reply, Ts... xs) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(router, admin_timeout, xs...)
        .then(
            [=](T& result) mutable {
              on_reply(result);
              done(grpc::Status::OK);
            },
            [=](caf::error& err) { refuse(done, report, to_error_info(err)); });
  });
}

} // namespace

error_info from_proto(const pb::GroupSettings& in,
                      const group_settings& defaults, group_settings& out) {
  out = defaults;
  out.pattern = in.pattern();
  if (in.ack_wait_ms() != 0) {
    if (in.ack_wait_ms() > detail::max_duration_ms)
      return make_error_info(ec::invalid_request,
                             "settings.ack_wait_ms " +
                                 std::to_string(in.ack_wait_ms()) +
                                 " is more than 8760h");
    out.ack_wait = std::chrono::milliseconds{in.ack_wait_ms()};
  }
  if (in.unlimited_deliveries())
    out.max_deliveries = 0;
  else if (in.max_deliveries() != 0)
    out.max_deliveries = in.max_deliveries();
  if (in.max_pending_messages() != 0)
    out.max_pending_messages = in.max_pending_messages();
  if (in.max_pending_bytes() != 0)
    out.max_pending_bytes = in.max_pending_bytes();
  switch (in.overflow()) {
  case pb::OVERFLOW_UNSPECIFIED:
    break;
  case pb::OVERFLOW_REJECT:
    out.overflow = overflow_policy::reject;
    break;
  case pb::OVERFLOW_DROP_OLDEST:
    out.overflow = overflow_policy::drop_oldest;
    break;
  default:
    return make_error_info(ec::invalid_request,
                           "settings.overflow " +
                               std::to_string(in.overflow()) +
                               " is not a defined Overflow value (1 = "
                               "OVERFLOW_REJECT, 2 = OVERFLOW_DROP_OLDEST, "
                               "0 = the configured default)");
  }
  if (!in.dead_letter().empty())
    out.dead_letter = in.dead_letter();
  if (!in.policy().empty())
    out.policy = in.policy();
  if (in.max_age_ms() != 0) {
    if (in.max_age_ms() > detail::max_duration_ms)
      return make_error_info(ec::invalid_request,
                             "settings.max_age_ms " +
                                 std::to_string(in.max_age_ms()) +
                                 " is more than 8760h");
    out.max_age = std::chrono::milliseconds{in.max_age_ms()};
  }
  switch (in.on_expiry()) {
  case pb::EXPIRY_ACTION_UNSPECIFIED:
    break;
  case pb::EXPIRY_DEAD_LETTER:
    out.on_expiry = expiry_action::dead_letter;
    break;
  case pb::EXPIRY_DROP:
    out.on_expiry = expiry_action::drop;
    break;
  default:
    return make_error_info(ec::invalid_request,
                           "settings.on_expiry " +
                               std::to_string(in.on_expiry()) +
                               " is not a defined ExpiryAction value (1 = "
                               "EXPIRY_DEAD_LETTER, 2 = EXPIRY_DROP, 0 = the "
                               "configured default)");
  }
  if (in.max_priority() > max_message_priority)
    return make_error_info(ec::invalid_request,
                           "settings.max_priority " +
                               std::to_string(in.max_priority()) +
                               " is more than 9 (priorities go from 0 to 9)");
  if (in.max_priority() != 0)
    out.max_priority = static_cast<uint8_t>(in.max_priority());
  if (in.dedup_window_ms() != 0) {
    if (in.dedup_window_ms() > detail::max_duration_ms)
      return make_error_info(ec::invalid_request,
                             "settings.dedup_window_ms " +
                                 std::to_string(in.dedup_window_ms()) +
                                 " is more than 8760h");
    out.dedup_window = std::chrono::milliseconds{in.dedup_window_ms()};
  }
  // Replicas (issue 32): 0 takes the default; the group checks refuse > 1.
  if (in.replicas() != 0)
    out.replicas = in.replicas();
  return {};
}

void to_proto(const group_info& in, pb::GroupInfo& out) {
  out.set_name(in.name);
  out.set_owner_node(in.owner_node);
  out.set_replica_node(in.replica_node);
  out.set_term(in.term);
  out.set_replica_synced(in.replica_synced);
  out.set_replica_unacked(in.replica_unacked);
  out.set_confirmed_unreplicated(in.confirmed_unreplicated);
  auto& s = *out.mutable_settings();
  s.set_pattern(in.settings.pattern);
  s.set_ack_wait_ms(static_cast<uint32_t>(in.settings.ack_wait.count()));
  s.set_max_deliveries(in.settings.max_deliveries);
  s.set_unlimited_deliveries(in.settings.max_deliveries == 0);
  s.set_max_pending_messages(in.settings.max_pending_messages);
  s.set_max_pending_bytes(in.settings.max_pending_bytes);
  s.set_overflow(in.settings.overflow == overflow_policy::drop_oldest
                     ? pb::OVERFLOW_DROP_OLDEST
                     : pb::OVERFLOW_REJECT);
  s.set_dead_letter(in.settings.dead_letter);
  s.set_policy(in.settings.policy);
  s.set_max_age_ms(static_cast<uint64_t>(in.settings.max_age.count()));
  s.set_on_expiry(in.settings.on_expiry == expiry_action::drop
                      ? pb::EXPIRY_DROP
                      : pb::EXPIRY_DEAD_LETTER);
  s.set_max_priority(in.settings.max_priority);
  s.set_dedup_window_ms(
      static_cast<uint64_t>(in.settings.dedup_window.count()));
  s.set_replicas(in.settings.replicas);
  auto& c = *out.mutable_counters();
  c.set_pending(in.counters.pending);
  c.set_in_flight(in.counters.in_flight);
  c.set_members(in.counters.members);
  c.set_received(in.counters.received);
  c.set_delivered(in.counters.delivered);
  c.set_acked(in.counters.acked);
  c.set_redelivered(in.counters.redelivered);
  c.set_dead_lettered(in.counters.dead_lettered);
  c.set_dropped(in.counters.dropped);
  c.set_stale_answers(in.counters.stale_answers);
  c.set_refused(in.counters.refused);
  c.set_held_bytes(in.counters.held_bytes);
  c.set_oldest_pending_age_ms(in.counters.oldest_pending_age_ms);
  c.set_received_per_second_1s(in.counters.received_per_second_1s);
  c.set_received_per_second_10s(in.counters.received_per_second_10s);
  c.set_acked_per_second_1s(in.counters.acked_per_second_1s);
  c.set_acked_per_second_10s(in.counters.acked_per_second_10s);
  c.set_expired(in.counters.expired);
  c.set_stalled_members(in.counters.stalled_members);
  c.set_expired_ttl(in.counters.expired_ttl);
  c.set_scheduled(in.counters.scheduled);
  c.set_next_due_unix_ms(in.counters.next_due_unix_ms);
}

void create_group_call(caf::actor_system& sys, router_actor router,
                       const group_settings& defaults,
                       const pb::CreateGroupRequest& req, pb::GroupInfo* reply,
                       unary_done done, refusal_reporter report) {
  if (req.settings().pattern().empty()) {
    refuse(done, report,
           make_error_info(ec::invalid_pattern,
                           "CreateGroup needs settings.pattern"));
    return;
  }
  group_settings settings;
  if (auto err = from_proto(req.settings(), defaults, settings)) {
    refuse(done, report, err);
    return;
  }
  ask_router<group_info>(
      sys, router, std::move(done), std::move(report),
      [reply](group_info& info) { to_proto(info, *reply); }, create_atom_v,
      req.name(), std::move(settings));
}

void delete_group_call(caf::actor_system& sys, router_actor router,
                       const std::string& name, pb::DeleteGroupReply* reply,
                       unary_done done, refusal_reporter report) {
  ask_router<uint64_t>(
      sys, router, std::move(done), std::move(report),
      [reply](uint64_t dropped) { reply->set_dropped_messages(dropped); },
      delete_atom_v, name);
}

void purge_group_call(caf::actor_system& sys, router_actor router,
                      const std::string& name, pb::PurgeGroupReply* reply,
                      unary_done done, refusal_reporter report) {
  ask_router<uint64_t>(
      sys, router, std::move(done), std::move(report),
      [reply](uint64_t purged) { reply->set_purged_messages(purged); },
      purge_atom_v, name);
}

void group_action_call(caf::actor_system& sys, router_actor router,
                       const group_settings& defaults,
                       const group_action& action, action_callback done) {
  sys.spawn([=](caf::event_based_actor* self) {
    auto failed = [done](caf::error& err) {
      done(0, to_error_info(err));
    };
    auto counted = [done](uint64_t n) {
      done(n, error_info{});
    };
    if (action.kind == "create") {
      auto settings = defaults;
      settings.pattern = action.pattern;
      self->request(router, admin_timeout, create_atom_v, action.name,
                    std::move(settings))
          .then([done](group_info&) { done(0, error_info{}); }, failed);
    } else if (action.kind == "delete") {
      self->request(router, admin_timeout, delete_atom_v, action.name)
          .then(counted, failed);
    } else if (action.kind == "purge") {
      self->request(router, admin_timeout, purge_atom_v, action.name)
          .then(counted, failed);
    } else {
      done(0, make_error_info(ec::invalid_request,
                              "no group action \"" + action.kind + "\""));
    }
  });
}

void list_groups_call(caf::actor_system& sys, router_actor router,
                      pb::ListGroupsReply* reply, unary_done done,
                      refusal_reporter report) {
  ask_router<std::vector<group_info>>(
      sys, router, std::move(done), std::move(report),
      [reply](std::vector<group_info>& groups) {
        for (auto& info : groups)
          to_proto(info, *reply->add_groups());
      },
      list_atom_v);
}

} // namespace tb
