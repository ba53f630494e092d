// `tinybroker-cli sub`: subscribes to a pattern, fan-out or as a member of
// a consumer group, prints each delivery, and answers group deliveries.

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/json_writer.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// The subscription id this command uses on its stream.
constexpr uint64_t subscription_id = 1;

// How a group member answers the deliveries it printed.
enum class answer { ack, nack, reject, none };

// What `sub` was asked to do.
struct sub_options {
  std::string pattern;
  std::string group;
  uint32_t max_in_flight = 0;
  std::vector<std::string> tags;
  bool ack = false;
  bool nack = false;
  bool reject = false;
  bool no_ack = false;
  std::chrono::milliseconds nack_delay{0};
  // 0: no --count, run until interrupted (or idle).
  uint64_t count = 0;
  // 0: no --idle-timeout.
  std::chrono::milliseconds idle_timeout{0};

  // Returns the answer the flags ask for (ack by default).
  answer mode() const {
    if (nack)
      return answer::nack;
    if (reject)
      return answer::reject;
    if (no_ack)
      return answer::none;
    return answer::ack;
  }
};

// Prints one delivery to standard output.
void print_delivery(const pb::Delivery& d, bool json) {
  std::vector<std::pair<std::string, std::string>> headers(d.headers().begin(),
                                                           d.headers().end());
  std::sort(headers.begin(), headers.end());
  if (json) {
    json_writer out;
    out.open_object()
        .number("id", d.message_id())
        .text("topic", d.topic())
        .signed_number("accepted_unix_nanos", d.accepted_unix_nanos())
        .number("attempt", d.attempt())
        .number("delivery_id", d.delivery_id())
        .text("key", d.key())
        .open_object("headers");
    for (auto& [name, value] : headers)
      out.text(name, value);
    out.close_object().bytes("payload", d.payload()).close_object();
    std::cout << out.str() << '\n';
    return;
  }
  std::cout << "[#" << d.message_id() << "] " << d.topic();
  if (d.attempt() != 0)
    std::cout << " attempt " << d.attempt();
  if (!d.key().empty())
    std::cout << " key " << d.key();
  for (auto& [name, value] : headers)
    std::cout << ' ' << name << '=' << value;
  std::cout << '\n' << d.payload() << '\n';
}

// Sends the answer `mode` for `ids`.
void send_answers(client::session& session, answer mode,
                  std::chrono::milliseconds nack_delay,
                  const std::vector<uint64_t>& ids) {
  if (ids.empty())
    return;
  switch (mode) {
  case answer::ack:
    session.ack(ids);
    break;
  case answer::nack:
    session.nack(ids, static_cast<uint32_t>(nack_delay.count()));
    break;
  case answer::reject:
    session.reject(ids);
    break;
  case answer::none:
    break;
  }
}

// Ends `sub` when `--idle-timeout` passed without a delivery after
// `printed` deliveries: exit 0 without `--count`, else a failure saying how
// many of the count arrived.
int idle_end(const sub_options& opts, uint64_t printed) {
  auto quiet =
      format_duration(static_cast<uint64_t>(opts.idle_timeout.count()));
  if (opts.count == 0) {
    std::cerr << "tinybroker-cli: no delivery for " << quiet << "; printed "
              << printed << std::endl;
    return exit_ok;
  }
  throw cli_failure(exit_idle,
                    "no delivery for " + quiet + ": printed " +
                        std::to_string(printed) + " of --count " +
                        std::to_string(opts.count),
                    "DEADLINE_EXCEEDED");
}

// Runs `sub` once the command line was parsed.
int run_sub(const sub_options& opts, const connection_options& conn_opts) {
  require_utf8("pattern", opts.pattern);
  require_utf8("--group", opts.group);
  for (auto& tag : opts.tags)
    require_utf8("--tag", tag);
  stop_signals stop; // before connect(): gRPC's threads inherit the mask
  auto conn = connect_unless_stopped(conn_opts, stop);
  if (!conn)
    return exit_ok; // Ctrl-C while waiting for an absent broker
  auto session = conn->open_session();
  if (opts.group.empty())
    session->subscribe(subscription_id, opts.pattern, "", subscribe_request_id);
  else
    session->join(subscription_id, opts.group, opts.pattern, opts.max_in_flight,
                  subscribe_request_id, opts.tags);
  if (!wait_subscribed(*session, opts.pattern, conn_opts, stop))
    return stopped(*session, stop, conn_opts, "printed", 0, opts.count);
  std::cerr << "subscribed to " << opts.pattern;
  if (!opts.group.empty())
    std::cerr << " in group " << opts.group;
  std::cerr << std::endl;
  uint64_t printed = 0;
  auto idle = opts.idle_timeout.count() > 0;
  auto last_delivery = std::chrono::steady_clock::now();
  while (opts.count == 0 || printed < opts.count) {
    if (stop.pending())
      return stopped(*session, stop, conn_opts, "printed", printed, opts.count);
    auto wait = stop_check_interval;
    if (idle) {
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          last_delivery + opts.idle_timeout - std::chrono::steady_clock::now());
      if (wait.count() <= 0) {
        session->close(conn_opts.timeout);
        return idle_end(opts, printed);
      }
      wait = std::min(wait, stop_check_interval);
    }
    auto frame = session->next(wait);
    if (!frame) {
      if (session->ended())
        stream_lost(*session);
      continue;
    }
    if (frame->has_deliveries()) {
      last_delivery = std::chrono::steady_clock::now();
      std::vector<uint64_t> answered;
      for (auto& d : frame->deliveries().deliveries()) {
        if (opts.count != 0 && printed == opts.count)
          break; // unanswered group deliveries go back when the stream ends
        print_delivery(d, conn_opts.json);
        ++printed;
        if (d.delivery_id() != 0)
          answered.push_back(d.delivery_id());
      }
      std::cout.flush();
      send_answers(*session, opts.mode(), opts.nack_delay, answered);
    } else if (frame->has_dropped()) {
      std::cerr << "tinybroker-cli: lost " << frame->dropped().count()
                << " messages (" << frame->dropped().total() << " in total): "
                << (frame->dropped().reason() == "expired"
                        ? "their TTL passed before they could be written"
                        : "this subscriber did not keep up")
                << std::endl;
    } else if (frame->has_unsubscribed()) {
      throw cli_failure(exit_refused, "subscription ended by the broker: " +
                                          frame->unsubscribed().reason());
    } else if (frame->has_error()) {
      std::cerr << "tinybroker-cli: " << frame->error().request()
                << " refused: " << describe(frame->error().error())
                << std::endl;
    }
  }
  session->close(conn_opts.timeout);
  return exit_ok;
}

} // namespace

command add_sub_command(CLI::App& app, const connection_options& conn_opts) {
  auto opts = std::make_shared<sub_options>();
  auto* cmd = app.add_subcommand(
      "sub", "Subscribe to a topic pattern and print each delivery: "
             "'[#ID] TOPIC attempt N key K NAME=VALUE...' and the payload on "
             "the next line. Without --group every subscriber gets a copy; "
             "with --group the members share the messages and answer each "
             "(--ack by default).");
  cmd->add_option("PATTERN", opts->pattern,
                  "topic pattern: '*' is one token, '>' one or more at the "
                  "end ('orders.>')")
      ->required();
  auto* group = cmd->add_option("-g,--group", opts->group,
                                "join this consumer group (created with "
                                "default settings if it does not exist)");
  cmd->add_option("--max-in-flight", opts->max_in_flight,
                  "group only: most unanswered deliveries held at once "
                  "(default: the broker's, 256)")
      ->needs(group);
  cmd->add_option("--tag", opts->tags,
                  "group only: a tag for the group's policy (repeatable; "
                  "see docs/extending.md)")
      ->needs(group);
  auto* ack = cmd->add_flag("--ack", opts->ack,
                            "group only: ack each delivery (the default)");
  auto* nack = cmd->add_flag("--nack", opts->nack,
                             "group only: nack each delivery, so it is "
                             "redelivered (after --nack-delay)");
  auto* reject = cmd->add_flag("--reject", opts->reject,
                               "group only: reject each delivery to the "
                               "dead letter topic ($dlq.GROUP)");
  auto* no_ack = cmd->add_flag("--no-ack", opts->no_ack,
                               "group only: answer nothing; the deliveries "
                               "go to another member when this one exits "
                               "or after ack_wait");
  std::vector<CLI::Option*> answers{ack, nack, reject, no_ack};
  for (auto* flag : answers) {
    flag->needs(group);
    for (auto* other : answers)
      if (other != flag)
        flag->excludes(other);
  }
  cmd->add_option_function<std::string>(
         "--nack-delay",
         [opts](const std::string& text) {
           opts->nack_delay = parse_duration_flag("--nack-delay", text);
         },
         "with --nack: redeliver after this long (e.g. 500ms, 2s)")
      ->type_name("DURATION")
      ->needs(nack);
  cmd->add_option("-n,--count", opts->count,
                  "exit 0 after printing N deliveries, N at least 1 "
                  "(default: run until interrupted)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            if (text.find_first_not_of('0') == std::string::npos)
              return "must be at least 1 (as for pub); leave --count out "
                     "to run until interrupted, or add --idle-timeout";
            return {};
          },
          "N >= 1"));
  cmd->add_option_function<std::string>(
         "--idle-timeout",
         [opts](const std::string& text) {
           opts->idle_timeout = parse_duration_flag("--idle-timeout", text);
           if (opts->idle_timeout.count() == 0)
             throw CLI::ValidationError("--idle-timeout",
                                        "must be more than 0");
         },
         "exit once no delivery came for this long (e.g. 2s), counted from "
         "the subscribe: exit 0 without --count, exit 4 if --count "
         "deliveries were not all printed")
      ->type_name("DURATION");
  set_examples(*cmd, "  tinybroker-cli sub 'orders.>'\n"
                     "  tinybroker-cli sub 'jobs.>' --group workers\n"
                     "  tinybroker-cli sub 'jobs.>' --group workers --no-ack\n"
                     "  tinybroker-cli sub '$dlq.>' --count 1 --json\n"
                     "  tinybroker-cli sub 'jobs.>' --count 10 "
                     "--idle-timeout 2s\n");
  return {cmd, [opts, &conn_opts] {
            return run_sub(*opts, conn_opts);
          }};
}

} // namespace tb::cli
