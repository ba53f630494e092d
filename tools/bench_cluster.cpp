// tinybroker-bench across a cluster's nodes: subscribers on several nodes
// (see tools/bench_cluster.hpp).

#include "tools/bench_cluster.hpp"

#include <chrono>
#include <exception>

#include "client/addresses.hpp"
#include "client/connection.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"

namespace tb::bench {

std::string
open_subscribe_nodes(run_config& cfg, const client::security_options& security,
                     std::vector<std::unique_ptr<client::connection>>& conns) {
  if (cfg.subscribe_server.find(',') == std::string::npos)
    return {};
  std::vector<std::string> addresses;
  try {
    addresses = client::split_addresses(cfg.subscribe_server);
  } catch (const std::exception& e) {
    return std::string{"--subscribe-server: "} + e.what();
  }
  constexpr auto patience = std::chrono::seconds(5);
  for (auto& address : addresses) {
    try {
      conns.push_back(std::make_unique<client::connection>(address, security,
                                                           "tinybroker-bench"));
    } catch (const std::exception& e) {
      return std::string{"--subscribe-server: "} + e.what();
    }
    auto reached = client::wait_reachable(*conns.back()->channel(), patience);
    if (reached != client::reach_outcome::connected)
      return "--subscribe-server: " +
             client::explain_unreachable(conns.back()->channel(), address,
                                         security, reached, patience);
    cfg.subscribe_conns.push_back(conns.back().get());
  }
  return {};
}

connect_problem
open_role_servers(run_config& cfg, const client::security_options& security,
                  std::unique_ptr<client::connection> (&role_conns)[2]) {
  constexpr auto patience = std::chrono::seconds(5);
  std::string* role_servers[2] = {&cfg.publish_server, &cfg.subscribe_server};
  client::connection** role_ptrs[2] = {&cfg.publish_conn, &cfg.subscribe_conn};
  for (int i = 0; i < 2; ++i) {
    if (role_servers[i]->empty() || *role_servers[i] == cfg.server ||
        (i == 1 && !cfg.subscribe_conns.empty()))
      continue;
    try {
      role_conns[i] = std::make_unique<client::connection>(
          *role_servers[i], security, "tinybroker-bench");
    } catch (const std::exception& e) {
      return {"INVALID_ARGUMENT", e.what()};
    }
    auto role_reached =
        client::wait_reachable(*role_conns[i]->channel(), patience);
    if (role_reached != client::reach_outcome::connected) {
      return {"UNAVAILABLE", std::string{i == 0 ? "--publish-server: "
                                                : "--subscribe-server: "} +
                                 client::explain_unreachable(
                                     role_conns[i]->channel(), *role_servers[i],
                                     security, role_reached, patience)};
    }
    *role_ptrs[i] = role_conns[i].get();
  }
  return {};
}

} // namespace tb::bench
