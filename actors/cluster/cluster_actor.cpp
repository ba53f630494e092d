#include "actors/cluster/cluster_actor.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <caf/actor_cast.hpp>
#include <caf/node_id.hpp>
#include <caf/sec.hpp>

#include "log/log.hpp"

namespace tb {

namespace {

// Returns the wall clock in Unix milliseconds (Stats' `since` times).
uint64_t cluster_wall_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Returns the text of a CAF error, with the context string of tinybroker's
// own errors.
std::string cluster_error_text(const caf::error& err) {
  auto info = to_error_info(err);
  return info.text.empty() ? caf::to_string(err) : info.text;
}

// Answers everyone waiting for readiness once the book says the node is
// ready, and logs it once.
void cluster_check_ready(cluster_pointer self) {
  auto& st = self->state;
  if (st.ready || !st.book.ready())
    return;
  st.ready = true;
  size_t synced = 0;
  auto peers = st.book.view();
  std::string names;
  for (auto& p : peers)
    if (p.state == "synced") {
      ++synced;
      names += (names.empty() ? "" : " ") + p.name;
    }
  log::info("cluster node ready",
            {{"node", st.settings.config.node_name},
             {"synced_peers", static_cast<uint64_t>(synced)},
             {"peers", names.empty() ? std::string_view{"none"}
                                     : std::string_view{names}},
             {"configured_peers",
              static_cast<uint64_t>(st.settings.config.peers.size())}});
  for (auto& rp : st.waiting)
    rp.deliver(caf::ok_atom_v);
  st.waiting.clear();
}

// Counts the nodes this node sees (itself and the configured peers that
// greeted it and are not down) and publishes the majority rule's verdict
// to the sessions; logs once when quorum is lost and once when it is back.
void cluster_count_quorum(cluster_pointer self) {
  auto& st = self->state;
  auto& cfg = st.settings.config;
  auto is_configured = [&](const std::string& name) {
    auto* peer = st.book.find(name);
    if (peer != nullptr && std::find(cfg.peers.begin(), cfg.peers.end(),
                                     peer->address) != cfg.peers.end())
      return true;
    // A node announcing another spelling of its address (a host name).
    for (auto& address : cfg.peers)
      if (st.book.slot(address).name == name)
        return true;
    return false;
  };
  auto configured = static_cast<uint32_t>(cfg.configured_nodes());
  uint32_t visible = 1;
  for (auto& entry : st.peers)
    if (is_configured(entry.first))
      ++visible;
  visible = std::min(visible, configured);
  auto before = st.quorum;
  st.quorum = st.settings.quorum->set(visible, configured, cfg.quorum);
  if (before.has_quorum == st.quorum.has_quorum)
    return;
  auto lost = !st.quorum.has_quorum;
  log::write(lost ? log::level::warn : log::level::info,
             lost ? "cluster quorum lost: group publishes, joins and acks "
                    "are refused, fan-out is served locally"
                  : "cluster quorum back: group operations run again",
             {{"node", cfg.node_name},
              {"visible_nodes", static_cast<uint64_t>(visible)},
              {"configured_nodes", static_cast<uint64_t>(configured)},
              {"needed", static_cast<uint64_t>(quorum_majority(configured))}});
}

// Schedules a dial of `address` after `delay`.
void cluster_schedule_dial(cluster_pointer self, const std::string& address,
                           std::chrono::milliseconds delay) {
  auto& s = self->state.book.slot(address);
  s.dialing = true;
  self->delayed_send(self, delay, dial_atom_v, address);
}

// Accepts the greeting `hello` judged `verdict` (fresh or rejoin): watches
// the peer and asks the router to sync with it.
void cluster_accept(cluster_pointer self, const cluster_hello& hello,
                    hello_verdict::kind_t verdict) {
  auto& st = self->state;
  auto& peer = st.book.record_up(hello, cluster_wall_ms());
  st.peers[hello.name] =
      cluster_peer_handles{hello.cluster, hello.router, hello.epoch};
  self->monitor(hello.cluster);
  cluster_count_quorum(self);
  log::info(verdict == hello_verdict::rejoin ? "cluster peer rejoined"
                                             : "cluster peer joined",
            {{"node", st.settings.config.node_name},
             {"peer", hello.name},
             {"address", hello.address},
             {"epoch", hello.epoch},
             {"peer_node_id", hello.node_id},
             {"reconnects", peer.reconnects}});
  auto name = hello.name;
  auto epoch = hello.epoch;
  // Bounded: a peer that dies during the sync must not hold the node.
  auto timeout = 2 * st.settings.config.dead_after;
  self->request(st.settings.router, timeout, peer_up_atom_v, name, hello.router)
      .then(
          [self, name, epoch](caf::ok_atom) {
            self->state.book.record_synced(name, epoch, cluster_wall_ms());
            log::info("cluster peer synced",
                      {{"node", self->state.settings.config.node_name},
                       {"peer", name}});
            cluster_check_ready(self);
          },
          [self, name, epoch](caf::error& err) {
            auto text = "the router did not sync: " + cluster_error_text(err);
            self->state.book.record_synced(name, epoch, cluster_wall_ms(),
                                           text);
            log::warn("cluster peer sync failed",
                      {{"node", self->state.settings.config.node_name},
                       {"peer", name},
                       {"error", text}});
            cluster_check_ready(self);
          });
}

// Takes a greeting that came in (`incoming`) or answered this node's own
// (`answer`); returns the refusal's reason, or empty if it was accepted.
std::string cluster_take_hello(cluster_pointer self,
                               const cluster_hello& hello) {
  auto verdict = self->state.book.judge(hello);
  if (verdict.kind == hello_verdict::refuse)
    return verdict.reason;
  if (verdict.kind != hello_verdict::same)
    cluster_accept(self, hello, verdict.kind);
  return {};
}

// Records a failed dial of `address` and schedules the next one; logs
// `what` once per new `error` (not once per retry).
void cluster_dial_failed(cluster_pointer self, const std::string& address,
                         const std::string& error, bool refused,
                         std::string_view what) {
  auto& st = self->state;
  auto& slot = st.book.slot(address);
  auto repeated = slot.last_error == error;
  slot.dialing = false;
  auto delay =
      st.book.record_dial_failed(address, error, cluster_wall_ms(), refused);
  // Without quorum the node looks for a majority promptly.
  if (!st.quorum.has_quorum)
    delay = std::min(delay, quorum_redial_backoff);
  if (!repeated)
    log::write(refused ? log::level::error : log::level::warn, what,
               {{"node", st.settings.config.node_name},
                {"address", address},
                {"error", error}});
  cluster_check_ready(self);
  if (st.book.should_dial(address))
    cluster_schedule_dial(self, address, delay);
}

// Dials `address`: connect through the middleman, then greet.
void cluster_dial(cluster_pointer self, const std::string& address) {
  auto& st = self->state;
  auto colon = address.rfind(':');
  auto host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[')
    host = host.substr(1, host.size() - 2);
  auto port = static_cast<uint16_t>(std::stoul(address.substr(colon + 1)));
  st.book.slot(address).dialing = true;
  auto timeout = st.settings.config.dead_after;
  auto on_answer = [self, address](cluster_hello& answer) {
    auto& st = self->state;
    if (auto reason = cluster_take_hello(self, answer); !reason.empty())
      return cluster_dial_failed(self, address, reason, true,
                                 "cluster: this node refused the peer's "
                                 "greeting");
    st.book.slot(address).dialing = false;
    st.book.record_met(address, answer.name, cluster_wall_ms());
    cluster_count_quorum(self);
    cluster_check_ready(self);
  };
  auto on_refusal = [self, address](caf::error& err) {
    // A refusal names its reason; anything else is a timeout or a loss.
    auto refused = to_error_info(err).code == ec::invalid_request;
    cluster_dial_failed(self, address, cluster_error_text(err), refused,
                        refused ? "cluster: the peer refused this node"
                                : "cluster: the peer did not answer the "
                                  "greeting; retrying with backoff");
  };
  self->request(st.settings.dialer, timeout, caf::connect_atom_v, host, port)
      .then(
          [self, address, timeout, on_answer,
           on_refusal](caf::node_id&, caf::strong_actor_ptr& ptr,
                       std::set<std::string>&) {
            if (!ptr)
              return cluster_dial_failed(
                  self, address, "no cluster actor at this address", false,
                  "cluster: peer not reachable; "
                  "retrying with backoff");
            auto peer = caf::actor_cast<caf::actor>(ptr);
            self->request(peer, timeout, hello_atom_v, self->state.hello)
                .then(on_answer, on_refusal);
          },
          [self, address](caf::error& err) {
            auto text = "cannot connect: " + cluster_error_text(err);
            if (err == caf::sec::incompatible_application_ids)
              text += " (the node there runs another cluster version: its "
                      "app identifier is not " +
                      self->state.settings.version + ")";
            cluster_dial_failed(
                self, address, text, false,
                "cluster: peer not reachable; retrying with backoff");
          });
}

// Handles the down message of a peer's cluster actor: the node is gone.
void cluster_peer_gone(cluster_pointer self, const caf::down_msg& msg) {
  auto& st = self->state;
  for (auto i = st.peers.begin(); i != st.peers.end(); ++i) {
    if (i->second.cluster.address() != msg.source)
      continue;
    auto name = i->first;
    st.peers.erase(i);
    log::warn("cluster peer down", {{"node", st.settings.config.node_name},
                                    {"peer", name},
                                    {"reason", caf::to_string(msg.reason)}});
    self->send(st.settings.router, peer_down_atom_v, name);
    cluster_count_quorum(self);
    for (auto& address : st.book.record_down(name, cluster_wall_ms()))
      if (st.book.should_dial(address))
        cluster_schedule_dial(self, address, cluster_first_backoff);
    return;
  }
}

} // namespace

cluster_actor::behavior_type cluster_actor_impl(cluster_pointer self,
                                                cluster_settings settings) {
  auto& st = self->state;
  st.settings = std::move(settings);
  auto& cfg = st.settings.config;
  st.book = cluster_book{cfg.node_name, st.settings.node_id,
                         st.settings.version, cfg.peers, cluster_wall_ms()};
  st.hello.name = cfg.node_name;
  st.hello.version = st.settings.version;
  st.hello.epoch = st.settings.epoch;
  st.hello.node_id = st.settings.node_id;
  st.hello.address = cfg.listen;
  st.hello.cluster = caf::actor_cast<caf::actor>(self);
  st.hello.router = caf::actor_cast<caf::actor>(st.settings.router);
  // A starting node of several has no quorum until it sees a majority.
  st.quorum = st.settings.quorum->set(
      1, static_cast<uint32_t>(cfg.configured_nodes()), cfg.quorum);
  if (!st.quorum.has_quorum)
    log::info(
        "cluster: no quorum until a majority of the configured nodes "
        "is seen; group operations are refused until then",
        {{"node", cfg.node_name},
         {"configured_nodes", static_cast<uint64_t>(st.quorum.configured)},
         {"needed",
          static_cast<uint64_t>(quorum_majority(st.quorum.configured))}});
  self->set_down_handler(
      [self](const caf::down_msg& msg) { cluster_peer_gone(self, msg); });
  for (auto& address : cfg.peers)
    cluster_dial(self, address);
  self->delayed_send(self, cfg.dead_after, tick_atom_v);
  cluster_check_ready(self); // no peers configured: ready at once
  return {
      [self](hello_atom,
             const cluster_hello& hello) -> caf::result<cluster_hello> {
        auto& st = self->state;
        if (auto reason = cluster_take_hello(self, hello); !reason.empty()) {
          log::error("cluster: this node refused a peer's greeting",
                     {{"node", st.settings.config.node_name},
                      {"peer", hello.name},
                      {"address", hello.address},
                      {"reason", reason}});
          return make_caf_error(ec::invalid_request, reason);
        }
        return st.hello;
      },
      [self](cluster_atom) -> caf::result<caf::ok_atom> {
        if (self->state.ready)
          return caf::ok_atom_v;
        auto rp = self->make_response_promise();
        self->state.waiting.push_back(rp);
        return rp;
      },
      [self](caf::get_atom, cluster_atom) {
        auto& st = self->state;
        cluster_view v;
        v.node_name = st.settings.config.node_name;
        v.listen = st.settings.config.listen;
        v.epoch = st.settings.epoch;
        v.ready = st.ready;
        v.peers = st.book.view();
        v.configured_nodes = st.quorum.configured;
        v.visible_nodes = st.quorum.visible;
        v.has_quorum = st.quorum.has_quorum;
        v.quorum_refusals = st.settings.quorum->refusals();
        v.memberships_lost = st.settings.rejoins->lost();
        v.memberships_rejoined = st.settings.rejoins->rejoined();
        v.memberships_ended = st.settings.rejoins->ended();
        return v;
      },
      [self](dial_atom, const std::string& address) {
        auto& st = self->state;
        st.book.slot(address).dialing = false;
        if (st.book.should_dial(address))
          cluster_dial(self, address);
      },
      [self](tick_atom) {
        self->state.book.record_deadline();
        cluster_check_ready(self);
      },
  };
}

} // namespace tb
