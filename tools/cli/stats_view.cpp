#include "tools/cli/stats_view.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <vector>

#include "tools/cli/text_format.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// Returns the label of a totals line, padded so that the values align.
std::string label(const char* name) {
  std::string text = name;
  text.resize(10, ' ');
  return text;
}

// Prints "(showing N of M WHAT; see --limit)" when a list was cut.
void print_cut(std::ostream& out, int shown, uint64_t matched,
               const char* what) {
  if (matched > static_cast<uint64_t>(shown))
    out << "(showing " << shown << " of " << matched << ' ' << what
        << "; see --limit)\n";
}

// Prints the broker totals: title, messages, clients, memory, latency.
void print_totals(std::ostream& out, const pb::BrokerCounters& b,
                  const stats_view& view) {
  out << "tinybroker " << b.version() << " at " << view.server << ", up "
      << format_elapsed(b.uptime_ms()) << view.title_note << '\n';
  out << label("messages") << "published " << b.published() << ", unrouted "
      << b.unrouted() << ", delivered " << b.delivered() << ", dropped "
      << b.dropped() << ", refused " << b.refused();
  if (b.unauthenticated() + b.permission_denied() != 0)
    out << " (unauthenticated " << b.unauthenticated() << ", permission denied "
        << b.permission_denied() << ")";
  out << '\n';
  if (b.requests() + b.no_responders() != 0)
    out << label("requests") << "sent " << b.requests() << ", replied "
        << b.replies() << ", no responders " << b.no_responders()
        << ", timed out " << b.request_timeouts() << ", late replies "
        << b.late_replies() << ", waiting " << b.pending_requests() << '\n';
  if (b.duplicates() + b.dedup_ids() + b.dedup_evicted() != 0) {
    out << label("dedup") << "duplicates " << b.duplicates()
        << ", ids remembered " << b.dedup_ids();
    if (b.dedup_evicted() != 0)
      out << ", forgotten early " << b.dedup_evicted();
    out << '\n';
  }
  out << label("clients") << "sessions " << b.sessions() << ", subscriptions "
      << b.subscriptions() << ", topics " << b.topics() << ", groups "
      << b.groups() << '\n';
  out << label("memory") << "rss " << format_bytes(b.rss_bytes()) << ", held "
      << format_bytes(b.held_bytes()) << ", buffered " << b.buffered()
      << " deliveries\n";
  // Issue 29: delayed fan-out and TTL drops, when there are any.
  if (b.fanout_scheduled() + b.fanout_delayed_delivered() +
          b.fanout_scheduled_refused() + b.fanout_expired() !=
      0) {
    out << label("fan-out") << "scheduled " << b.fanout_scheduled();
    if (auto due = b.fanout_next_due_unix_ms(); due != 0) {
      auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
      out << " (next due in "
          << format_elapsed(
                 static_cast<uint64_t>(std::max<int64_t>(0, due - now)))
          << ")";
    }
    out << ", delayed delivered " << b.fanout_delayed_delivered()
        << ", refused " << b.fanout_scheduled_refused() << ", expired "
        << b.fanout_expired() << '\n';
  }
  auto& latency = b.delivery_latency();
  out << label("latency");
  if (latency.count() == 0)
    out << "no deliveries measured yet\n";
  else
    out << "p50 " << format_quantile(estimate_quantile(latency, 0.5))
        << ", p99 " << format_quantile(estimate_quantile(latency, 0.99))
        << " over " << latency.count() << " deliveries\n";
}

// Prints the rates line of a watch view.
void print_rates(std::ostream& out, const std::optional<broker_rates>& rates) {
  auto show = [&](double broker_rates::*rate) {
    return rates ? format_rate((*rates).*rate) : std::string{"-"};
  };
  out << label("rates") << "published/s " << show(&broker_rates::published)
      << ", delivered/s " << show(&broker_rates::delivered) << ", dropped/s "
      << show(&broker_rates::dropped) << '\n';
}

// Prints the topics table.
void print_topics(std::ostream& out, const pb::StatsReply& reply) {
  text_table table{{"TOPIC", "DESTINATIONS", "GROUPS", "PUBLISHERS"}};
  for (auto& t : reply.topics())
    table.add_row({t.name(), std::to_string(t.destinations()),
                   std::to_string(t.groups()), std::to_string(t.publishers())});
  if (table.empty())
    out << "no topics\n";
  else
    table.print(out);
  print_cut(out, reply.topics_size(), reply.topics_matched(), "topics");
}

// Returns true if a session sent a request, got a reply or had one dropped
// as late: then the sessions table shows the request columns.
bool any_requests(const pb::StatsReply& reply) {
  return std::any_of(reply.sessions().begin(), reply.sessions().end(),
                     [](const pb::SessionStats& s) {
                       return s.requests() + s.replies() + s.no_responders() +
                                  s.request_timeouts() + s.late_replies() !=
                              0;
                     });
}

// Prints the sessions table; the request columns only when a session used
// request/reply.
void print_sessions(std::ostream& out, const pb::StatsReply& reply) {
  bool tokens =
      std::any_of(reply.sessions().begin(), reply.sessions().end(),
                  [](const pb::SessionStats& s) { return !s.token().empty(); });
  bool requests = any_requests(reply);
  std::vector<std::string> columns{
      "NAME",          tokens ? "PEER (TOKEN)" : "PEER",
      "PUBLISHED",     "UNROUTED",
      "DELIVERED",     "DROPPED",
      "SUBSCRIPTIONS", "BUFFERED",
      "BUFFERED_BYTES"};
  if (requests)
    columns.insert(columns.end(), {"REQUESTS", "REPLIES", "NO_RESPONDERS",
                                   "TIMEOUTS", "LATE_REPLIES"});
  columns.push_back("CONNECTED");
  text_table table{std::move(columns), 2};
  for (auto& s : reply.sessions()) {
    std::vector<std::string> row{
        s.client_name().empty() ? "-" : s.client_name(),
        tokens ? s.peer() + " (" + s.token() + ")" : s.peer(),
        std::to_string(s.published()),
        std::to_string(s.unrouted()),
        std::to_string(s.delivered()),
        std::to_string(s.dropped()),
        std::to_string(s.subscriptions()),
        std::to_string(s.buffered_messages()),
        format_bytes(s.buffered_bytes())};
    if (requests)
      row.insert(row.end(),
                 {std::to_string(s.requests()), std::to_string(s.replies()),
                  std::to_string(s.no_responders()),
                  std::to_string(s.request_timeouts()),
                  std::to_string(s.late_replies())});
    row.push_back(format_elapsed(s.connected_ms()));
    table.add_row(std::move(row));
  }
  if (table.empty())
    out << "no sessions\n";
  else
    table.print(out);
  print_cut(out, reply.sessions_size(), reply.sessions_matched(), "sessions");
}

// Prints the actors table, the fullest mailbox first.
void print_actors(std::ostream& out, const pb::StatsReply& reply) {
  std::vector<const pb::ActorStats*> actors;
  for (auto& a : reply.actors())
    actors.push_back(&a);
  std::stable_sort(actors.begin(), actors.end(), [](auto* x, auto* y) {
    return std::make_tuple(y->mailbox(), x->kind(), x->name()) <
           std::make_tuple(x->mailbox(), y->kind(), y->name());
  });
  text_table table{{"KIND", "NAME", "ID", "MAILBOX"}, 2};
  for (auto* a : actors)
    table.add_row({a->kind(), a->name(), std::to_string(a->id()),
                   std::to_string(a->mailbox())});
  if (table.empty())
    out << "no actors\n";
  else
    table.print(out);
}

} // namespace

std::optional<quantile_estimate>
estimate_quantile(const pb::LatencyHistogram& histogram, double q) {
  auto buckets =
      static_cast<std::size_t>(std::min(histogram.upper_bounds_seconds_size(),
                                        histogram.cumulative_counts_size()));
  if (histogram.count() == 0 || buckets == 0)
    return std::nullopt;
  auto rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(histogram.count());
  double lower = 0;
  uint64_t below = 0;
  for (std::size_t i = 0; i < buckets; ++i) {
    auto upper = histogram.upper_bounds_seconds(static_cast<int>(i));
    auto count = histogram.cumulative_counts(static_cast<int>(i));
    if (static_cast<double>(count) >= rank && count > below) {
      auto within = (rank - static_cast<double>(below)) /
                    static_cast<double>(count - below);
      return quantile_estimate{lower + (upper - lower) * within, false};
    }
    lower = upper;
    below = std::max(below, count);
  }
  return quantile_estimate{lower, true};
}

std::string format_quantile(const std::optional<quantile_estimate>& estimate) {
  if (!estimate)
    return "-";
  return (estimate->beyond_last_bound ? ">" : "") +
         format_latency(estimate->seconds);
}

std::optional<double> seconds_between(const stats_sample& earlier,
                                      const stats_sample& later) {
  auto before = earlier.reply.broker().uptime_ms();
  auto after = later.reply.broker().uptime_ms();
  if (after < before)
    return std::nullopt;
  if (after > before)
    return static_cast<double>(after - before) / 1000;
  auto local = std::chrono::duration<double>(later.at - earlier.at).count();
  if (local <= 0)
    return std::nullopt;
  return local;
}

std::optional<broker_rates> rates_between(const stats_sample& earlier,
                                          const stats_sample& later) {
  auto seconds = seconds_between(earlier, later);
  auto& b0 = earlier.reply.broker();
  auto& b1 = later.reply.broker();
  if (!seconds || b1.published() < b0.published() ||
      b1.delivered() < b0.delivered() || b1.dropped() < b0.dropped())
    return std::nullopt;
  auto rate = [&](uint64_t before, uint64_t after) {
    return static_cast<double>(after - before) / *seconds;
  };
  return broker_rates{rate(b0.published(), b1.published()),
                      rate(b0.delivered(), b1.delivered()),
                      rate(b0.dropped(), b1.dropped())};
}

void fill_missing_group_rates(const stats_sample& earlier,
                              stats_sample& later) {
  auto seconds = seconds_between(earlier, later);
  if (!seconds)
    return;
  std::map<std::string, const pb::GroupCounters*> before;
  for (auto& g : earlier.reply.groups())
    before[g.name()] = &g.counters();
  for (auto& g : *later.reply.mutable_groups()) {
    auto found = before.find(g.name());
    if (found == before.end())
      continue;
    auto& b0 = *found->second;
    auto& b1 = *g.mutable_counters();
    if (b1.received_per_second_1s() == 0 && b1.received_per_second_10s() == 0 &&
        b1.received() > b0.received())
      b1.set_received_per_second_1s(
          static_cast<double>(b1.received() - b0.received()) / *seconds);
    if (b1.acked_per_second_1s() == 0 && b1.acked_per_second_10s() == 0 &&
        b1.acked() > b0.acked())
      b1.set_acked_per_second_1s(static_cast<double>(b1.acked() - b0.acked()) /
                                 *seconds);
  }
}

group_list by_backlog(const pb::StatsReply& reply) {
  auto groups = list_of(reply.groups());
  std::stable_sort(groups.begin(), groups.end(), [](auto* x, auto* y) {
    auto& a = x->counters();
    auto& b = y->counters();
    return std::make_tuple(b.pending(), b.in_flight(),
                           b.oldest_pending_age_ms(), x->name()) <
           std::make_tuple(a.pending(), a.in_flight(),
                           a.oldest_pending_age_ms(), y->name());
  });
  return groups;
}

void print_stats(std::ostream& out, const pb::StatsReply& reply,
                 const stats_view& view,
                 const std::optional<broker_rates>& rates) {
  auto gap = [&] {
    if (!view.watch)
      out << '\n';
  };
  print_totals(out, reply.broker(), view);
  if (view.watch)
    print_rates(out, rates);
  gap();
  auto groups = view.watch ? by_backlog(reply) : list_of(reply.groups());
  print_group_table(out, groups);
  print_cut(out, reply.groups_size(), reply.groups_matched(), "groups");
  if (view.members) {
    gap();
    print_member_table(out, groups);
  }
  if (view.topics) {
    gap();
    print_topics(out, reply);
  }
  if (view.sessions) {
    gap();
    print_sessions(out, reply);
  }
  if (view.actors) {
    gap();
    print_actors(out, reply);
  }
}

} // namespace tb::cli
