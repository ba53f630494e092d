// The async_client facade: forwards to the client core that owns the
// threads and the stream.

#include "client/async_client.hpp"

#include "client/detail/client_core.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

// -- async_client -------------------------------------------------------------

async_client::async_client(const std::string& address, client_options options)
    : core_(
          std::make_shared<detail::client_core>(address, std::move(options))) {
  core_->start();
}

async_client::~async_client() {
  close();
}

bool async_client::wait_connected(std::chrono::milliseconds timeout) {
  return core_->wait_connected(timeout);
}

connection_state async_client::state() const {
  return core_->state();
}

client_stats async_client::stats() const {
  return core_->stats();
}

std::future<publish_result> async_client::publish(outgoing_message message) {
  auto promise = std::make_shared<std::promise<publish_result>>();
  auto result = promise->get_future();
  publish(std::move(message), [promise](const publish_result& outcome) {
    promise->set_value(outcome);
  });
  return result;
}

void async_client::publish(outgoing_message message, publish_callback done) {
  pb::Message wire;
  to_proto(message, wire);
  core_->publish(std::move(wire), std::move(done));
}

bool async_client::flush(std::chrono::milliseconds timeout) {
  return core_->flush(timeout);
}

std::shared_ptr<subscription>
async_client::subscribe(const std::string& pattern, delivery_handler handler,
                        subscribe_options options) {
  return core_->subscribe(pattern, std::move(handler), std::move(options));
}

grpc::Status async_client::create_group(const std::string& name,
                                        const pb::GroupSettings& settings) {
  pb::CreateGroupRequest request;
  request.set_name(name);
  *request.mutable_settings() = settings;
  pb::GroupInfo reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return core_->unary().stub().CreateGroup(&ctx, request, &reply);
}

connection& async_client::unary() {
  return core_->unary();
}

void async_client::close() {
  core_->close();
}

} // namespace tb::client
