#include "tools/relay_cq/cq_stream.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace tb::relay_cq {

namespace pb = tinybroker::v1;

// -- cq_hub -------------------------------------------------------------------

void cq_hub::add(subscriber sub) {
  std::lock_guard<std::mutex> guard{mutex_};
  subscribers_.push_back(std::move(sub));
}

void cq_hub::join(const std::string& group, subscriber sub) {
  std::lock_guard<std::mutex> guard{mutex_};
  groups_[group].members.push_back(std::move(sub));
}

void cq_hub::drop_group(const std::string& group) {
  std::lock_guard<std::mutex> guard{mutex_};
  groups_.erase(group);
}

void cq_hub::remove(const cq_stream* stream, uint64_t subscription_id) {
  auto gone = [&](const subscriber& s) {
    return s.stream.get() == stream &&
           (subscription_id == 0 || s.subscription_id == subscription_id);
  };
  // The streams removed are released outside the lock: the last reference
  // may be among them.
  std::vector<subscriber> released;
  std::lock_guard<std::mutex> guard{mutex_};
  auto split =
      std::stable_partition(subscribers_.begin(), subscribers_.end(),
                            [&](const subscriber& s) { return !gone(s); });
  std::move(split, subscribers_.end(), std::back_inserter(released));
  subscribers_.erase(split, subscribers_.end());
  for (auto& [name, group] : groups_) {
    auto members =
        std::stable_partition(group.members.begin(), group.members.end(),
                              [&](const subscriber& s) { return !gone(s); });
    std::move(members, group.members.end(), std::back_inserter(released));
    group.members.erase(members, group.members.end());
  }
}

namespace {

// Appends message `i` of `publish` to `frame` as a delivery for `target`;
// a group member's delivery carries a delivery id (the message id).
void cq_add_delivery(pb::ServerFrame& frame, const pb::Publish& publish, int i,
                     const cq_hub::subscriber& target, uint64_t id,
                     int64_t accepted, bool group) {
  const auto& msg = publish.messages(i);
  auto* d = frame.mutable_deliveries()->add_deliveries();
  d->set_subscription_id(target.subscription_id);
  d->set_message_id(id);
  d->set_accepted_unix_nanos(accepted);
  d->set_topic(msg.topic());
  d->set_payload(msg.payload());
  if (!msg.key().empty())
    d->set_key(msg.key());
  if (!msg.headers().empty())
    *d->mutable_headers() = msg.headers();
  if (group) {
    d->set_delivery_id(id);
    d->set_attempt(1);
  }
}

} // namespace

std::vector<uint64_t> cq_hub::forward(const pb::Publish& publish) {
  auto count = publish.messages_size();
  auto accepted = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::vector<subscriber> targets;
  std::vector<std::pair<subscriber, int>> picks;
  uint64_t first = 0;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    first = next_id_;
    next_id_ += static_cast<uint64_t>(count);
    targets = subscribers_;
    for (auto& [name, group] : groups_)
      for (int i = 0; !group.members.empty() && i < count; ++i)
        picks.emplace_back(group.members[group.next++ % group.members.size()],
                           i);
  }
  std::vector<uint64_t> ids(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    ids[static_cast<std::size_t>(i)] = first + static_cast<uint64_t>(i);
  for (auto& target : targets) {
    auto frame = std::make_unique<pb::ServerFrame>();
    frame->mutable_deliveries()->mutable_deliveries()->Reserve(count);
    for (int i = 0; i < count; ++i)
      cq_add_delivery(*frame, publish, i, target,
                      ids[static_cast<std::size_t>(i)], accepted, false);
    target.stream->write(std::move(frame));
  }
  for (auto& [member, i] : picks) {
    auto frame = std::make_unique<pb::ServerFrame>();
    cq_add_delivery(*frame, publish, i, member,
                    ids[static_cast<std::size_t>(i)], accepted, true);
    member.stream->write(std::move(frame));
  }
  return ids;
}

// -- cq_stream: accepting and reading ----------------------------------------

cq_stream::cq_stream(cq_hub& hub, service& svc, grpc::ServerCompletionQueue* cq,
                     cq_gate& gate)
    : hub_(hub), service_(svc), cq_(cq), gate_(gate) {}

void cq_stream::listen(cq_hub& hub, service& svc,
                       grpc::ServerCompletionQueue* cq, cq_gate& gate) {
  auto stream = std::make_shared<cq_stream>(hub, svc, cq, gate);
  std::lock_guard<std::mutex> guard{stream->mutex_};
  stream->self_ = stream;
  stream->pending_ = 1;
  if (!gate.run([&] {
        svc.RequestSession(&stream->context_, &stream->stream_, cq, cq,
                           &stream->request_op_);
      }))
    stream->self_.reset(); // the relay stops: no more calls
}

void cq_stream::on_request(bool ok) {
  if (!ok) { // the relay stops: this stream never started
    std::shared_ptr<cq_stream> last;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      last = op_done_locked();
    }
    release(std::move(last));
    return;
  }
  listen(hub_, service_, cq_, gate_); // the next client's stream
  std::lock_guard<std::mutex> guard{mutex_};
  started_ = true;
  stream_.Read(&reading_, &read_op_); // takes over the request's count
}

void cq_stream::on_read(bool ok) {
  if (!ok) {
    // The client half-closed, cancelled or the relay stops.
    hub_.remove(this);
    std::shared_ptr<cq_stream> last;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      finish_locked(grpc::Status::OK);
      last = op_done_locked();
    }
    release(std::move(last));
    return;
  }
  bool finishing = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    finishing = finish_started_ || finish_after_writes_;
  }
  if (!finishing)
    handle(reading_); // without the lock: it may write to this stream
  reading_.Clear();
  std::shared_ptr<cq_stream> last;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!finish_started_ && !finish_after_writes_) {
      ++pending_;
      stream_.Read(&reading_, &read_op_);
    }
    last = op_done_locked();
  }
  release(std::move(last));
}

void cq_stream::handle(const pb::ClientFrame& frame) {
  auto reply = std::make_unique<pb::ServerFrame>();
  switch (frame.kind_case()) {
  case pb::ClientFrame::kSubscribe: {
    auto id = frame.subscribe().subscription_id();
    if (frame.subscribe().group().empty())
      hub_.add({shared_from_this(), id});
    else
      hub_.join(frame.subscribe().group(), {shared_from_this(), id});
    auto* subscribed = reply->mutable_subscribed();
    subscribed->set_subscription_id(id);
    subscribed->set_request_id(frame.request_id());
    break;
  }
  case pb::ClientFrame::kUnsubscribe: {
    auto id = frame.unsubscribe().subscription_id();
    hub_.remove(this, id);
    reply->mutable_unsubscribed()->set_subscription_id(id);
    break;
  }
  case pb::ClientFrame::kPublish: {
    auto ids = hub_.forward(frame.publish());
    if (!frame.publish().confirm())
      return;
    auto* confirm = reply->mutable_publish_confirm();
    confirm->set_request_id(frame.request_id());
    for (auto id : ids)
      confirm->add_results()->set_id(id);
    break;
  }
  case pb::ClientFrame::kAck:
  case pb::ClientFrame::kNack:
  case pb::ClientFrame::kInProgress:
    return; // taken, as the broker takes them; nothing is held to redeliver
  default: {
    auto* error = reply->mutable_error();
    error->set_request_id(frame.request_id());
    error->mutable_error()->set_code(grpc::StatusCode::UNIMPLEMENTED);
    error->mutable_error()->set_reason("unimplemented");
    error->mutable_error()->set_message(
        "the relay forwards publish frames to subscriptions and groups only");
    break;
  }
  }
  write(std::move(reply));
}

// -- cq_stream: writing and finishing ----------------------------------------

void cq_stream::write(std::unique_ptr<pb::ServerFrame> frame) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!started_ || finish_started_ || finish_after_writes_)
    return;
  if (writing_ != nullptr) {
    if (queued_.size() >= max_queued_frames) {
      queued_.clear();
      finish_locked(grpc::Status{grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "the relay holds " +
                                     std::to_string(max_queued_frames) +
                                     " frames for this stream already"});
      return;
    }
    queued_.push_back(std::move(frame));
    return;
  }
  writing_ = std::move(frame);
  start_write_locked();
}

void cq_stream::start_write_locked() {
  // As the callback relay: with frames queued behind this one, gRPC may
  // send it together with the next.
  grpc::WriteOptions options;
  if (!queued_.empty())
    options.set_buffer_hint();
  ++pending_;
  stream_.Write(*writing_, options, &write_op_);
}

void cq_stream::on_write(bool ok) {
  std::shared_ptr<cq_stream> last;
  std::unique_lock<std::mutex> guard{mutex_};
  writing_.reset();
  if (!ok) {
    queued_.clear();
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"});
  } else if (!queued_.empty()) {
    writing_ = std::move(queued_.front());
    queued_.pop_front();
    start_write_locked();
  } else if (finish_after_writes_) {
    finish_after_writes_ = false;
    finish_locked(std::move(final_status_));
  }
  last = op_done_locked();
  guard.unlock();
  release(std::move(last));
}

void cq_stream::finish_locked(grpc::Status status) {
  if (finish_started_)
    return;
  if (writing_ != nullptr) {
    // One write at a time: the status follows the frames already queued.
    if (!finish_after_writes_) {
      finish_after_writes_ = true;
      final_status_ = std::move(status);
    }
    return;
  }
  finish_started_ = true;
  ++pending_;
  stream_.Finish(status, &finish_op_);
}

void cq_stream::on_finish(bool /*ok*/) {
  std::shared_ptr<cq_stream> last;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    last = op_done_locked();
  }
  release(std::move(last));
}

std::shared_ptr<cq_stream> cq_stream::op_done_locked() {
  if (--pending_ > 0)
    return nullptr;
  // Nothing pending: no completion names this stream again.
  return std::move(self_);
}

void cq_stream::release(std::shared_ptr<cq_stream> last) {
  // The hub's references go last; a publisher that copied one before drops
  // its write (finish started) and may delete the stream.
  if (last == nullptr)
    return;
  hub_.remove(last.get());
  gate_.leave();
}

} // namespace tb::relay_cq
