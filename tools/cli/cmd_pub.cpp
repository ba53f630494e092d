// `tinybroker-cli pub`: publishes messages with confirm, in batches, and
// prints the id the broker gave each one (or why it was refused).

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include <poll.h>
#include <unistd.h>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/json_writer.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// The most messages per Publish call (the broker's default
// limits.max_publish_batch is 4096).
constexpr std::size_t max_batch = 4096;

// What `pub` was asked to do.
struct pub_options {
  std::string topic;
  std::string data;
  std::string file;
  uint64_t count = 1;
  std::vector<std::string> headers;
  std::string key;
  std::string msg_id;
  std::size_t batch = 256;
  // Issue 29: time to live, delay, priority (0-9).
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds delay{0};
  uint32_t priority = 0;
};

// Collects messages into batches, publishes each batch with the unary
// Publish call (which answers once every message was routed) and prints
// each message's id or refusal.
class publisher {
public:
  publisher(client::connection& conn, const connection_options& opts,
            std::size_t batch_size)
      : conn_(conn), opts_(opts), batch_size_(batch_size) {}

  // Adds a message; publishes the batch once it is full.
  void add(client::outgoing_message msg) {
    batch_.push_back(std::move(msg));
    if (batch_.size() >= batch_size_)
      flush();
  }

  // Publishes what is batched, if anything.
  void flush() {
    if (batch_.empty())
      return;
    std::vector<pb::PublishResult> results;
    auto status = conn_.publish(batch_, &results, opts_.timeout);
    check_status(status, "publish");
    for (std::size_t i = 0; i < results.size() && i < batch_.size(); ++i)
      report(batch_[i], results[i]);
    batch_.clear();
  }

  // Returns exit_refused if the broker refused any message, else exit_ok.
  int exit_code() const {
    return refused_ ? exit_refused : exit_ok;
  }

private:
  // Prints the outcome of one message.
  void report(const client::outgoing_message& msg,
              const pb::PublishResult& result) {
    if (opts_.json) {
      json_writer out;
      out.open_object().text("topic", msg.topic);
      if (result.has_error()) {
        out.open_object("error")
            .signed_number("code", result.error().code())
            .text("reason", result.error().reason())
            .text("message", result.error().message())
            .close_object();
      } else {
        out.number("id", result.id());
        if (result.duplicate())
          out.boolean("duplicate", true);
      }
      std::cout << out.close_object().str() << '\n';
    } else if (result.duplicate()) {
      std::cout << "duplicate of #" << result.id() << " on " << msg.topic
                << ": msg_id " << msg.msg_id
                << " was seen within the broker's window; not routed again\n";
    } else if (!result.has_error()) {
      std::cout << "published #" << result.id() << " to " << msg.topic << '\n';
    }
    if (result.has_error()) {
      refused_ = true;
      std::cerr << "tinybroker-cli: message to " << msg.topic
                << " refused: " << describe(result.error()) << '\n';
    }
    std::cout.flush();
  }

  client::connection& conn_;
  const connection_options& opts_;
  std::size_t batch_size_;
  std::vector<client::outgoing_message> batch_;
  bool refused_ = false;
};

// Builds the message with payload `data`; with `numbered`, each `{{n}}` in
// it becomes `seq`.
client::outgoing_message make_message(const pub_options& opts,
                                      const std::string& data, uint64_t seq,
                                      bool numbered = false) {
  client::outgoing_message msg{opts.topic, data, {}, opts.key};
  msg.ttl = opts.ttl;
  msg.delay = opts.delay;
  msg.priority = opts.priority;
  constexpr std::string_view placeholder = "{{n}}";
  auto number = std::to_string(seq);
  for (auto pos = msg.payload.find(placeholder);
       numbered && pos != std::string::npos;
       pos = msg.payload.find(placeholder, pos + number.size()))
    msg.payload.replace(pos, placeholder.size(), number);
  // The id's {{n}} always becomes the number: one id per message.
  msg.msg_id = opts.msg_id;
  for (auto pos = msg.msg_id.find(placeholder); pos != std::string::npos;
       pos = msg.msg_id.find(placeholder, pos + number.size()))
    msg.msg_id.replace(pos, placeholder.size(), number);
  for (auto& header : opts.headers) {
    auto eq = header.find('=');
    msg.headers[header.substr(0, eq)] = header.substr(eq + 1);
  }
  return msg;
}

// Returns true if standard input has nothing to read right now.
bool stdin_idle() {
  pollfd fd{STDIN_FILENO, POLLIN, 0};
  return poll(&fd, 1, 0) == 0;
}

// Publishes each line of standard input `opts.count` times. A batch is sent
// when it is full or when no more input is waiting, so lines typed by hand
// are published at once.
void publish_stdin_lines(const pub_options& opts, publisher& out) {
  std::string pending;
  uint64_t seq = 0;
  char buf[65536];
  for (;;) {
    if (stdin_idle())
      out.flush();
    auto n = read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos;
         nl = pending.find('\n', start)) {
      auto line = pending.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      for (uint64_t i = 0; i < opts.count; ++i)
        out.add(make_message(opts, line, ++seq));
      start = nl + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty())
    for (uint64_t i = 0; i < opts.count; ++i)
      out.add(make_message(opts, pending, ++seq));
}

// Returns the whole content of `path`; throws a usage failure if unreadable.
std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw cli_failure(exit_usage, "--file: cannot read \"" + path + "\"");
  return std::string{std::istreambuf_iterator<char>{in},
                     std::istreambuf_iterator<char>{}};
}

// Runs `pub` once the command line was parsed.
int run_pub(const pub_options& opts, bool data_given,
            const connection_options& conn_opts) {
  require_utf8("topic", opts.topic);
  require_utf8("--key", opts.key);
  require_utf8("--msg-id", opts.msg_id);
  for (auto& header : opts.headers) {
    if (header.find('=') == std::string::npos || header.front() == '=')
      throw cli_failure(exit_usage, "--header: got \"" + header +
                                        "\"; expected NAME=VALUE");
    require_utf8("--header", header);
  }
  std::string payload = data_given ? opts.data : "";
  if (!opts.file.empty())
    payload = read_file(opts.file);
  auto conn = connect(conn_opts);
  publisher out{*conn, conn_opts, opts.batch};
  if (data_given || !opts.file.empty()) {
    for (uint64_t seq = 1; seq <= opts.count; ++seq)
      out.add(make_message(opts, payload, seq, data_given));
  } else {
    publish_stdin_lines(opts, out);
  }
  out.flush();
  return out.exit_code();
}

} // namespace

command add_pub_command(CLI::App& app, const connection_options& conn_opts) {
  auto opts = std::make_shared<pub_options>();
  auto* cmd = app.add_subcommand(
      "pub", "Publish messages and print the id the broker confirmed for "
             "each. The payload is DATA, the content of --file, or else "
             "each line of standard input.");
  cmd->add_option("TOPIC", opts->topic, "topic to publish to")->required();
  auto* data = cmd->add_option(
      "DATA", opts->data, "payload; each {{n}} becomes the message's number");
  cmd->add_option("-f,--file", opts->file, "publish the file's content")
      ->excludes(data);
  cmd->add_option("-n,--count", opts->count,
                  "publish each message N times (default 1)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  cmd->add_option("-H,--header", opts->headers,
                  "header NAME=VALUE (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("-k,--key", opts->key,
                  "routing key (key_hash groups send one key to one member)");
  cmd->add_option_function<std::string>(
         "--ttl",
         [opts](const std::string& text) {
           opts->ttl = parse_duration_flag("--ttl", text);
         },
         "time to live (\"30s\", \"500ms\"): a group drops or "
         "dead-letters the message once it waited that long, a slow "
         "subscriber's buffer drops it unwritten")
      ->type_name("DURATION");
  cmd->add_option_function<std::string>(
         "--delay",
         [opts](const std::string& text) {
           opts->delay = parse_duration_flag("--delay", text);
         },
         "deliver not before this long after the broker accepted the "
         "message (\"10s\", \"2m\"; at most the broker's limits.max_delay)")
      ->type_name("DURATION");
  cmd->add_option("--priority", opts->priority,
                  "0 (default) to 9: a group delivers higher priorities "
                  "first")
      ->check(CLI::Range(0u, 9u));
  cmd->add_option("--msg-id", opts->msg_id,
                  "de-duplication id (at most 128 bytes; {{n}} becomes the "
                  "message's number): a message whose id the broker saw on "
                  "the topic within its window is confirmed as a duplicate "
                  "and not routed");
  cmd->add_option("--batch", opts->batch,
                  "most messages per publish call (default 256)")
      ->check(CLI::Range(std::size_t{1}, max_batch));
  set_examples(*cmd, "  tinybroker-cli pub orders.eu.created '{\"id\": 1}'\n"
                     "  tinybroker-cli pub jobs.resize 'job {{n}}' --count 10 "
                     "--header trace=abc --key user-7\n"
                     "  seq 3 | tinybroker-cli pub jobs.resize\n"
                     "  tinybroker-cli pub images.raw --file photo.jpg\n"
                     "  tinybroker-cli pub jobs.report 'daily' --delay 10m "
                     "--ttl 1h --priority 5\n");
  return {cmd, [cmd, data, opts, &conn_opts] {
            return run_pub(*opts, data->count() > 0, conn_opts);
          }};
}

} // namespace tb::cli
