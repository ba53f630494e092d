// The asynchronous client's I/O thread: it opens the Session stream (again
// after a loss, with backoff), writes batched publishes, coalesced answers
// and subscribe frames, and shuts everything down on close.

#include "client/detail/client_core.hpp"

#include "client/addresses.hpp"
#include "client/check.hpp"

#include <algorithm>
#include <iostream>

namespace tb::client::detail {

namespace pb = tinybroker::v1;

namespace {

// Channel arguments that make gRPC retry the connection on our schedule.
grpc::ChannelArguments reconnect_args(const client_options& options) {
  grpc::ChannelArguments args;
  auto initial = static_cast<int>(options.reconnect_initial_backoff.count());
  auto most = static_cast<int>(options.reconnect_max_backoff.count());
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, std::max(initial, most));
  return args;
}

// Stream endings that another attempt cannot fix.
bool is_permanent(grpc::StatusCode code) {
  switch (code) {
  case grpc::StatusCode::INVALID_ARGUMENT:
  case grpc::StatusCode::UNAUTHENTICATED:
  case grpc::StatusCode::PERMISSION_DENIED:
  case grpc::StatusCode::UNIMPLEMENTED:
    return true;
  default:
    return false;
  }
}

// Checks `addresses` (none empty, at least one) and shuffles them when
// the options say so.
std::vector<std::string> core_addresses(std::vector<std::string> addresses,
                                        const client_options& options) {
  if (addresses.empty())
    throw invalid_request(grpc::Status{grpc::StatusCode::INVALID_ARGUMENT,
                                       "no broker address given; expected "
                                       "at least one HOST:PORT"});
  for (auto& address : addresses)
    if (address.empty())
      throw invalid_request(grpc::Status{grpc::StatusCode::INVALID_ARGUMENT,
                                         "an empty broker address among " +
                                             std::to_string(addresses.size()) +
                                             "; expected HOST:PORT in each"});
  if (options.randomize_addresses && addresses.size() > 1)
    shuffle_addresses(addresses);
  return addresses;
}

} // namespace

client_core::client_core(std::vector<std::string> addresses,
                         client_options options)
    : options_(std::move(options)),
      addresses_(core_addresses(std::move(addresses), options_)),
      address_(join_addresses(addresses_)),
      callbacks_(options_.max_queued_callbacks),
      id_prefix_(random_msg_id_prefix()) {
  for (auto& address : addresses_)
    nodes_.push_back(std::make_unique<connection>(
        make_channel(address, options_.security, options_.name,
                     reconnect_args(options_)),
        address, options_.security));
}

client_core::~client_core() {
  close();
}

void client_core::start() {
  std::lock_guard<std::mutex> guard{mutex_};
  started_ = true;
  callback_thread_ = std::thread{[this] {
    callbacks_.run();
  }};
  io_thread_ = std::thread{[this] {
    run();
  }};
}

void client_core::close() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    closing_ = true;
    io_cv_.notify_all();
    state_cv_.notify_all();
  }
  // on_error may close the client from the I/O thread (at the give-up):
  // the destructor joins it later.
  if (std::this_thread::get_id() == io_thread_.get_id())
    return;
  if (io_thread_.joinable())
    io_thread_.join();
  callbacks_.close();
  if (callback_thread_.joinable())
    callback_thread_.join();
}

bool client_core::wait_connected(std::chrono::milliseconds timeout) {
  lock guard{mutex_};
  state_cv_.wait_for(guard, timeout,
                     [this] { return state_ != connection_state::connecting; });
  return state_ == connection_state::connected;
}

connection_state client_core::state() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return state_;
}

client_stats client_core::stats() const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto result = stats_;
  result.connections = generation_;
  return result;
}

void client_core::report(const grpc::Status& status) {
  if (options_.on_error)
    options_.on_error(status);
}

void client_core::run() {
  lock guard{mutex_};
  while (!closing_ && connect(guard)) {
    serve(guard);
    finish_stream(guard);
  }
  shut_down(guard);
}

void client_core::open_stream(lock& guard) {
  auto next = std::make_unique<stream_state>();
  next->generation = generation_ + 1;
  guard.unlock();
  next->stream = nodes_[current_]->stub().Session(&next->context);
  guard.lock();
  generation_ = next->generation;
  auto* raw = next.get();
  next->reader = std::thread{[this, raw] {
    read_loop(*raw);
  }};
  stream_ = std::move(next);
  control_.clear();
  // The probe: an empty publish whose confirm (or any frame) shows that the
  // broker serves this stream; publishes wait for it (see on_established).
  pb::ClientFrame probe;
  probe.set_request_id(++next_request_id_);
  probe.mutable_publish()->set_confirm(true);
  control_.push_back(std::move(probe));
  batches_.clear();
  std::vector<const subscription*> subs;
  for (auto& [id, sub] : active_)
    subs.push_back(sub.get());
  queue_subscribes(subs);
}

void client_core::on_established(stream_state& stream) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (stream_.get() != &stream || closing_)
    return;
  failures_ = 0;
  state_ = connection_state::connected;
  state_cv_.notify_all();
  io_cv_.notify_all();
}

std::optional<clock::time_point> client_core::next_deadline() const {
  std::optional<clock::time_point> result;
  // Publishes wait for the probe's answer (on_established wakes us).
  if (!unsent_.empty() && state_ == connection_state::connected)
    result = unsent_.front().queued_at + options_.linger;
  if (answers_.count > 0) {
    auto due = answers_.first_at + options_.answer_linger;
    result = result ? std::min(*result, due) : due;
  }
  return result;
}

void client_core::serve(lock& guard) {
  std::vector<pb::ClientFrame> out;
  for (;;) {
    if (stream_->ended)
      return;
    if (writing_) { // a publisher writes its own frame (see publish)
      ++writer_waiters_;
      io_cv_.wait(guard);
      --writer_waiters_;
      continue;
    }
    out.clear();
    while (!control_.empty()) {
      out.push_back(std::move(control_.front()));
      control_.pop_front();
    }
    take_answer_frames(out, closing_);
    if (state_ == connection_state::connected)
      take_publish_frames(out, closing_ || flush_requested_);
    if (out.empty()) {
      if (closing_)
        return;
      if (auto deadline = next_deadline())
        io_cv_.wait_until(guard, *deadline);
      else
        io_cv_.wait(guard);
      continue;
    }
    if (!write_frames(guard, out))
      return; // the reader sees the end and its status
  }
}

bool client_core::write_frames(lock& guard, std::vector<pb::ClientFrame>& out) {
  // Frames are taken and written under `writing_`, so whoever writes next
  // writes later frames: the stream carries them in the order taken.
  writing_ = true;
  auto* stream = stream_->stream.get();
  guard.unlock();
  bool written = true;
  for (auto& frame : out)
    if (!(written = stream->Write(frame)))
      break;
  guard.lock();
  writing_ = false;
  if (writer_waiters_ > 0)
    io_cv_.notify_all();
  return written;
}

bool client_core::can_write_inline() const {
  // Without a linger time nothing waits to be batched: the publishing
  // thread writes its frame itself when the stream is idle, instead of
  // waking the I/O thread (no hand-over at low rates).
  return options_.linger.count() == 0 && !writing_ && !closing_ &&
         state_ == connection_state::connected && stream_ != nullptr &&
         !stream_->ended && control_.empty() && answers_.count == 0;
}

void client_core::finish_stream(lock& guard) {
  auto* current = stream_.get();
  ++writer_waiters_;
  io_cv_.wait(guard, [this] { return !writing_; });
  --writer_waiters_;
  if (closing_ && !current->ended) {
    guard.unlock();
    current->stream->WritesDone();
    guard.lock();
    io_cv_.wait_for(guard, options_.close_timeout,
                    [current] { return current->ended; });
  }
  if (!current->ended)
    current->context.TryCancel();
  guard.unlock();
  current->reader.join();
  guard.lock();
  auto status = current->status;
  if (!current->got_frame)
    ++failures_; // the broker never answered on it
  // The broker that served it is left: the next connection tries the next
  // address first (NATS's rotation), so a node that died is not waited for.
  auto lost_address = addresses_[current_];
  next_address();
  stream_.reset();
  state_ = connection_state::connecting;
  control_.clear();
  answers_ = pending_answers{};
  state_cv_.notify_all();
  for (auto& [id, sub] : active_)
    sub->set_subscribed(false);
  if (options_.idempotent && !closing_) {
    // Sent again once the client reconnects (or failed with the final
    // status if it gives up): the broker confirms what it already routed
    // as a duplicate.
    requeue_in_flight();
  } else
    fail_all_in_flight(
        guard, grpc::Status{grpc::StatusCode::UNAVAILABLE,
                            "the connection to " + lost_address +
                                " was lost before the confirm (" +
                                status.error_message() +
                                "); the message may or may not be routed"});
  if (!closing_ && is_permanent(status.error_code()))
    final_status_ = status;
}

grpc::Status
client_core::wait_closed(std::optional<std::chrono::milliseconds> timeout) {
  lock guard{mutex_};
  // Once closed, and the final status (if any) given to on_error.
  auto closed = [this] {
    return state_ == connection_state::closed && !reporting_;
  };
  if (!timeout)
    state_cv_.wait(guard, closed);
  else if (!state_cv_.wait_for(guard, *timeout, closed))
    return grpc::Status{grpc::StatusCode::DEADLINE_EXCEEDED,
                        "the client of " + address_ + " is still open after " +
                            std::to_string(timeout->count()) + " ms"};
  return final_status_;
}

void client_core::closed_for_good(const grpc::Status& status) {
  // Issue 26: a consumer that only has callbacks must not stop silently.
  if (options_.on_error) {
    options_.on_error(status);
    return;
  }
  std::cerr << "tinybroker client: warning: the client closed for good: "
            << status.error_message() << "\n";
}

void client_core::shut_down(lock& guard) {
  auto closing = closing_;
  auto status = closing ? grpc::Status{grpc::StatusCode::CANCELLED,
                                       "the client was closed before the "
                                       "message was sent"}
                        : final_status_;
  reporting_ = !closing && !status.ok(); // wait_closed waits for the report
  state_ = connection_state::closed;
  state_cv_.notify_all();
  fail_unsent(guard, status);
  auto ended = std::move(active_);
  active_.clear();
  guard.unlock();
  for (auto& [id, sub] : ended)
    end_subscription(sub, closing ? grpc::Status::OK : status);
  if (!closing && !status.ok())
    closed_for_good(status);
  guard.lock();
  reporting_ = false;
  state_cv_.notify_all();
}

} // namespace tb::client::detail
