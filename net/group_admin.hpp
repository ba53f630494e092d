// The group administration calls of the Broker service: CreateGroup,
// DeleteGroup, PurgeGroup, ListGroups. Each call is answered by a one-shot
// actor that asks the router, so no gRPC thread ever blocks.

#pragma once

#include <caf/actor_system.hpp>
#include <grpcpp/grpcpp.h>

#include "actors/protocol.hpp"
#include "net/console_api.hpp"
#include "net/log_actor.hpp"
#include "net/unary_done.hpp"
#include "tinybroker.pb.h"

namespace tb {

/// Sets `out` to `in` with `defaults` for its zero or empty fields (and
/// OVERFLOW_UNSPECIFIED); returns an INVALID_ARGUMENT error naming the field
/// when a value lies outside its domain (spec 9).
error_info from_proto(const tinybroker::v1::GroupSettings& in,
                      const group_settings& defaults, group_settings& out);

/// Writes `in` as the wire form.
void to_proto(const group_info& in, tinybroker::v1::GroupInfo& out);

/// Answers CreateGroup through `done`; a refusal goes to `report`.
void create_group_call(caf::actor_system& sys, router_actor router,
                       const group_settings& defaults,
                       const tinybroker::v1::CreateGroupRequest& req,
                       tinybroker::v1::GroupInfo* reply, unary_done done,
                       refusal_reporter report);

/// Answers DeleteGroup through `done`; a refusal goes to `report`.
void delete_group_call(caf::actor_system& sys, router_actor router,
                       const std::string& name,
                       tinybroker::v1::DeleteGroupReply* reply, unary_done done,
                       refusal_reporter report);

/// Answers PurgeGroup through `done`; a refusal goes to `report`.
void purge_group_call(caf::actor_system& sys, router_actor router,
                      const std::string& name,
                      tinybroker::v1::PurgeGroupReply* reply, unary_done done,
                      refusal_reporter report);

/// Runs a console action (net/console_api.hpp) through the router: create
/// (with `defaults` for all but the pattern), delete or purge; hands the
/// dropped or purged count (0 for create) or the error to `done`, once.
void group_action_call(caf::actor_system& sys, router_actor router,
                       const group_settings& defaults,
                       const group_action& action, action_callback done);

/// Answers ListGroups through `done`; a refusal goes to `report`.
void list_groups_call(caf::actor_system& sys, router_actor router,
                      tinybroker::v1::ListGroupsReply* reply, unary_done done,
                      refusal_reporter report);

} // namespace tb
