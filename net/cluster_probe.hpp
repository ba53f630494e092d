// A look at a peer's port before the cluster dials it.
//
// CAF 0.17.6's BASP reads whatever the far end sends first as its server
// handshake, and dereferences a null payload when that "handshake" says it
// has none. An HTTP/2 server's first frame (SETTINGS) reads exactly so: a
// node whose `[cluster] peers` named a broker's gRPC port instead of its
// cluster port crashed (SIGSEGV in `basp::instance::handle`). So the
// dialer first reads the first 16 bytes itself: a cluster node speaks
// first, with a server handshake that has a payload.
//
// With `[cluster] tls = true` the bytes come after a TLS handshake made
// with the node's own certificate, key and CA, as CAF's would be: the
// brokers' gRPC ports serve certificates of that same CA, so a peer list
// naming a gRPC port passes the handshake, and gRPC then closes the
// connection unread (it wants HTTP/2); CAF said only
// `disconnect_during_handshake`, the probe names the likely slip. A TLS
// handshake that fails is left to CAF, which refuses the peer with its own
// error, as before.

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace tb {

/// Returns "" if `first` (the first 16 bytes a peer sent) begin a cluster
/// node's server handshake: CAF's BASP header with operation 0 (server
/// handshake), a payload of 1 byte to 1 MiB and a protocol version; else
/// what they are instead.
std::string check_cluster_greeting(std::string_view first);

/// What `probe_cluster_peer` found.
struct cluster_probe_result {
  /// True if the connection was made.
  bool connected = false;
  /// Why no cluster node answers ("" if one does): the connection's error,
  /// or what answered instead.
  std::string why;
};

/// The files a TLS probe presents and verifies with (PEM), as the node's
/// CAF dialer does: `[tls] cert`, `key` and `client_ca`.
struct cluster_probe_tls {
  /// The node's certificate chain.
  std::string cert;
  /// Its private key.
  std::string key;
  /// The CA a peer's certificate must chain to.
  std::string ca;
};

/// Connects to `host`:`port` and reads what answers there within
/// `timeout` (`check_cluster_greeting`), after a TLS handshake with `tls`
/// if given (one that fails finds no fault: CAF's own dial refuses such a
/// peer). Blocks up to `timeout`.
cluster_probe_result probe_cluster_peer(const std::string& host, uint16_t port,
                                        std::chrono::milliseconds timeout,
                                        const cluster_probe_tls* tls = nullptr);

/// Spawns the dialer the cluster actor uses: it answers `(connect_atom,
/// host, port)` as `dialer` (the middleman, or CAF's OpenSSL manager with
/// `tls`) does, once `probe_cluster_peer` found a cluster node there, and
/// with an error naming what answers instead otherwise. It runs on a
/// thread of its own (the probe blocks) and exits with `owner`, which it
/// links to on `(link_atom, owner)`.
caf::actor spawn_checked_dialer(caf::actor_system& sys, caf::actor dialer,
                                std::chrono::milliseconds timeout,
                                std::optional<cluster_probe_tls> tls = {});

} // namespace tb
