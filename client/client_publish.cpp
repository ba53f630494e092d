// The asynchronous client's publishing side: bounded queueing, batches cut
// by linger time, count and size, confirms matched to their callbacks;
// and the coalescing of group answers into frames.

#include "client/detail/client_core.hpp"

#include "client/message_limit.hpp"

namespace tb::client::detail {

namespace pb = tinybroker::v1;

namespace {

// The size the broker counts (payload, headers, key), plus the topic.
std::size_t message_bytes(const pb::Message& message) {
  return message.topic().size() + counted_message_bytes(message);
}

// Calls `done` with a failure.
void fail(const publish_callback& done, grpc::Status status) {
  publish_result result;
  result.status = std::move(status);
  if (done)
    done(result);
}

} // namespace

void client_core::publish(pb::Message message, publish_callback done) {
  lock guard{mutex_};
  auto closed = [this] {
    return closing_ || state_ == connection_state::closed;
  };
  auto has_room = state_cv_.wait_for(guard, options_.publish_block, [&] {
    return closed() || pending_publishes_ < options_.max_pending_publishes;
  });
  if (closed()) {
    auto status = final_status_.ok()
                      ? grpc::Status{grpc::StatusCode::FAILED_PRECONDITION,
                                     "the client is closed"}
                      : final_status_;
    guard.unlock();
    fail(done, status);
    return;
  }
  if (!has_room) {
    guard.unlock();
    fail(done, grpc::Status{grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "the client's publish queue is full (" +
                                std::to_string(options_.max_pending_publishes) +
                                " messages await sending or a confirm)"});
    return;
  }
  // Issue 26: refused here, not by gRPC's frame limit tearing the stream
  // down (or the broker, once the frame is read).
  if (auto status =
          check_message_size(message, max_message_bytes_, addresses_[current_]);
      !status.ok()) {
    guard.unlock();
    publish_result refused;
    refused.status = std::move(status);
    refused.reason = message_too_large_reason;
    if (done)
      done(refused);
    return;
  }
  // The id itself is written when the frame is cut (number_msg_ids).
  uint64_t msg_id_number = 0;
  if (options_.idempotent && message.msg_id().empty())
    msg_id_number = ++next_msg_id_;
  auto bytes = message_bytes(message);
  auto wake = unsent_.empty();
  unsent_.push_back({std::move(message), std::move(done), bytes, clock::now(),
                     msg_id_number});
  unsent_bytes_ += bytes;
  ++pending_publishes_;
  if (wake && can_write_inline()) {
    std::vector<pb::ClientFrame> out;
    take_publish_frames(out, true);
    stats_.publish_frames_inline += out.size();
    write_frames(guard, out); // a failed write: the reader sees the end
    return;
  }
  if (wake || unsent_.size() >= options_.max_batch_messages ||
      unsent_bytes_ >= options_.max_batch_bytes)
    io_cv_.notify_all();
}

bool client_core::flush(std::chrono::milliseconds timeout) {
  lock guard{mutex_};
  flush_requested_ = true;
  io_cv_.notify_all();
  return state_cv_.wait_for(guard, timeout,
                            [this] { return pending_publishes_ == 0; });
}

void client_core::take_publish_frames(std::vector<pb::ClientFrame>& out,
                                      bool force) {
  auto now = clock::now();
  while (!unsent_.empty()) {
    auto due = force || unsent_.size() >= options_.max_batch_messages ||
               unsent_bytes_ >= options_.max_batch_bytes ||
               now >= unsent_.front().queued_at + options_.linger;
    if (!due)
      return;
    pb::ClientFrame frame;
    frame.set_request_id(++next_request_id_);
    auto* publish = frame.mutable_publish();
    publish->set_confirm(true);
    auto& batch = in_flight_[frame.request_id()];
    std::size_t bytes = 0;
    while (!unsent_.empty() && batch.size() < options_.max_batch_messages &&
           (batch.empty() ||
            bytes + unsent_.front().bytes <= options_.max_batch_bytes)) {
      auto& next = unsent_.front();
      bytes += next.bytes;
      unsent_bytes_ -= next.bytes;
      // Idempotent: kept, to be sent again after a lost connection.
      if (options_.idempotent)
        *publish->add_messages() = next.message;
      else
        *publish->add_messages() = std::move(next.message);
      batch.push_back(std::move(next));
      unsent_.pop_front();
    }
    if (options_.idempotent)
      number_msg_ids(batch, *publish);
    ++stats_.publish_frames;
    stats_.published += batch.size();
    out.push_back(std::move(frame));
  }
  flush_requested_ = false;
}

void client_core::number_msg_ids(const std::vector<pending_publish>& batch,
                                 pb::Publish& publish) const {
  // Consecutive numbers from the first message on: the frame's base alone
  // (Publish.msg_id_base), one id on the wire instead of one per message.
  auto first = batch.front().msg_id_number;
  auto consecutive = first != 0;
  for (std::size_t i = 1; consecutive && i < batch.size(); ++i)
    consecutive = batch[i].msg_id_number == first + i;
  if (consecutive) {
    publish.set_msg_id_base(make_msg_id(id_prefix_, first));
    return;
  }
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].msg_id_number != 0)
      publish.mutable_messages(static_cast<int>(i))
          ->set_msg_id(make_msg_id(id_prefix_, batch[i].msg_id_number));
}

std::vector<pending_publish> client_core::take_in_flight(uint64_t request_id) {
  std::lock_guard<std::mutex> guard{mutex_};
  std::vector<pending_publish> batch;
  auto i = in_flight_.find(request_id);
  if (i == in_flight_.end())
    return batch;
  batch = std::move(i->second);
  in_flight_.erase(i);
  pending_publishes_ -= batch.size();
  state_cv_.notify_all();
  return batch;
}

void client_core::complete(std::vector<pending_publish> batch,
                           const pb::PublishConfirm* confirm,
                           const grpc::Status& error) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].done)
      continue;
    publish_result result;
    if (confirm == nullptr) {
      result.status = error;
    } else if (i >= static_cast<std::size_t>(confirm->results_size())) {
      result.status = grpc::Status{grpc::StatusCode::INTERNAL,
                                   "the broker's confirm has no result for "
                                   "this message"};
    } else {
      auto& wire = confirm->results(static_cast<int>(i));
      result.id = wire.id();
      result.duplicate = wire.duplicate();
      if (wire.has_error()) {
        result.status = to_status(wire.error());
        result.reason = wire.error().reason();
      }
    }
    batch[i].done(result);
  }
}

void client_core::fail_all_in_flight(lock& guard, const grpc::Status& error) {
  auto batches = std::move(in_flight_);
  in_flight_.clear();
  for (auto& [id, batch] : batches)
    pending_publishes_ -= batch.size();
  state_cv_.notify_all();
  guard.unlock();
  for (auto& [id, batch] : batches)
    complete(std::move(batch), nullptr, error);
  guard.lock();
}

void client_core::requeue_in_flight() {
  // In request order, ahead of what was never sent: the publish order.
  for (auto batch = in_flight_.rbegin(); batch != in_flight_.rend(); ++batch)
    for (auto i = batch->second.rbegin(); i != batch->second.rend(); ++i) {
      unsent_bytes_ += i->bytes;
      unsent_.push_front(std::move(*i));
      ++stats_.republished;
    }
  in_flight_.clear();
}

void client_core::fail_unsent(lock& guard, const grpc::Status& error) {
  std::vector<pending_publish> batch{std::make_move_iterator(unsent_.begin()),
                                     std::make_move_iterator(unsent_.end())};
  unsent_.clear();
  unsent_bytes_ = 0;
  pending_publishes_ -= batch.size();
  state_cv_.notify_all();
  guard.unlock();
  complete(std::move(batch), nullptr, error);
  guard.lock();
}

bool client_core::answer(uint64_t generation, answer_kind kind,
                         uint64_t delivery_id, uint32_t delay_ms) {
  lock guard{mutex_};
  auto current = [&] {
    return stream_ != nullptr && stream_->generation == generation && !closing_;
  };
  state_cv_.wait_for(guard, options_.publish_block, [&] {
    return !current() || answers_.count < options_.max_pending_answers;
  });
  if (!current() || answers_.count >= options_.max_pending_answers)
    return false;
  switch (kind) {
  case answer_kind::ack:
    answers_.acks.push_back(delivery_id);
    break;
  case answer_kind::nack:
    answers_.nacks[delay_ms].push_back(delivery_id);
    break;
  case answer_kind::reject:
    answers_.rejects.push_back(delivery_id);
    break;
  case answer_kind::in_progress:
    answers_.in_progress.push_back(delivery_id);
    break;
  }
  if (answers_.count++ == 0) {
    answers_.first_at = clock::now();
    io_cv_.notify_all();
  } else if (answers_.count >= options_.max_answer_batch) {
    io_cv_.notify_all();
  }
  return true;
}

void client_core::take_answer_frames(std::vector<pb::ClientFrame>& out,
                                     bool force) {
  if (answers_.count == 0 ||
      !(force || answers_.count >= options_.max_answer_batch ||
        clock::now() >= answers_.first_at + options_.answer_linger))
    return;
  auto ids = [this](std::vector<uint64_t>& from, auto* into) {
    into->Add(from.begin(), from.end());
    ++stats_.answer_frames;
  };
  // In-progress first, so a later final answer in the same batch wins.
  if (!answers_.in_progress.empty()) {
    pb::ClientFrame frame;
    ids(answers_.in_progress,
        frame.mutable_in_progress()->mutable_delivery_ids());
    out.push_back(std::move(frame));
  }
  if (!answers_.acks.empty()) {
    pb::ClientFrame frame;
    ids(answers_.acks, frame.mutable_ack()->mutable_delivery_ids());
    out.push_back(std::move(frame));
  }
  for (auto& [delay, delivery_ids] : answers_.nacks) {
    pb::ClientFrame frame;
    auto* nack = frame.mutable_nack();
    ids(delivery_ids, nack->mutable_delivery_ids());
    nack->set_requeue(true);
    nack->set_delay_ms(delay);
    out.push_back(std::move(frame));
  }
  if (!answers_.rejects.empty()) {
    pb::ClientFrame frame;
    ids(answers_.rejects, frame.mutable_nack()->mutable_delivery_ids());
    frame.mutable_nack()->set_requeue(false);
    out.push_back(std::move(frame));
  }
  stats_.answers += answers_.count;
  answers_ = pending_answers{};
  state_cv_.notify_all();
}

} // namespace tb::client::detail
