// The asynchronous client's receiving side: the reader thread, the frames
// the broker sends, and the subscriptions they belong to.

#include "client/detail/client_core.hpp"

#include <algorithm>
#include <utility>

#include "client/check.hpp"

namespace tb::client::detail {

namespace pb = tinybroker::v1;

namespace {

// Returns INVALID_ARGUMENT if a string of `sub`'s subscribe is not UTF-8.
grpc::Status check_subscribe(const subscription& sub) {
  auto status = check_utf8("subscribe.pattern", sub.pattern());
  if (status.ok())
    status = check_utf8("subscribe.group", sub.options().group);
  auto& tags = sub.options().tags;
  for (std::size_t i = 0; status.ok() && i < tags.size(); ++i)
    status = check_utf8("subscribe.tags[" + std::to_string(i) + "]", tags[i]);
  return status;
}

} // namespace

grpc::Status to_status(const pb::Error& error) {
  return grpc::Status{static_cast<grpc::StatusCode>(error.code()),
                      error.message()};
}

std::vector<std::shared_ptr<subscription>>
client_core::subscribe_many(const std::vector<std::string>& patterns,
                            const delivery_handler& handler,
                            const subscribe_options& options) {
  std::vector<std::shared_ptr<subscription>> subs;
  std::vector<std::pair<std::shared_ptr<subscription>, grpc::Status>> refused;
  {
    lock guard{mutex_};
    std::vector<const subscription*> to_send;
    for (auto& pattern : patterns) {
      auto sub = std::make_shared<subscription>(
          ++next_subscription_id_, pattern, handler, options, weak_from_this());
      subs.push_back(sub);
      if (closing_ || state_ == connection_state::closed)
        refused.emplace_back(sub,
                             grpc::Status{grpc::StatusCode::FAILED_PRECONDITION,
                                          "the client is closed"});
      // Refused here, never sent: the broker would end the stream.
      else if (auto status = check_subscribe(*sub); !status.ok())
        refused.emplace_back(sub, status);
      else {
        active_.emplace(sub->id(), sub);
        to_send.push_back(sub.get());
      }
    }
    if (stream_ != nullptr && !to_send.empty()) { // else sent when it opens
      queue_subscribes(to_send);
      io_cv_.notify_all();
    }
  }
  for (auto& [sub, status] : refused)
    sub->end(status);
  return subs;
}

void client_core::unsubscribe(uint64_t id) {
  auto sub = remove(id);
  if (!sub)
    return;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (stream_ != nullptr) {
      pb::ClientFrame frame;
      frame.set_request_id(++next_request_id_);
      frame.mutable_unsubscribe()->set_subscription_id(id);
      control_.push_back(std::move(frame));
      io_cv_.notify_all();
    }
  }
  end_subscription(sub, grpc::Status::OK);
}

pb::ClientFrame client_core::subscribe_frame(const subscription& sub) {
  pb::ClientFrame frame;
  frame.set_request_id(++next_request_id_);
  fill_subscribe(*frame.mutable_subscribe(), sub);
  return frame;
}

void client_core::fill_subscribe(pb::Subscribe& req, const subscription& sub) {
  req.set_subscription_id(sub.id());
  req.set_pattern(sub.pattern());
  req.set_group(sub.options().group);
  req.set_max_in_flight(sub.options().max_in_flight);
  for (auto& tag : sub.options().tags)
    req.add_tags(tag);
}

void client_core::queue_subscribes(
    const std::vector<const subscription*>& subs) {
  if (subs.size() == 1) {
    control_.push_back(subscribe_frame(*subs.front()));
    ++stats_.subscribe_frames;
    return;
  }
  for (std::size_t at = 0; at < subs.size(); at += max_subscribes_per_frame) {
    auto end = std::min(subs.size(), at + max_subscribes_per_frame);
    pb::ClientFrame frame;
    frame.set_request_id(++next_request_id_);
    std::vector<uint64_t> ids;
    for (auto i = at; i < end; ++i) {
      fill_subscribe(*frame.mutable_subscribe_batch()->add_subscriptions(),
                     *subs[i]);
      ids.push_back(subs[i]->id());
    }
    batches_.emplace(frame.request_id(), std::move(ids));
    control_.push_back(std::move(frame));
    ++stats_.subscribe_frames;
  }
}

bool client_core::resend_batch(uint64_t request_id) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = batches_.find(request_id);
  if (i == batches_.end())
    return false;
  auto ids = std::move(i->second);
  batches_.erase(i);
  if (stream_ == nullptr)
    return true;
  for (auto id : ids)
    if (auto sub = active_.find(id); sub != active_.end()) {
      control_.push_back(subscribe_frame(*sub->second));
      ++stats_.subscribe_frames;
    }
  io_cv_.notify_all();
  return true;
}

std::shared_ptr<subscription> client_core::find(uint64_t id) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = active_.find(id);
  return i == active_.end() ? nullptr : i->second;
}

std::shared_ptr<subscription> client_core::remove(uint64_t id) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = active_.find(id);
  if (i == active_.end())
    return nullptr;
  auto sub = std::move(i->second);
  active_.erase(i);
  return sub;
}

void client_core::end_subscription(const std::shared_ptr<subscription>& sub,
                                   const grpc::Status& status) {
  if (!sub->end(status) || !sub->options().on_end)
    return;
  callbacks_.push([sub, status] { sub->options().on_end(status); });
}

void client_core::read_loop(stream_state& stream) {
  pb::ServerFrame frame;
  while (stream.stream->Read(&frame)) {
    if (!stream.got_frame.exchange(true))
      on_established(stream);
    on_frame(frame, stream.generation);
    frame.Clear();
  }
  auto status = stream.stream->Finish();
  std::lock_guard<std::mutex> guard{mutex_};
  stream.status = std::move(status);
  stream.ended = true;
  io_cv_.notify_all();
}

void client_core::on_frame(const pb::ServerFrame& frame, uint64_t generation) {
  switch (frame.kind_case()) {
  case pb::ServerFrame::kDeliveries:
    on_deliveries(frame.deliveries(), generation);
    break;
  case pb::ServerFrame::kPublishConfirm: {
    auto& confirm = frame.publish_confirm();
    complete(take_in_flight(confirm.request_id()), &confirm, grpc::Status::OK);
    break;
  }
  case pb::ServerFrame::kSubscribed:
    if (auto sub = find(frame.subscribed().subscription_id()))
      sub->set_subscribed(true);
    break;
  case pb::ServerFrame::kSubscribedBatch: {
    auto& answer = frame.subscribed_batch();
    {
      std::lock_guard<std::mutex> guard{mutex_};
      batches_.erase(answer.request_id());
    }
    for (auto id : answer.subscription_ids())
      if (auto sub = find(id))
        sub->set_subscribed(true);
    break;
  }
  case pb::ServerFrame::kUnsubscribed: {
    auto& notice = frame.unsubscribed();
    if (notice.reason().empty())
      break; // our own unsubscribe: already ended
    if (auto sub = remove(notice.subscription_id()))
      end_subscription(
          sub, grpc::Status{grpc::StatusCode::ABORTED, "the broker ended the "
                                                       "subscription: " +
                                                           notice.reason()});
    break;
  }
  case pb::ServerFrame::kDropped: {
    auto lost = frame.dropped().count();
    auto sub = find(frame.dropped().subscription_id());
    if (sub && sub->options().on_dropped)
      callbacks_.push([sub, lost] { sub->options().on_dropped(lost); });
    break;
  }
  case pb::ServerFrame::kError:
    on_error_frame(frame.error());
    break;
  default:
    report(grpc::Status{grpc::StatusCode::INTERNAL,
                        "the broker sent a frame this client does not "
                        "know; ignored"});
  }
}

void client_core::on_deliveries(const pb::Deliveries& batch,
                                uint64_t generation) {
  for (auto& wire : batch.deliveries()) {
    auto sub = find(wire.subscription_id());
    if (!sub) {
      // Ended here already: hand a group delivery on at once.
      if (wire.delivery_id() != 0)
        answer(generation, answer_kind::nack, wire.delivery_id(), 0);
      continue;
    }
    if (sub->options().on_reader_thread) {
      sub->deliver(delivery{wire, weak_from_this(), generation});
      continue;
    }
    auto item = std::make_shared<delivery>(wire, weak_from_this(), generation);
    callbacks_.push([sub, item] { sub->deliver(std::move(*item)); });
  }
}

void client_core::on_error_frame(const pb::ErrorFrame& error) {
  auto status = to_status(error.error());
  if (error.request() == "publish") {
    complete(take_in_flight(error.request_id()), nullptr, status);
  } else if (error.request() == "subscribe") {
    // A whole re-subscribe batch refused (the broker's
    // limits.max_subscribe_batch is lower): its entries go one by one.
    if (error.subscription_id() == 0 && resend_batch(error.request_id()))
      return;
    if (auto sub = remove(error.subscription_id()))
      end_subscription(sub, status);
  } else if (!(error.request() == "unsubscribe" &&
               status.error_code() == grpc::StatusCode::NOT_FOUND)) {
    // An unsubscribe racing the broker's own end is harmless.
    report(grpc::Status{status.error_code(),
                        "the broker refused a " + error.request() +
                            " frame: " + status.error_message()});
  }
}

} // namespace tb::client::detail
