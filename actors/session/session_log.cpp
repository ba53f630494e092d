#include "actors/session/session_log.hpp"

#include <utility>

namespace tb {

void session_log::set_peer(std::string peer, std::string client_name) {
  peer_ = std::move(peer);
  client_name_ = std::move(client_name);
  refusals_.set_peer(peer_);
}

std::vector<log::field> session_log::who(log::fields rest) const {
  std::vector<log::field> result;
  result.reserve(rest.size() + 2);
  result.emplace_back("peer", peer_);
  if (!client_name_.empty())
    result.emplace_back("name", client_name_);
  result.insert(result.end(), rest.begin(), rest.end());
  return result;
}

void session_log::note(log::level lvl, std::string_view msg,
                       log::fields rest) const {
  log::write(lvl, msg, who(rest));
}

void session_log::subscribed(uint64_t subscription_id,
                             std::string_view pattern) {
  subscription sub;
  sub.pattern = pattern;
  subscriptions_[subscription_id] = std::move(sub);
}

void session_log::unsubscribed(uint64_t subscription_id, time_point now) {
  auto i = subscriptions_.find(subscription_id);
  if (i == subscriptions_.end())
    return;
  auto& sub = i->second;
  if (sub.losing) {
    --losing_;
    if (sub.announced)
      write(log::level::info, "slow consumer stopped losing messages",
            subscription_id, sub, now, "unsubscribed");
  }
  subscriptions_.erase(i);
}

void session_log::lost(const std::vector<drop_notice>& losses, time_point now) {
  for (auto& loss : losses) {
    auto i = subscriptions_.find(loss.subscription_id);
    if (i == subscriptions_.end())
      continue;
    auto& sub = i->second;
    sub.unlogged += loss.count;
    sub.total = loss.total;
    auto quiet = !sub.logged || now - sub.last_line >= loss_log_interval;
    if (!sub.losing) {
      sub.losing = true;
      ++losing_;
      sub.announced = quiet;
      if (quiet)
        write(log::level::warn, "slow consumer losing messages",
              loss.subscription_id, sub, now);
    } else if (quiet) {
      sub.announced = true;
      write(log::level::warn, "slow consumer still losing messages",
            loss.subscription_id, sub, now);
    }
  }
}

void session_log::check_caught_up(const delivery_buffer& buffer,
                                  time_point now) {
  for (auto& [id, sub] : subscriptions_) {
    if (losing_ == 0)
      return;
    if (!sub.losing || buffer.queued(id) > 0)
      continue;
    sub.losing = false;
    --losing_;
    if (sub.announced)
      write(log::level::info, "slow consumer caught up", id, sub, now);
    sub.announced = false;
  }
}

void session_log::closed(const session_stats& stats, std::string_view ended,
                         time_point now) {
  if (closed_)
    return;
  closed_ = true;
  for (auto& [id, sub] : subscriptions_)
    if (sub.losing && sub.announced)
      write(log::level::info, "slow consumer stopped losing messages", id, sub,
            now, "session_closed");
  refusals_.flush(now);
  log::write(log::level::info, "session closed",
             who({{"ended", ended},
                  {"duration_ms", stats.connected_ms},
                  {"published", stats.published},
                  {"delivered", stats.delivered},
                  {"dropped", stats.dropped},
                  {"subscriptions", stats.subscriptions},
                  {"refused", stats.refused}}));
}

void session_log::write(log::level lvl, std::string_view msg, uint64_t id,
                        subscription& sub, time_point now,
                        const char* because) {
  if (because == nullptr)
    log::write(lvl, msg,
               who({{"subscription", id},
                    {"pattern", sub.pattern},
                    {"lost", sub.unlogged},
                    {"total", sub.total}}));
  else
    log::write(lvl, msg,
               who({{"subscription", id},
                    {"pattern", sub.pattern},
                    {"lost", sub.unlogged},
                    {"total", sub.total},
                    {"because", because}}));
  sub.unlogged = 0;
  sub.logged = true;
  sub.last_line = now;
}

} // namespace tb
