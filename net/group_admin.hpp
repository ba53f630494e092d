// The group administration calls of the Broker service: CreateGroup,
// DeleteGroup, ListGroups. Each call is answered by a one-shot actor that
// asks the router, so no gRPC thread ever blocks.

#pragma once

#include <caf/actor_system.hpp>
#include <grpcpp/grpcpp.h>

#include "actors/protocol.hpp"
#include "tinybroker.pb.h"

namespace tb {

/// Sets `out` to `in` with `defaults` for its zero or empty fields (and
/// OVERFLOW_UNSPECIFIED); returns an INVALID_ARGUMENT error naming the field
/// when a value lies outside its domain (spec 9).
error_info from_proto(const tinybroker::v1::GroupSettings& in,
                      const group_settings& defaults, group_settings& out);

/// Writes `in` as the wire form.
void to_proto(const group_info& in, tinybroker::v1::GroupInfo& out);

/// Answers CreateGroup through `reactor`.
void create_group_call(caf::actor_system& sys, router_actor router,
                       const group_settings& defaults,
                       const tinybroker::v1::CreateGroupRequest& req,
                       tinybroker::v1::GroupInfo* reply,
                       grpc::ServerUnaryReactor* reactor);

/// Answers DeleteGroup through `reactor`.
void delete_group_call(caf::actor_system& sys, router_actor router,
                       const std::string& name,
                       tinybroker::v1::DeleteGroupReply* reply,
                       grpc::ServerUnaryReactor* reactor);

/// Answers ListGroups through `reactor`.
void list_groups_call(caf::actor_system& sys, router_actor router,
                      tinybroker::v1::ListGroupsReply* reply,
                      grpc::ServerUnaryReactor* reactor);

} // namespace tb
