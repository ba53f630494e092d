#include "tools/relay/relay_service.hpp"

#include <algorithm>
#include <chrono>
#include <string>

namespace tb::relay {

namespace pb = tinybroker::v1;

// -- stream_writer
// -------------------------------------------------------------

void stream_writer::write(std::unique_ptr<pb::ServerFrame> frame) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (reactor_ == nullptr || finished_ || finish_after_writes_)
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

void stream_writer::start_write_locked() {
  // Like the broker's bridge: with frames queued behind this one, gRPC may
  // send it together with the next.
  grpc::WriteOptions options;
  if (!queued_.empty())
    options.set_buffer_hint();
  reactor_->StartWrite(writing_.get(), options);
}

void stream_writer::write_done(bool ok) {
  std::lock_guard<std::mutex> guard{mutex_};
  writing_.reset();
  if (reactor_ == nullptr || finished_)
    return;
  if (!ok) {
    queued_.clear();
    finish_locked(grpc::Status{grpc::StatusCode::CANCELLED,
                               "writing to the client failed"});
    return;
  }
  if (!queued_.empty()) {
    writing_ = std::move(queued_.front());
    queued_.pop_front();
    start_write_locked();
    return;
  }
  if (finish_after_writes_)
    finish_locked(final_status_);
}

void stream_writer::finish(grpc::Status status) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (writing_ != nullptr) {
    finish_after_writes_ = true;
    final_status_ = std::move(status);
    return;
  }
  finish_locked(std::move(status));
}

void stream_writer::finish_locked(grpc::Status status) {
  if (finished_ || reactor_ == nullptr)
    return;
  finished_ = true;
  reactor_->Finish(status);
}

void stream_writer::detach() {
  std::lock_guard<std::mutex> guard{mutex_};
  reactor_ = nullptr;
  queued_.clear();
}

// -- relay_hub
// -----------------------------------------------------------------

void relay_hub::add(subscriber sub) {
  std::lock_guard<std::mutex> guard{mutex_};
  subscribers_.push_back(std::move(sub));
}

void relay_hub::join(const std::string& group, subscriber sub) {
  std::lock_guard<std::mutex> guard{mutex_};
  groups_[group].members.push_back(std::move(sub));
}

void relay_hub::drop_group(const std::string& group) {
  std::lock_guard<std::mutex> guard{mutex_};
  groups_.erase(group);
}

void relay_hub::remove(const stream_writer* writer, uint64_t subscription_id) {
  auto gone = [&](const subscriber& s) {
    return s.writer.get() == writer &&
           (subscription_id == 0 || s.subscription_id == subscription_id);
  };
  std::lock_guard<std::mutex> guard{mutex_};
  subscribers_.erase(
      std::remove_if(subscribers_.begin(), subscribers_.end(), gone),
      subscribers_.end());
  for (auto& [name, group] : groups_)
    group.members.erase(
        std::remove_if(group.members.begin(), group.members.end(), gone),
        group.members.end());
}

namespace {

// Appends message `i` of `publish` to `frame` as a delivery for `target`;
// a group member's delivery carries a delivery id (the message id).
void add_delivery(pb::ServerFrame& frame, const pb::Publish& publish, int i,
                  const relay_hub::subscriber& target, uint64_t id,
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

std::vector<uint64_t> relay_hub::forward(const pb::Publish& publish) {
  auto count = publish.messages_size();
  auto first = next_id_.fetch_add(static_cast<uint64_t>(count));
  std::vector<uint64_t> ids(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    ids[static_cast<std::size_t>(i)] = first + static_cast<uint64_t>(i);
  auto accepted = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::vector<subscriber> targets;
  // Each group's member for each message, chosen in turn.
  std::vector<std::pair<subscriber, int>> picks;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    targets = subscribers_;
    for (auto& [name, group] : groups_)
      for (int i = 0; !group.members.empty() && i < count; ++i)
        picks.emplace_back(group.members[group.next++ % group.members.size()],
                           i);
  }
  for (auto& target : targets) {
    auto frame = std::make_unique<pb::ServerFrame>();
    frame->mutable_deliveries()->mutable_deliveries()->Reserve(count);
    for (int i = 0; i < count; ++i)
      add_delivery(*frame, publish, i, target, ids[static_cast<std::size_t>(i)],
                   accepted, false);
    target.writer->write(std::move(frame));
  }
  for (auto& [member, i] : picks) {
    auto frame = std::make_unique<pb::ServerFrame>();
    add_delivery(*frame, publish, i, member, ids[static_cast<std::size_t>(i)],
                 accepted, true);
    member.writer->write(std::move(frame));
  }
  return ids;
}

// -- relay_stream
// --------------------------------------------------------------

relay_stream::relay_stream(relay_hub& hub)
    : hub_(hub), writer_(std::make_shared<stream_writer>(this)) {
  StartRead(&reading_);
}

void relay_stream::OnReadDone(bool ok) {
  if (!ok) {
    hub_.remove(writer_.get());
    writer_->finish(grpc::Status::OK);
    return;
  }
  handle(reading_);
  reading_.Clear();
  StartRead(&reading_);
}

void relay_stream::handle(const pb::ClientFrame& frame) {
  auto reply = std::make_unique<pb::ServerFrame>();
  switch (frame.kind_case()) {
  case pb::ClientFrame::kSubscribe: {
    auto id = frame.subscribe().subscription_id();
    if (frame.subscribe().group().empty())
      hub_.add({writer_, id});
    else
      hub_.join(frame.subscribe().group(), {writer_, id});
    auto* subscribed = reply->mutable_subscribed();
    subscribed->set_subscription_id(id);
    subscribed->set_request_id(frame.request_id());
    break;
  }
  case pb::ClientFrame::kUnsubscribe: {
    auto id = frame.unsubscribe().subscription_id();
    hub_.remove(writer_.get(), id);
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
  writer_->write(std::move(reply));
}

void relay_stream::OnWriteDone(bool ok) {
  writer_->write_done(ok);
}

void relay_stream::OnDone() {
  hub_.remove(writer_.get());
  writer_->detach();
  delete this;
}

grpc::ServerBidiReactor<pb::ClientFrame, pb::ServerFrame>*
relay_service::Session(grpc::CallbackServerContext* /*context*/) {
  return new relay_stream(hub_);
}

grpc::ServerUnaryReactor*
relay_service::CreateGroup(grpc::CallbackServerContext* context,
                           const pb::CreateGroupRequest* request,
                           pb::GroupInfo* reply) {
  reply->set_name(request->name());
  *reply->mutable_settings() = request->settings();
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor*
relay_service::DeleteGroup(grpc::CallbackServerContext* context,
                           const pb::DeleteGroupRequest* request,
                           pb::DeleteGroupReply* /*reply*/) {
  hub_.drop_group(request->name());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

} // namespace tb::relay
