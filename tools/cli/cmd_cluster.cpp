// `tinybroker-cli cluster`: the nodes of the broker's cluster and the state
// of its link to each (the cluster section of Stats; docs/cluster.md).

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/json_writer.hpp"
#include "tools/cli/text_format.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// Returns how long ago `unix_ms` was, for people ("-" for never).
std::string cluster_since(uint64_t unix_ms) {
  if (unix_ms == 0)
    return "-";
  auto now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  return format_elapsed(now > unix_ms ? now - unix_ms : 0) + " ago";
}

// Prints the cluster section as JSON on one line.
void print_cluster_json(const pb::StatsReply& reply) {
  const auto& c = reply.cluster();
  json_writer out;
  out.open_object()
      .boolean("cluster", reply.has_cluster())
      .text("node_name", c.node_name())
      .text("listen", c.listen())
      .number("epoch", c.epoch())
      .boolean("ready", c.ready())
      .number("groups_owned", c.groups_owned())
      .number("groups_remote", c.groups_remote())
      .number("groups_lost", c.groups_lost())
      .number("group_conflicts", c.group_conflicts())
      .number("configured_nodes", c.configured_nodes())
      .number("visible_nodes", c.visible_nodes())
      .number("quorum_refusals", c.quorum_refusals())
      .number("promotions", c.promotions())
      .number("replicas_held", c.replicas_held())
      .number("stale_entries_refused", c.stale_entries_refused())
      .number("memberships_lost", c.memberships_lost())
      .number("memberships_rejoined", c.memberships_rejoined())
      .number("memberships_ended", c.memberships_ended())
      .open_array("peers");
  for (const auto& p : c.peers())
    out.open_object()
        .text("name", p.name())
        .text("address", p.address())
        .text("state", p.state())
        .number("since_unix_ms", p.since_unix_ms())
        .number("epoch", p.epoch())
        .number("reconnects", p.reconnects())
        .text("node_id", p.node_id())
        .text("last_error", p.last_error())
        .number("failed_dials", p.failed_dials())
        .number("interest_patterns", p.interest_patterns())
        .boolean("interest_synced", p.interest_synced())
        .number("messages_sent", p.messages_sent())
        .number("batches_sent", p.batches_sent())
        .number("messages_received", p.messages_received())
        .number("batches_received", p.batches_received())
        .number("dropped", p.dropped())
        .number("buffered_messages", p.buffered_messages())
        .number("buffered_bytes", p.buffered_bytes())
        .number("in_flight_batches", p.in_flight_batches())
        .number("lost", p.lost())
        .close_object();
  out.close_array().close_object();
  std::cout << out.str() << std::endl;
}

// Prints the cluster section for people: this node, then a line per peer.
void print_cluster_text(const pb::StatsReply& reply) {
  if (!reply.has_cluster()) {
    std::cout << "single node: the broker has no [cluster] in its config"
              << std::endl;
    return;
  }
  const auto& c = reply.cluster();
  std::size_t synced = 0;
  for (const auto& p : c.peers())
    synced += p.state() == "synced" ? 1 : 0;
  std::cout << "node " << c.node_name() << " at " << c.listen() << ", "
            << (c.ready() ? "ready" : "not ready") << ", " << synced << " of "
            << c.peers_size() << " peers synced\n";
  std::cout << "groups: " << c.groups_owned() << " owned here, "
            << c.groups_remote() << " on other nodes, " << c.groups_lost()
            << " lost with their owner, " << c.group_conflicts()
            << " two-owner conflicts\n";
  // The majority rule (docs/cluster.md): more than half, itself included.
  auto needed = c.configured_nodes() / 2 + 1;
  std::cout << "quorum: sees " << c.visible_nodes() << " of "
            << c.configured_nodes() << " configured nodes (needs " << needed
            << "), "
            << (c.visible_nodes() >= needed
                    ? "a majority"
                    : "NO majority: group operations are refused (unless "
                      "[cluster] quorum = \"none\")")
            << ", " << c.quorum_refusals() << " refused since the start\n";
  std::cout << "replicas: " << c.replicas_held() << " kept here, "
            << c.promotions() << " promoted to owner here, "
            << c.stale_entries_refused() << " stale entries refused\n";
  std::cout << "memberships: " << c.memberships_lost()
            << " lost their group's owner, " << c.memberships_rejoined()
            << " re-joined, " << c.memberships_ended() << " ended\n";
  std::ostringstream table;
  table << std::left << std::setw(16) << "PEER" << std::setw(22) << "ADDRESS"
        << std::setw(11) << "STATE" << std::setw(12) << "SINCE" << std::setw(11)
        << "RECONNECTS" << std::setw(11) << "SENT" << std::setw(11)
        << "RECEIVED" << std::setw(9) << "DROPPED"
        << "ERROR\n";
  for (const auto& p : c.peers())
    table << std::setw(16) << (p.name().empty() ? "?" : p.name())
          << std::setw(22) << p.address() << std::setw(11) << p.state()
          << std::setw(12) << cluster_since(p.since_unix_ms()) << std::setw(11)
          << p.reconnects() << std::setw(11) << p.messages_sent()
          << std::setw(11) << p.messages_received() << std::setw(9)
          << p.dropped() << p.last_error() << "\n";
  std::cout << table.str() << std::flush;
}

// Calls Stats (no topics) and prints its cluster section.
int run_cluster(const connection_options& opts) {
  auto conn = connect(opts);
  pb::StatsRequest request;
  pb::StatsReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + opts.timeout);
  check_status(conn->stub().Stats(&ctx, request, &reply), "Stats");
  if (opts.json)
    print_cluster_json(reply);
  else
    print_cluster_text(reply);
  return exit_ok;
}

} // namespace

command add_cluster_command(CLI::App& app, const connection_options& opts) {
  auto* cmd = app.add_subcommand(
      "cluster", "List the nodes of the broker's cluster and the state of "
                 "its link to each: connecting, syncing, synced, down or "
                 "refused (docs/cluster.md).");
  set_examples(*cmd, "  tinybroker-cli cluster\n"
                     "  tinybroker-cli --server 127.0.0.1:7500 cluster "
                     "--json | jq '.peers[].state'\n");
  return {cmd, [&opts] {
            return run_cluster(opts);
          }};
}

} // namespace tb::cli
