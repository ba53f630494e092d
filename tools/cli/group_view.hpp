// The consumer group views shared by `groups ls` and `stats`: the group
// table, the member table and a group's JSON object.

#pragma once

#include <ostream>
#include <string_view>
#include <vector>

#include "tinybroker.pb.h"
#include "tools/cli/json_writer.hpp"

namespace tb::cli {

/// Groups to print, in the order to print them.
using group_list = std::vector<const tinybroker::v1::GroupInfo*>;

/// Returns the groups of `groups` in their order.
group_list
list_of(const google::protobuf::RepeatedPtrField<tinybroker::v1::GroupInfo>&
            groups);

/// Returns the configuration name of an overflow policy: "reject" or
/// "drop_oldest".
const char* overflow_name(tinybroker::v1::Overflow overflow);

/// Prints `groups` as a table of their pattern and counters: NAME, PATTERN,
/// MEMBERS, PENDING, IN_FLIGHT, OLDEST_PENDING, RECEIVED, DELIVERED, ACKED,
/// REDELIVERED, DEAD_LETTERED, DROPPED, and RECV/S and ACK/S as "1s/10s"
/// rates; "no groups" when there are none.
void print_group_table(std::ostream& out, const group_list& groups);

/// Prints the members of `groups` as one table, a row per member: GROUP,
/// PEER, SUBSCRIPTION, IN_FLIGHT, CREDIT, MAX_IN_FLIGHT, ACKS, NACKS,
/// REJECTS, OLDEST_IN_FLIGHT, STATE; "no members" when there are none.
void print_member_table(std::ostream& out, const group_list& groups);

/// Writes `info` as a JSON object (member `name`, or an array element) with
/// its settings and counters, and its members when `with_members` is set.
void write_group(json_writer& out, const tinybroker::v1::GroupInfo& info,
                 bool with_members, std::string_view name = {});

} // namespace tb::cli
