#include "net/cluster_node.hpp"

#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/publish.hpp>
#include <caf/node_id.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/cluster/cluster_actor.hpp"
#include "net/cluster_probe.hpp"
#include "net/log.hpp"
#include "tinybroker.pb.h"

namespace tb {

std::string cluster_version() {
  if (const char* id = std::getenv(cluster_app_identifier_env);
      id != nullptr && *id != '\0')
    return id;
  return cluster_app_identifier;
}

void configure_cluster(caf::actor_system_config& sys_cfg,
                       const broker_config& cfg) {
  const auto& c = cfg.cluster;
  sys_cfg.load<caf::io::middleman>();
  sys_cfg.set("middleman.app-identifiers",
              std::vector<std::string>{cluster_version()});
  sys_cfg.set("middleman.heartbeat-interval", caf::timespan{c.heartbeat});
  sys_cfg.set("middleman.connection-timeout", caf::timespan{c.dead_after});
  if (c.tls) {
    // Both sides present a certificate the CA verifies (CAF checks no
    // host name: the CA is what admits a node).
    sys_cfg.load<caf::openssl::manager>();
    sys_cfg.openssl_certificate = cfg.tls.cert;
    sys_cfg.openssl_key = cfg.tls.key;
    sys_cfg.openssl_cafile = cfg.tls.client_ca;
  }
}

error_info start_cluster(caf::actor_system& sys, const broker_config& cfg,
                         const router_actor& router, cluster_actor& out,
                         std::shared_ptr<quorum_state> quorum,
                         std::shared_ptr<rejoin_counters> rejoins) {
  const auto& c = cfg.cluster;
  cluster_settings settings;
  settings.config = c;
  settings.version = cluster_version();
  settings.node_id = caf::to_string(sys.node());
  settings.epoch = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  settings.router = router;
  settings.quorum = std::move(quorum);
  settings.rejoins = std::move(rejoins);
  // A look at the peer's port first, through TLS with `tls` (net/
  // cluster_probe.hpp): what is not a cluster node there must not reach
  // CAF's handshake.
  std::optional<cluster_probe_tls> probe_tls;
  if (c.tls)
    probe_tls = cluster_probe_tls{cfg.tls.cert, cfg.tls.key, cfg.tls.client_ca};
  settings.dialer = spawn_checked_dialer(
      sys,
      c.tls ? caf::actor_cast<caf::actor>(sys.openssl_manager().actor_handle())
            : caf::actor_cast<caf::actor>(sys.middleman().actor_handle()),
      c.dead_after / 2, std::move(probe_tls));
  auto colon = c.listen.rfind(':');
  auto host = c.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[')
    host = host.substr(1, host.size() - 2);
  auto port = static_cast<uint16_t>(std::stoul(c.listen.substr(colon + 1)));
  // It dials as soon as it runs; a peer that dials back before the port
  // below is bound fails once and retries after 100 ms. SO_REUSEADDR: a
  // restarted node binds its port again while the old connections linger
  // in TIME_WAIT (Linux still refuses a second listener on the port).
  auto cluster = sys.spawn(cluster_actor_impl, settings);
  // The checked dialer exits with the cluster actor.
  caf::anon_send(settings.dialer, caf::link_atom_v,
                 caf::actor_cast<caf::actor>(cluster));
  auto bound = c.tls ? caf::openssl::publish(cluster, port, host.c_str(), true)
                     : caf::io::publish(cluster, port, host.c_str(), true);
  if (!bound) {
    caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
    return make_error_info(
        ec::invalid_request,
        "cannot listen for the cluster on " + c.listen +
            " ([cluster] listen): " + sys.render(bound.error()));
  }
  log::info("cluster node listening",
            {{"node", c.node_name},
             {"listen", c.listen},
             {"node_id", settings.node_id},
             {"version", settings.version},
             {"tls", c.tls},
             {"peers", static_cast<uint64_t>(c.peers.size())}});
  out = cluster;
  return {};
}

bool wait_cluster_ready(caf::actor_system& sys, const cluster_actor& cluster,
                        std::chrono::milliseconds patience) {
  caf::scoped_actor self{sys};
  bool ready = false;
  self->request(cluster, patience, cluster_atom_v)
      .receive([&](caf::ok_atom) { ready = true; }, [](caf::error&) {});
  return ready;
}

stats_callback with_cluster_stats(caf::actor_system& sys,
                                  const cluster_actor& cluster,
                                  const router_actor& router,
                                  stats_callback done) {
  return [&sys, cluster, router, done = std::move(done)](
             tinybroker::v1::StatsReply& reply, const error_info& err) {
    if (err) {
      done(reply, err);
      return;
    }
    // The reply is the caller's until `done`: move it into the asking actor.
    auto shared = std::make_shared<tinybroker::v1::StatsReply>();
    shared->Swap(&reply);
    sys.spawn([cluster, router, done, shared](caf::event_based_actor* self) {
      self->request(cluster, std::chrono::seconds(1), caf::get_atom_v,
                    cluster_atom_v)
          .then(
              [self, router, done, shared](cluster_view& view) {
                fill_cluster_stats(view, *shared->mutable_cluster());
                self->request(router, std::chrono::seconds(1), peers_atom_v)
                    .then(
                        [self, router, done, shared](peer_stats_list& peers) {
                          fill_peer_traffic(peers, *shared->mutable_cluster());
                          // Groups across nodes: the directory's counters.
                          self->request(router, std::chrono::seconds(1),
                                        stats_atom_v, cluster_atom_v)
                              .then(
                                  [done, shared](directory_stats& d) {
                                    fill_directory_stats(
                                        d, *shared->mutable_cluster());
                                    done(*shared, error_info{});
                                  },
                                  [done, shared](caf::error&) {
                                    done(*shared, error_info{});
                                  });
                        },
                        [done, shared](caf::error&) {
                          done(*shared, error_info{});
                        });
              },
              [done, shared](caf::error&) { done(*shared, error_info{}); });
    });
  };
}

void fill_cluster_stats(const cluster_view& view,
                        tinybroker::v1::ClusterStats& out) {
  out.set_node_name(view.node_name);
  out.set_listen(view.listen);
  out.set_epoch(view.epoch);
  out.set_ready(view.ready);
  out.set_configured_nodes(view.configured_nodes);
  out.set_visible_nodes(view.visible_nodes);
  out.set_quorum_refusals(view.quorum_refusals);
  out.set_memberships_lost(view.memberships_lost);
  out.set_memberships_rejoined(view.memberships_rejoined);
  out.set_memberships_ended(view.memberships_ended);
  for (auto& p : view.peers) {
    auto* peer = out.add_peers();
    peer->set_name(p.name);
    peer->set_address(p.address);
    peer->set_state(p.state);
    peer->set_since_unix_ms(p.since_unix_ms);
    peer->set_epoch(p.epoch);
    peer->set_reconnects(p.reconnects);
    peer->set_node_id(p.node_id);
    peer->set_last_error(p.last_error);
    peer->set_failed_dials(p.failed_dials);
  }
}

void fill_directory_stats(const directory_stats& stats,
                          tinybroker::v1::ClusterStats& out) {
  out.set_groups_owned(stats.owned);
  out.set_groups_remote(stats.remote);
  out.set_groups_lost(stats.lost);
  out.set_group_conflicts(stats.conflicts);
  out.set_promotions(stats.promotions);
  out.set_replicas_held(stats.replicas_held);
  out.set_stale_entries_refused(stats.stale_entries_refused);
}

void fill_peer_traffic(const peer_stats_list& peers,
                       tinybroker::v1::ClusterStats& out) {
  for (auto& p : *out.mutable_peers()) {
    if (p.name().empty())
      continue;
    for (auto& x : peers) {
      if (x.name != p.name())
        continue;
      p.set_interest_patterns(x.interest_patterns);
      p.set_interest_synced(x.synced);
      p.set_messages_sent(x.link.messages_sent);
      p.set_batches_sent(x.link.batches_sent);
      p.set_messages_received(x.link.messages_received);
      p.set_batches_received(x.link.batches_received);
      p.set_dropped(x.link.dropped);
      p.set_buffered_messages(x.link.buffered_messages);
      p.set_buffered_bytes(x.link.buffered_bytes);
      p.set_in_flight_batches(x.link.in_flight_batches);
      p.set_lost(x.lost);
      break;
    }
  }
}

} // namespace tb
