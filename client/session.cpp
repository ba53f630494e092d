#include "client/session.hpp"

#include "client/check.hpp"
#include "client/connection.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

session::session(pb::Broker::Stub& stub) {
  stream_ = stub.Session(&context_);
  reader_ = std::thread{[this] {
    read_loop();
  }};
}

session::~session() {
  if (!ended())
    context_.TryCancel();
  if (reader_.joinable())
    reader_.join();
}

void session::read_loop() {
  pb::ServerFrame frame;
  while (stream_->Read(&frame)) {
    std::lock_guard<std::mutex> guard{mutex_};
    frames_.push_back(std::move(frame));
    frame = pb::ServerFrame{};
    cv_.notify_all();
  }
  auto status = stream_->Finish();
  std::lock_guard<std::mutex> guard{mutex_};
  status_ = std::move(status);
  ended_ = true;
  cv_.notify_all();
}

bool session::send(const pb::ClientFrame& frame) {
  // The broker would end the stream on a frame it cannot parse.
  if (auto status = check_strings(frame); !status.ok())
    throw invalid_request(std::move(status));
  std::lock_guard<std::mutex> guard{write_mutex_};
  if (writes_done_)
    return false;
  return stream_->Write(frame);
}

bool session::send(const pb::ClientFrame& frame, grpc::WriteOptions options) {
  std::lock_guard<std::mutex> guard{write_mutex_};
  if (writes_done_)
    return false;
  return stream_->Write(frame, options);
}

bool session::subscribe(uint64_t subscription_id, const std::string& pattern,
                        const std::string& group, uint64_t request_id) {
  pb::ClientFrame frame;
  frame.set_request_id(request_id);
  auto* sub = frame.mutable_subscribe();
  sub->set_subscription_id(subscription_id);
  sub->set_pattern(pattern);
  sub->set_group(group);
  return send(frame);
}

bool session::join(uint64_t subscription_id, const std::string& group,
                   const std::string& pattern, uint32_t max_in_flight,
                   uint64_t request_id, const std::vector<std::string>& tags) {
  pb::ClientFrame frame;
  frame.set_request_id(request_id);
  auto* sub = frame.mutable_subscribe();
  sub->set_subscription_id(subscription_id);
  sub->set_pattern(pattern);
  sub->set_group(group);
  sub->set_max_in_flight(max_in_flight);
  for (auto& tag : tags)
    sub->add_tags(tag);
  return send(frame);
}

bool session::ack(const std::vector<uint64_t>& delivery_ids) {
  pb::ClientFrame frame;
  frame.mutable_ack()->mutable_delivery_ids()->Add(delivery_ids.begin(),
                                                   delivery_ids.end());
  return send(frame);
}

bool session::nack(const std::vector<uint64_t>& delivery_ids,
                   uint32_t delay_ms) {
  pb::ClientFrame frame;
  auto* nack = frame.mutable_nack();
  nack->mutable_delivery_ids()->Add(delivery_ids.begin(), delivery_ids.end());
  nack->set_requeue(true);
  nack->set_delay_ms(delay_ms);
  return send(frame);
}

bool session::reject(const std::vector<uint64_t>& delivery_ids) {
  pb::ClientFrame frame;
  auto* nack = frame.mutable_nack();
  nack->mutable_delivery_ids()->Add(delivery_ids.begin(), delivery_ids.end());
  nack->set_requeue(false);
  return send(frame);
}

bool session::in_progress(const std::vector<uint64_t>& delivery_ids) {
  pb::ClientFrame frame;
  frame.mutable_in_progress()->mutable_delivery_ids()->Add(delivery_ids.begin(),
                                                           delivery_ids.end());
  return send(frame);
}

bool session::unsubscribe(uint64_t subscription_id, uint64_t request_id) {
  pb::ClientFrame frame;
  frame.set_request_id(request_id);
  frame.mutable_unsubscribe()->set_subscription_id(subscription_id);
  return send(frame);
}

bool session::publish(const std::vector<outgoing_message>& messages,
                      bool confirm, uint64_t request_id) {
  pb::ClientFrame frame;
  frame.set_request_id(request_id);
  auto* publish = frame.mutable_publish();
  publish->set_confirm(confirm);
  for (auto& msg : messages)
    to_proto(msg, *publish->add_messages());
  return send(frame);
}

std::optional<pb::ServerFrame>
session::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mutex_};
  cv_.wait_for(guard, timeout, [this] { return !frames_.empty() || ended_; });
  if (frames_.empty())
    return std::nullopt;
  auto frame = std::move(frames_.front());
  frames_.pop_front();
  return frame;
}

std::optional<pb::ServerFrame>
session::wait_for(frame_kind kind, std::chrono::milliseconds timeout,
                  std::vector<pb::ServerFrame>* skipped) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return std::nullopt;
    auto frame = next(left);
    if (!frame)
      return std::nullopt;
    if (frame->kind_case() == kind)
      return frame;
    if (skipped != nullptr)
      skipped->push_back(std::move(*frame));
  }
}

std::vector<pb::Delivery> session::receive(std::size_t count,
                                           std::chrono::milliseconds timeout) {
  std::vector<pb::Delivery> result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (result.size() < count) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    auto frame = wait_for(pb::ServerFrame::kDeliveries, left);
    if (!frame)
      break;
    for (auto& d : frame->deliveries().deliveries())
      result.push_back(d);
  }
  return result;
}

grpc::Status session::close(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> guard{write_mutex_};
    if (!writes_done_) {
      writes_done_ = true;
      stream_->WritesDone();
    }
  }
  std::unique_lock<std::mutex> guard{mutex_};
  if (!cv_.wait_for(guard, timeout, [this] { return ended_; })) {
    guard.unlock();
    context_.TryCancel();
    guard.lock();
    cv_.wait(guard, [this] { return ended_; });
  }
  return status_;
}

void session::cancel() {
  context_.TryCancel();
}

bool session::ended() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return ended_;
}

grpc::Status session::status() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return status_;
}

} // namespace tb::client
