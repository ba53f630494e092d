// The public objects of the asynchronous client: deliveries (answers go to
// the client core), subscriptions (callbacks run on its callback thread) and
// the async_client facade over the core that owns the threads and stream.

#include "client/async_client.hpp"

#include <algorithm>

#include "client/addresses.hpp"
#include "client/check.hpp"
#include "client/detail/client_core.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

// -- delivery -----------------------------------------------------------------

delivery::delivery(pb::Delivery message,
                   std::weak_ptr<detail::client_core> core, uint64_t generation)
    : message_(std::move(message)), core_(std::move(core)),
      generation_(generation) {}

bool delivery::ack() {
  return answer(answer_kind::ack, {});
}

bool delivery::nack(std::chrono::milliseconds delay) {
  return answer(answer_kind::nack, delay);
}

bool delivery::reject() {
  return answer(answer_kind::reject, {});
}

bool delivery::in_progress() {
  return answer(answer_kind::in_progress, {});
}

bool delivery::answer(answer_kind kind, std::chrono::milliseconds delay) {
  if (!from_group() || answered_)
    return false;
  auto core = core_.lock();
  if (!core)
    return false;
  if (kind != answer_kind::in_progress)
    answered_ = true;
  auto delay_ms = static_cast<uint32_t>(std::max<int64_t>(0, delay.count()));
  return core->answer(generation_, kind, message_.delivery_id(), delay_ms);
}

// -- subscription -------------------------------------------------------------

subscription::subscription(uint64_t id, std::string pattern,
                           delivery_handler handler, subscribe_options options,
                           std::weak_ptr<detail::client_core> core)
    : id_(id), pattern_(std::move(pattern)), handler_(std::move(handler)),
      options_(std::move(options)), core_(std::move(core)) {}

grpc::Status subscription::wait_subscribed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mutex_};
  if (!cv_.wait_for(guard, timeout, [this] { return subscribed_ || ended_; }))
    return grpc::Status{grpc::StatusCode::DEADLINE_EXCEEDED,
                        "the broker did not confirm the subscription to \"" +
                            pattern_ + "\" in time"};
  return ended_ ? end_status_ : grpc::Status::OK;
}

bool subscription::active() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return !ended_;
}

uint64_t subscription::times_subscribed() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return times_subscribed_;
}

void subscription::unsubscribe() {
  if (auto core = core_.lock())
    core->unsubscribe(id_);
}

void subscription::set_subscribed(bool subscribed) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (ended_)
    return;
  subscribed_ = subscribed;
  if (subscribed)
    ++times_subscribed_;
  cv_.notify_all();
}

bool subscription::end(const grpc::Status& status) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (ended_)
    return false;
  ended_ = true;
  subscribed_ = false;
  end_status_ = status;
  cv_.notify_all();
  return true;
}

void subscription::deliver(delivery d) {
  if (!active()) {
    d.nack(); // a group delivery moves on at once; fan-out: nothing to do
    return;
  }
  try {
    handler_(std::move(d));
  } catch (const std::exception& e) {
    if (auto core = core_.lock())
      core->report(grpc::Status{grpc::StatusCode::UNKNOWN,
                                "the handler of \"" + pattern_ +
                                    "\" threw: " + e.what()});
  }
}

// -- async_client -------------------------------------------------------------

async_client::async_client(const std::string& address, client_options options)
    : async_client(split_addresses(address), std::move(options)) {}

async_client::async_client(std::vector<std::string> addresses,
                           client_options options)
    : core_(std::make_shared<detail::client_core>(std::move(addresses),
                                                  std::move(options))) {
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

std::string async_client::address() const {
  return core_->address();
}

grpc::Status async_client::wait_closed() {
  return core_->wait_closed(std::nullopt);
}

grpc::Status async_client::wait_closed(std::chrono::milliseconds timeout) {
  return core_->wait_closed(timeout);
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
  if (auto status = check_strings(message); !status.ok()) {
    publish_result refused;
    refused.status = std::move(status);
    if (done)
      done(refused);
    return;
  }
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
  return core_->subscribe_many({pattern}, handler, options).front();
}

std::vector<std::shared_ptr<subscription>>
async_client::subscribe_many(const std::vector<std::string>& patterns,
                             delivery_handler handler,
                             subscribe_options options) {
  return core_->subscribe_many(patterns, handler, options);
}

grpc::Status async_client::create_group(const std::string& name,
                                        const pb::GroupSettings& settings) {
  pb::CreateGroupRequest request;
  request.set_name(name);
  *request.mutable_settings() = settings;
  if (auto status = check_strings(request); !status.ok())
    return status;
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
