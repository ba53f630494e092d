// The asynchronous client's way to a broker: it tries the addresses in
// turn (each once per round, with the configured backoff between rounds),
// says why when it gives up, and learns the broker's limits once a stream
// is open (docs/client.md, "Several addresses and failover").

#include "client/detail/client_core.hpp"

#include "client/message_limit.hpp"
#include "client/reach.hpp"
#include "client/tls_diagnosis.hpp"

namespace tb::client::detail {

bool client_core::connect(lock& guard) {
  // With several addresses a failure moves on to the next one at once; the
  // backoff is waited after each round in which every address failed, and
  // the client gives up after `reconnect_max_attempts` such rounds. With
  // one address, a round is one attempt: the behaviour of old.
  auto count = static_cast<int>(nodes_.size());
  auto attempts = std::max(1, options_.reconnect_max_attempts);
  while (!closing_ && final_status_.ok()) {
    if (failures_ >= attempts * count) {
      final_status_ = give_up_status(guard);
      break;
    }
    if (failures_ > 0 && failures_ % count == 0) {
      auto rounds = failures_ / count;
      auto delay = std::min(options_.reconnect_initial_backoff *
                                (1 << std::min(rounds - 1, 16)),
                            options_.reconnect_max_backoff);
      io_cv_.wait_for(guard, delay, [this] { return closing_; });
      if (closing_)
        break;
    }
    if (try_node(guard, current_)) {
      learn_limits(guard);
      open_stream(guard);
      return true;
    }
    if (closing_)
      break;
    ++failures_;
    next_address();
  }
  return false;
}

bool client_core::try_node(lock& guard, std::size_t index) {
  auto channel = nodes_[index]->channel();
  auto wait = std::max(options_.reconnect_max_backoff,
                       options_.reconnect_initial_backoff);
  guard.unlock();
  bool up = false;
  if (nodes_.size() == 1)
    up = channel->WaitForConnected(std::chrono::system_clock::now() + wait);
  else // a refused address fails at once: the next one is tried
    up = wait_reachable(*channel, wait) == reach_outcome::connected;
  guard.lock();
  return up && !closing_;
}

void client_core::next_address() {
  if (nodes_.size() < 2)
    return;
  current_ = (current_ + 1) % nodes_.size();
  limits_known_ = false; // another broker may have other limits
}

grpc::Status client_core::give_up_status(lock& guard) {
  auto text = "gave up after " + std::to_string(failures_) +
              (failures_ == 1 ? " failed attempt" : " failed attempts") +
              " to reach the broker at " + address_;
  if (nodes_.size() > 1)
    text = "gave up after " + std::to_string(failures_) +
           " failed attempts to reach any of the " +
           std::to_string(nodes_.size()) + " brokers at " + address_ +
           " (each tried " + std::to_string(failures_ / nodes_.size()) +
           " times)";
  // Issue 26, point 8: name the likely cause (a TLS problem, nothing
  // listening, ...) as the sync connection does; for each address.
  guard.unlock();
  std::string causes;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto message = last_connect_error(nodes_[i]->channel());
    auto cause =
        message.empty() ? std::string{} : nodes_[i]->likely_cause(message);
    if (cause.empty())
      continue;
    if (nodes_.size() == 1)
      causes = cause;
    else
      causes += (causes.empty() ? "" : "; ") + addresses_[i] + ": " + cause;
  }
  guard.lock();
  return grpc::Status{grpc::StatusCode::UNAVAILABLE,
                      causes.empty() ? text : text + ": " + causes};
}

void client_core::learn_limits(lock& guard) {
  if (limits_known_)
    return;
  guard.unlock();
  auto limit = ask_max_message_bytes(
      nodes_[current_]->stub(), std::chrono::system_clock::now() +
                                    std::max(options_.reconnect_max_backoff,
                                             std::chrono::milliseconds{1000}));
  guard.lock();
  if (limit) {
    limits_known_ = true;
    max_message_bytes_ = *limit;
  }
}

} // namespace tb::client::detail
