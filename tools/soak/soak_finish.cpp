// The end of a tinybroker-soak run: stopping the roles and the broker (or
// every node), checking the logs against the broker's counters, and for a
// cluster soak where the roles go and how the victim node dies.

#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

#include "tools/soak/soak_run.hpp"

namespace tb::soak::detail {

void run::stop_roles() {
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->stop(SIGTERM, 10s) != 0)
      fail("worker " + std::to_string(i) + " did not stop cleanly");
  std::vector<child*> subs{dead_letters_.get()};
  for (auto& s : subscribers_)
    subs.push_back(s.get());
  for (auto* s : subs)
    if (s->stop(SIGTERM, 10s) != 0)
      fail("a subscriber's stream ended early or it did not stop cleanly");
}

void run::check() {
  for (auto& path : worker_logs_)
    ledger_.read_worker_log(path);
  ledger_.read_dead_letter_log(dir_ + "/dead-letters.log");
  report_.group = ledger_.check();
  auto& g = report_.group;
  if (g.lost > 0)
    fail(std::to_string(g.lost) + " messages were lost");
  if (g.duplicates > 0)
    fail(std::to_string(g.duplicates) +
         " messages were delivered twice with the same attempt number");
  if (g.rejected_not_dead_lettered > 0)
    fail(std::to_string(g.rejected_not_dead_lettered) +
         " rejected messages did not reach the dead letter topic");
  if (g.unknown > 0)
    fail(std::to_string(g.unknown) + " delivered keys were never published");
  // A promoted replica starts the group's counters again (it holds the
  // messages, not the history): after an owner kill they cannot match.
  if (report_.owner_kills == 0 &&
      (report_.broker_received != g.published ||
       report_.broker_acked != g.acked ||
       report_.broker_dead_lettered != g.dead_lettered))
    fail("the broker's group counters (received, acked, dead-lettered) "
         "differ from the logs");
  for (unsigned i = 0; i < cfg_.subscribers; ++i) {
    std::ifstream in{dir_ + "/subscriber-" + std::to_string(i) + ".log"};
    std::string word;
    uint64_t received = 0, dropped = 0, out_of_order = 0;
    in >> word >> received >> word >> dropped >> word >> out_of_order;
    report_.fanout_received += received;
    report_.fanout_dropped += dropped;
    report_.fanout_out_of_order += out_of_order;
    // A group's "may or may not" refusal leaves the fan-out copies routed.
    auto seen = received + dropped;
    if (seen < g.published || seen > g.published + g.refused)
      ++report_.fanout_incomplete;
  }
  if (report_.worker_exits > 0)
    fail(std::to_string(report_.worker_exits) +
         " workers exited without being killed (a stream ended early)");
  if (report_.fanout_out_of_order > 0)
    fail("fan-out subscribers saw messages out of publish order");
  if (report_.fanout_incomplete > 0)
    fail("fan-out subscribers' received + dropped is below published or "
         "above published + refused");
  report_.rss_result =
      judge_rss(report_.rss, cfg_.rss_margin_pct, cfg_.rss_margin_mib);
  if (!report_.rss_result.flat)
    fail("the broker's RSS grew beyond the allowed margin");
}

// Cluster: the group lives where the cluster put it (its owner node, which
// keeps the RSS watch); the publishers, the dead letter subscriber and half
// the fan-out subscribers and workers use another node that stays up; the
// other workers use the node that gets killed. Every delivery crosses nodes.
bool run::place_roles(const pb::GroupInfo& info) {
  auto owner = cluster_->index_of(info.owner_node());
  if (!owner) {
    std::fprintf(stderr,
                 "tinybroker-soak: the group's owner \"%s\" is not a "
                 "node of this cluster\n",
                 info.owner_node().c_str());
    return false;
  }
  owner_ = *owner;
  stable_ = (owner_ + 1) % cluster_->size();
  victim_ = (owner_ + 2) % cluster_->size();
  // With a replica, the publishers use the third node: the group moves
  // between its owner and its replica's node as they are killed in turn.
  auto replica = cluster_->index_of(info.replica_node());
  if (replica && *replica != owner_ && *replica == stable_)
    std::swap(stable_, victim_);
  report_.owner_node = cluster_->name(owner_);
  report_.stable_node = cluster_->name(stable_);
  report_.victim_node = cluster_->name(victim_);
  if (cfg_.replicas > 0)
    report_.victim_node += " and " + cluster_->name(owner_);
  server_ = cluster_->address(stable_);
  // With replicas the owner's node gets killed: the RSS watch stays on the
  // publishers' node.
  broker_pid_ = cluster_->pid(cfg_.replicas > 0 ? stable_ : owner_);
  conn_ = std::make_unique<client::connection>(server_,
                                               client::security_from_env());
  return conn_->wait_connected(20s);
}

// Cluster: the victim's host dies (its workers, then the node, with
// SIGKILL) and comes back: the node, then its workers. With replicas the
// victim is the group's first owner or the other node, in turn.
bool run::kill_victim() {
  auto victim = pick_victim();
  for (std::size_t slot = 0; slot < workers_.size(); ++slot)
    if (worker_node(slot) == victim)
      workers_[slot]->stop(SIGKILL, 10s);
  cluster_->kill(victim);
  ++report_.node_kills;
  if (!cluster_->start(victim)) {
    fail("node " + cluster_->name(victim) + " did not start again");
    return false;
  }
  for (std::size_t slot = 0; slot < workers_.size(); ++slot)
    if (worker_node(slot) == victim)
      start_worker(slot);
  return true;
}

std::size_t run::pick_victim() {
  auto turn = report_.node_kills % 2;
  if (cfg_.replicas == 0)
    return victim_;
  std::optional<std::size_t> owner, replica;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  pb::ListGroupsReply reply;
  if (conn_->stub().ListGroups(&ctx, pb::ListGroupsRequest{}, &reply).ok())
    for (auto& group : reply.groups())
      if (group.name() == group_) {
        owner = cluster_->index_of(group.owner_node());
        replica = cluster_->index_of(group.replica_node());
      }
  // The owner and the replica take turns; the publishers' node stays up.
  auto wanted = turn == 0 ? owner : replica;
  auto other = turn == 0 ? replica : owner;
  auto victim = turn == 1 ? owner_ : victim_;
  if (wanted && *wanted != stable_)
    victim = *wanted;
  else if (other && *other != stable_)
    victim = *other;
  if (owner && victim == *owner)
    ++report_.owner_kills;
  else if (replica && victim == *replica)
    ++report_.replica_kills;
  return victim;
}

void run::stop_broker() {
  if (cluster_) {
    auto start = clock_type::now();
    for (std::size_t i = 0; i < cluster_->size(); ++i)
      if (cluster_->stop(i, 30s) != 0)
        fail("node " + cluster_->name(i) + " did not exit 0 on SIGTERM");
    report_.broker_stop_seconds = seconds(start, clock_type::now());
    report_.broker_exit = report_.failures.empty() ? 0 : -1;
    return;
  }
  if (!broker_) {
    // A broker we were given: leave it as we found it.
    pb::DeleteGroupRequest request;
    request.set_name(group_);
    pb::DeleteGroupReply reply;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    conn_->stub().DeleteGroup(&ctx, request, &reply);
    return;
  }
  auto start = clock_type::now();
  auto code = broker_->stop(SIGTERM, 30s);
  report_.broker_stop_seconds = seconds(start, clock_type::now());
  report_.broker_exit = code.value_or(-1);
  if (code != 0)
    fail("the broker did not exit 0 on SIGTERM");
}

} // namespace tb::soak::detail
