#include "net/server.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "actors/router/router_actor.hpp"
#include "actors/scheduler/scheduler_choice.hpp"
#include "actors/session/session_actor.hpp"
#include "net/broker_service.hpp"
#include "net/cluster_node.hpp"
#include "net/cq_server.hpp"
#include "net/grpc_settings.hpp"
#include "net/listen_check.hpp"
#include "net/log.hpp"
#include "net/metrics_server.hpp"
#include "net/tls_credentials.hpp"
#include "net/tls_store.hpp"

namespace tb {

namespace {

// The CAF configuration of a broker.
class system_config : public caf::actor_system_config {
public:
  system_config(const broker_config& cfg) {
    tb::add_message_types(*this);
    use_scheduler(*this, cfg.scheduler, cfg.worker_threads);
    // A single node loads no network layer at all.
    if (cfg.cluster.enabled())
      configure_cluster(*this, cfg);
  }
};

} // namespace

broker_server::broker_server(broker_config cfg) : cfg_(std::move(cfg)) {
  // nop
}

broker_server::~broker_server() {
  stop();
  if (abandoned_) {
    // gRPC still holds calls whose actors and server we cannot destroy
    // without waiting for them; the process is about to end anyway.
    static_cast<void>(server_.release());
    static_cast<void>(cq_.release()); // its polling thread may still run
    static_cast<void>(service_.release());
    static_cast<void>(system_.release());
    static_cast<void>(system_config_.release());
  }
}

error_info broker_server::start() {
  prefer_sized_reads();
  skip_lock_order_checks();
  system_config_ = std::make_unique<system_config>(cfg_);
  system_ = std::make_unique<caf::actor_system>(*system_config_);
  broker_context ctx;
  ctx.limits = cfg_.limits;
  ctx.route_idle_timeout = cfg_.topic_idle_timeout;
  router_settings settings;
  settings.topic_idle_timeout = cfg_.topic_idle_timeout;
  settings.auto_create_groups = cfg_.auto_create_groups;
  settings.group_defaults = cfg_.group_defaults;
  settings.session_context = ctx;
  settings.dedup = cfg_.dedup;
  // Fan-out across nodes: the links' window and buffer ([cluster]).
  settings.links.window_batches = cfg_.cluster.link_window_batches;
  settings.links.buffer_bytes = cfg_.cluster.link_buffer_bytes;
  // Groups across nodes: the owner named in directory entries, and the
  // config groups a router re-creates when it becomes their owner.
  settings.node_name = cfg_.cluster.node_name;
  if (cfg_.cluster.enabled())
    settings.config_groups.assign(cfg_.groups.begin(), cfg_.groups.end());
  // Replicas (issue 32): a replicated group whose owner died stays routed
  // this long waiting for its replica's takeover (the replica's node may
  // see the death up to dead_after later).
  settings.takeover_timeout =
      cfg_.cluster.dead_after + std::chrono::milliseconds{2000};
  router_ = system_->spawn(router_actor_impl, settings);
  ctx.router = router_;
  // In a cluster, config groups are created after the first sync: each on
  // its HRW owner over the live nodes, or found where it already lives.
  if (!cfg_.cluster.enabled())
    if (auto err = create_declared_groups()) {
      release();
      return err;
    }
  if (auto err = start_node(ctx)) {
    release();
    return err;
  }
  if (cfg_.cluster.enabled())
    if (auto err = create_declared_groups()) {
      release();
      return err;
    }
  auto pool = std::max<std::size_t>(2, cfg_.worker_threads);
  for (std::size_t i = 0; i < pool; ++i)
    publishers_.push_back(system_->spawn(session_actor_impl, ctx,
                                         frame_sink_ptr{}, access_grant{}));
  service_ = std::make_unique<broker_service>(*system_, ctx, publishers_,
                                              cfg_.group_defaults, cfg_.auth);
  logger_ =
      system_->spawn(log_actor_impl, cfg_.log_summary_interval,
                     stats_source{[service = service_.get()](
                                      const tinybroker::v1::StatsRequest& req,
                                      stats_callback done) {
                       service->collect_stats(req, std::move(done));
                     }});
  service_->set_logger(logger_);
  if (cluster_)
    service_->set_cluster(cluster_);
  grpc::EnableDefaultHealthCheckService(cfg_.health_service);
  if (cfg_.reflection)
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (cfg_.tls.enabled()) {
    tls_ = std::make_shared<tls_store>();
    if (auto problem = tls_->load(cfg_.tls); !problem.empty()) {
      tls_.reset();
      release();
      return make_error_info(ec::invalid_request, problem);
    }
    credentials = tls_->grpc_credentials();
  } else {
    credentials = grpc::InsecureServerCredentials();
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(cfg_.listen, credentials, &port);
  // gRPC sets SO_REUSEPORT by default: a second broker on a busy port would
  // start and silently share its connections (spec 9 forbids it).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (cfg_.grpc_transport == "cq") {
    // Every call on a completion queue with the broker's polling thread,
    // the health service too (gRPC's own is on the callback API).
    cq_ = std::make_unique<cq_transport>(*service_, cfg_.health_service);
    cq_->add_to(builder);
  } else {
    builder.RegisterService(service_.get());
  }
  add_connection_settings(builder, grpc_receive_limit(cfg_.limits));
  // A failed bind is explained below in one line; gRPC's own account of it
  // goes to the debug level.
  log::set_grpc_level(log::level::debug);
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    // So is what gRPC says of the queue of a server that never started.
    release();
    log::set_grpc_level(log::level::warn);
    return make_error_info(ec::invalid_request,
                           cannot_listen_message(cfg_.listen));
  }
  log::set_grpc_level(log::level::warn);
  if (cq_)
    cq_->start();
  if (auto* health = server_->GetHealthCheckService()) {
    // The overall status ("") is SERVING by default; the service's name
    // must answer too (spec 11), and both go NOT_SERVING at shutdown.
    health->SetServingStatus(tinybroker::v1::Broker::service_full_name(), true);
    health->SetServingStatus("", true);
  }
  if (auto err = start_metrics()) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    release();
    return err;
  }
  auto host = cfg_.listen.substr(0, cfg_.listen.rfind(':'));
  address_ = host + ":" + std::to_string(port);
  tinybroker::v1::InfoReply info;
  info.set_listen(address_);
  info.set_metrics_listen(metrics_address_);
  info.set_metrics_tls(!metrics_address_.empty() && cfg_.metrics.tls);
  info.set_console_enabled(!metrics_address_.empty() && cfg_.console.enabled);
  info.set_max_message_bytes(cfg_.limits.max_message_bytes);
  info.set_max_publish_batch(cfg_.limits.max_publish_batch);
  info.set_max_topics(cfg_.limits.max_topics);
  info.set_max_sessions(cfg_.limits.max_sessions);
  info.set_max_groups(cfg_.limits.max_groups);
  info.set_max_subscriptions_per_session(
      cfg_.limits.max_subscriptions_per_session);
  info.set_max_pending_requests_per_session(
      cfg_.limits.max_pending_requests_per_session);
  info.set_dedup_window_ms(static_cast<uint64_t>(cfg_.dedup.window.count()));
  info.set_dedup_max_ids(cfg_.dedup.max_ids);
  info.set_tls_enabled(cfg_.tls.enabled());
  info.set_client_certificates(cfg_.tls.mutual());
  info.set_node_name(cfg_.cluster.node_name);
  info.set_cluster_listen(cfg_.cluster.enabled() ? cfg_.cluster.listen
                                                 : std::string{});
  service_->set_info(info);
  running_ = true;
  return {};
}

error_info broker_server::reload_auth(const auth_config& auth) {
  if (!running_ || !service_)
    return make_error_info(ec::shutting_down, "the broker is not running");
  return service_->reload_auth(auth);
}

error_info broker_server::reload_tls(const tls_config& tls) {
  if (!running_)
    return make_error_info(ec::shutting_down, "the broker is not running");
  if (!tls_)
    return tls.enabled() ? make_error_info(ec::invalid_request,
                                           "turning TLS on or off takes a "
                                           "restart")
                         : error_info{};
  if (auto problem = tls_->reload(tls); !problem.empty())
    return make_error_info(ec::invalid_request, problem);
  return {};
}

int64_t broker_server::tls_not_after() const {
  return tls_ ? tls_->not_after() : 0;
}

std::string broker_server::tls_cert() const {
  return tls_ ? tls_->config().cert : std::string{};
}

error_info broker_server::start_metrics() {
  if (!cfg_.metrics.enabled())
    return {};
  metrics_server_settings settings;
  settings.listen = cfg_.metrics.listen;
  if (cfg_.metrics.tls)
    settings.tls = cfg_.tls;
  settings.tls_identity = tls_;
  settings.options.per_topic = cfg_.metrics.per_topic;
  auto* service = service_.get();
  if (cfg_.console.enabled) {
    console_settings console;
    console.auth_enabled = cfg_.auth.enabled;
    console.allow_actions = cfg_.console.allow_actions;
    settings.console = make_console_handler(service->console(), console);
  }
  metrics_ = std::make_unique<metrics_server>(
      [service](const tinybroker::v1::StatsRequest& request,
                stats_callback done) {
        service->collect_stats(request, std::move(done));
      },
      settings);
  if (auto err = metrics_->start()) {
    metrics_.reset();
    return make_error_info(err.code, "metrics listener: " + err.text);
  }
  metrics_address_ = metrics_->address();
  return {};
}

error_info broker_server::start_node(const broker_context& ctx) {
  if (!cfg_.cluster.enabled())
    return {};
  if (auto err = start_cluster(*system_, cfg_, router_, cluster_, ctx.quorum,
                               ctx.rejoins))
    return err;
  // No publish before the remote interest is known (nats-server #439):
  // gRPC starts serving only once every reachable peer synced. The book
  // is ready by 2 x dead_after at the latest; the margin is for a bug.
  auto patience = 4 * cfg_.cluster.dead_after + std::chrono::seconds(2);
  log::info("cluster: waiting for the first sync with the peers before "
            "serving",
            {{"node", cfg_.cluster.node_name}});
  if (!wait_cluster_ready(*system_, cluster_, patience))
    log::warn("cluster: not ready in time; serving anyway",
              {{"node", cfg_.cluster.node_name}});
  return {};
}

error_info broker_server::create_declared_groups() {
  caf::scoped_actor self{*system_};
  error_info result;
  for (auto& [name, settings] : cfg_.groups) {
    self->request(router_, caf::infinite, create_atom_v, name, settings)
        .receive([](const group_info&) {},
                 [&](caf::error& err) {
                   auto info = to_error_info(err);
                   if (info.code == ec::node_unavailable) {
                     // Its owner died meanwhile: the next owner's router
                     // creates it (router_directory.cpp).
                     log::warn("config group not created here: its owner "
                               "node is gone",
                               {{"group", name}, {"error", info.text}});
                     return;
                   }
                   result =
                       make_error_info(info.code, "config group \"" + name +
                                                      "\": " + info.text);
                 });
    if (result)
      break;
  }
  return result;
}

} // namespace tb
