// `tinybroker-cli health` (the standard gRPC health check) and
// `tinybroker-cli info` (the Info call): is the broker up, and what is it.

#include <iostream>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tools/cli/cli_common.hpp"
#include "tools/cli/json_writer.hpp"
#include "tools/cli/text_format.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;
namespace health = grpc::health::v1;

// Returns a context whose deadline is `opts.timeout` from now.
std::unique_ptr<grpc::ClientContext>
call_context(const connection_options& opts) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + opts.timeout);
  return ctx;
}

// Asks the health service about `service` ("" = the whole broker); prints
// the status and returns 0 only for SERVING.
int run_health(const std::string& service, const connection_options& opts) {
  auto conn = connect(opts);
  auto stub = health::Health::NewStub(conn->channel());
  health::HealthCheckRequest request;
  request.set_service(service);
  health::HealthCheckResponse reply;
  auto ctx = call_context(opts);
  check_status(stub->Check(ctx.get(), request, &reply), "health check");
  auto status = health::HealthCheckResponse::ServingStatus_Name(reply.status());
  if (opts.json) {
    json_writer out;
    out.open_object().text("status", status).close_object();
    std::cout << out.str() << std::endl;
  } else {
    std::cout << status << std::endl;
  }
  return reply.status() == health::HealthCheckResponse::SERVING ? exit_ok
                                                                : exit_refused;
}

// Prints `info` as JSON on one line.
void print_info_json(const pb::InfoReply& info) {
  json_writer out;
  out.open_object()
      .text("version", info.version())
      .number("uptime_ms", info.uptime_ms())
      .text("listen", info.listen())
      .text("metrics_listen", info.metrics_listen())
      .boolean("metrics_tls", info.metrics_tls())
      .open_object("limits")
      .number("max_message_bytes", info.max_message_bytes())
      .number("max_publish_batch", info.max_publish_batch())
      .number("max_topics", info.max_topics())
      .number("max_sessions", info.max_sessions())
      .number("max_groups", info.max_groups())
      .number("max_subscriptions_per_session",
              info.max_subscriptions_per_session())
      .close_object()
      .boolean("auth_enabled", info.auth_enabled())
      .boolean("tls_enabled", info.tls_enabled())
      .boolean("client_certificates", info.client_certificates())
      .text("node_name", info.node_name())
      .text("cluster_listen", info.cluster_listen())
      .close_object();
  std::cout << out.str() << std::endl;
}

// Prints `info` for people, one setting per line.
void print_info_text(const pb::InfoReply& info) {
  auto on_off = [](bool on) {
    return on ? "on" : "off";
  };
  std::cout << "tinybroker " << info.version() << " at " << info.listen()
            << ", up " << format_elapsed(info.uptime_ms()) << "\n"
            << "metrics   "
            << (info.metrics_listen().empty()
                    ? std::string{"off"}
                    : (info.metrics_tls() ? "https://" : "http://") +
                          info.metrics_listen() + "/metrics")
            << "\n"
            << "security  auth " << on_off(info.auth_enabled()) << ", tls "
            << on_off(info.tls_enabled()) << ", client certificates "
            << on_off(info.client_certificates()) << "\n"
            << "limits    max_message_bytes "
            << format_size(info.max_message_bytes()) << ", max_publish_batch "
            << info.max_publish_batch() << ", max_topics " << info.max_topics()
            << ",\n"
            << "          max_sessions " << info.max_sessions()
            << ", max_groups " << info.max_groups()
            << ", max_subscriptions_per_session "
            << info.max_subscriptions_per_session() << std::endl;
  if (!info.node_name().empty())
    std::cout << "cluster   node " << info.node_name()
              << ", listening for its peers on " << info.cluster_listen()
              << " (tinybroker-cli cluster lists them)" << std::endl;
}

// Calls Info and prints the answer.
int run_info(const connection_options& opts) {
  auto conn = connect(opts);
  pb::InfoReply reply;
  auto ctx = call_context(opts);
  check_status(conn->stub().Info(ctx.get(), {}, &reply), "Info");
  if (opts.json)
    print_info_json(reply);
  else
    print_info_text(reply);
  return exit_ok;
}

} // namespace

command add_health_command(CLI::App& app, const connection_options& opts) {
  auto* cmd = app.add_subcommand(
      "health", "Ask the broker's standard gRPC health service: prints "
                "SERVING or NOT_SERVING; exit 0 only when serving.");
  auto service = std::make_shared<std::string>();
  cmd->add_option("--service", *service,
                  "the service to ask about (default: the whole broker; "
                  "tinybroker.v1.Broker is the broker's own)")
      ->type_name("NAME");
  set_examples(*cmd, "  tinybroker-cli health\n"
                     "  tinybroker-cli --server 10.0.0.5:7400 health "
                     "--timeout 2s\n");
  return {cmd, [service, &opts] {
            return run_health(*service, opts);
          }};
}

command add_info_command(CLI::App& app, const connection_options& opts) {
  auto* cmd = app.add_subcommand(
      "info", "Describe the broker: version, uptime, listen and metrics "
              "addresses, limits, whether auth and TLS are on.");
  set_examples(*cmd, "  tinybroker-cli info\n"
                     "  tinybroker-cli info --json | jq .limits\n");
  return {cmd, [&opts] {
            return run_info(opts);
          }};
}

} // namespace tb::cli
