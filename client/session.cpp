#include "client/session.hpp"

#include "client/check.hpp"
#include "client/connection.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

namespace {

// The completion queue's tags: one kind of operation each, and at most one
// of each kind outstanding.
void* const start_tag = reinterpret_cast<void*>(1);
void* const read_tag = reinterpret_cast<void*>(2);
void* const write_tag = reinterpret_cast<void*>(3);
void* const writes_done_tag = reinterpret_cast<void*>(4);
void* const finish_tag = reinterpret_cast<void*>(5);

constexpr auto forever = std::chrono::steady_clock::time_point::max();

// The completion queue's form of `deadline`.
gpr_timespec to_gpr(std::chrono::steady_clock::time_point deadline) {
  if (deadline == forever)
    return gpr_inf_future(GPR_CLOCK_MONOTONIC);
  auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0)
    return gpr_now(GPR_CLOCK_MONOTONIC);
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(left.count(), GPR_TIMESPAN));
}

} // namespace

// The session has no thread: whichever thread waits in one of its calls
// polls the completion queue (one at a time; the others wait on `cv_` for
// what the poller finds). A reply the broker sends while the caller waits
// in `next()` is read by that thread itself: no hand-over between threads.

session::session(pb::Broker::Stub& stub, const std::string& client_name) {
  if (auto status = check_client_name(client_name); !status.ok())
    throw invalid_request(status);
  if (!client_name.empty())
    context_.AddMetadata(client_name_key, encode_client_name(client_name));
  stream_ = stub.PrepareAsyncSession(&context_, &queue_);
  lock guard{mutex_};
  stream_->StartCall(start_tag);
  drive_until(
      guard, [this] { return started_; }, forever);
}

session::~session() {
  lock guard{mutex_};
  if (!ended_)
    context_.TryCancel();
  writes_done_ = true; // lifts the read-ahead bound: read to the end
  drive_until(
      guard,
      [this] {
        return ended_ && !reading_ && !writing_ && !writes_done_pending_;
      },
      forever);
  guard.unlock();
  queue_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
  }
}

template <class Done>
bool session::drive_until(lock& guard, Done done, clock::time_point deadline) {
  for (;;) {
    if (done())
      return true;
    if (polling_) {
      if (clock::now() >= deadline)
        return false;
      ++waiting_;
      if (deadline == forever)
        cv_.wait(guard);
      else
        cv_.wait_until(guard, deadline);
      --waiting_;
      continue;
    }
    read_more();
    polling_ = true;
    void* tag = nullptr;
    bool ok = false;
    guard.unlock();
    auto polled = queue_.AsyncNext(&tag, &ok, to_gpr(deadline));
    guard.lock();
    polling_ = false;
    if (polled == grpc::CompletionQueue::GOT_EVENT)
      handle(tag, ok);
    if (waiting_ > 0)
      cv_.notify_all();
    if (polled != grpc::CompletionQueue::GOT_EVENT)
      return done();
  }
}

void session::read_more() {
  // Reads ahead while frames are taken, or to the end once closing.
  if (!started_ || reading_ || read_failed_)
    return;
  if (frames_.size() >= max_read_ahead && !writes_done_)
    return;
  reading_ = true;
  stream_->Read(&incoming_, read_tag);
}

void session::finish() {
  if (finishing_)
    return;
  finishing_ = true;
  stream_->Finish(&final_status_, finish_tag);
}

void session::handle(void* tag, bool ok) {
  if (tag == start_tag) {
    started_ = true;
  } else if (tag == read_tag) {
    reading_ = false;
    if (ok) {
      frames_.push_back(std::move(incoming_));
      incoming_.Clear();
    } else {
      read_failed_ = true;
      finish();
    }
  } else if (tag == write_tag) {
    writing_ = false;
    ++writes_finished_;
    write_failed_ = write_failed_ || !ok;
  } else if (tag == writes_done_tag) {
    writes_done_pending_ = false;
  } else if (tag == finish_tag) {
    status_ = final_status_;
    ended_ = true;
  }
}

void session::poll_now() {
  lock guard{mutex_};
  drive_until(
      guard, [this] { return ended_; }, clock::now());
}

bool session::send(const pb::ClientFrame& frame) {
  // The broker would end the stream on a frame it cannot parse.
  if (auto status = check_strings(frame); !status.ok())
    throw invalid_request(std::move(status));
  return send(frame, grpc::WriteOptions{});
}

bool session::send(const pb::ClientFrame& frame, grpc::WriteOptions options) {
  lock guard{mutex_};
  // One write at a time: wait for the one before (another thread's).
  drive_until(
      guard, [this] { return !writing_; }, forever);
  if (writes_done_ || write_failed_ || ended_)
    return false;
  writing_ = true;
  auto mine = writes_finished_ + 1;          // another sender may write next
  stream_->Write(frame, options, write_tag); // serialises `frame` now
  drive_until(
      guard, [this, mine] { return writes_finished_ >= mine; }, forever);
  return !write_failed_;
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

bool session::subscribe_batch(
    const std::vector<subscription_request>& subscriptions,
    uint64_t request_id) {
  pb::ClientFrame frame;
  frame.set_request_id(request_id);
  auto* batch = frame.mutable_subscribe_batch();
  for (auto& request : subscriptions) {
    auto* sub = batch->add_subscriptions();
    sub->set_subscription_id(request.subscription_id);
    sub->set_pattern(request.pattern);
    sub->set_group(request.group);
  }
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
  lock guard{mutex_};
  drive_until(
      guard, [this] { return !frames_.empty() || ended_; },
      clock::now() + timeout);
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
  auto deadline = clock::now() + timeout;
  lock guard{mutex_};
  drive_until(
      guard, [this] { return !writing_; }, deadline);
  if (!writes_done_) {
    writes_done_ = true;
    if (!writing_ && !ended_) {
      writes_done_pending_ = true;
      stream_->WritesDone(writes_done_tag);
    }
  }
  if (!drive_until(
          guard, [this] { return ended_; }, deadline)) {
    context_.TryCancel();
    drive_until(
        guard, [this] { return ended_; }, forever);
  }
  return status_;
}

void session::cancel() {
  context_.TryCancel();
}

bool session::ended() const {
  // Looking may read what already arrived; that changes no answer.
  const_cast<session*>(this)->poll_now();
  std::lock_guard<std::mutex> guard{mutex_};
  return ended_;
}

grpc::Status session::status() const {
  const_cast<session*>(this)->poll_now();
  std::lock_guard<std::mutex> guard{mutex_};
  return status_;
}

} // namespace tb::client
