// `tinybroker-cli request` and `tinybroker-cli reply`: request/reply from
// the shell, like `nats req` and `nats reply --command` (docs/cli.md).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/json_writer.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// The subscription id `reply` uses on its stream.
constexpr uint64_t request_subscription_id = 1;

// The most output of one --command run that becomes a reply; the broker
// refuses replies over its limits.max_message_bytes anyway.
constexpr std::size_t max_command_output = 64u << 20;

// What `request` was asked to do.
struct request_options {
  std::string topic;
  std::string data;
  std::string group;
  std::vector<std::string> headers;
};

// What `reply` was asked to do.
struct reply_options {
  std::string pattern;
  std::string body;
  std::string command;
  std::string group;
  uint64_t count = 0; // 0: until interrupted
  // How long one --command run may take before it is killed.
  std::chrono::milliseconds command_timeout{10'000};
};

// Returns the whole of standard input.
std::string read_stdin() {
  return std::string{std::istreambuf_iterator<char>{std::cin},
                     std::istreambuf_iterator<char>{}};
}

// Runs `run_request` once the command line was parsed.
int run_request(const request_options& opts, bool data_given,
                const connection_options& conn_opts) {
  require_utf8("topic", opts.topic);
  require_utf8("--group", opts.group);
  client::outgoing_message msg{opts.topic, data_given ? opts.data : "", {}, {}};
  for (auto& header : opts.headers) {
    auto eq = header.find('=');
    if (eq == std::string::npos || eq == 0)
      throw cli_failure(exit_usage, "--header: got \"" + header +
                                        "\"; expected NAME=VALUE");
    require_utf8("--header", header);
    msg.headers[header.substr(0, eq)] = header.substr(eq + 1);
  }
  if (!data_given)
    msg.payload = read_stdin();
  auto conn = connect(conn_opts);
  client::request_options req;
  req.timeout = conn_opts.timeout;
  req.group = opts.group;
  auto result = conn->request(msg, req);
  if (result.no_responders())
    throw cli_failure(
        exit_refused,
        "no responders: nobody answers requests to " + opts.topic +
            (opts.group.empty() ? std::string{} : " in group " + opts.group),
        "UNAVAILABLE");
  if (result.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    throw cli_failure(
        exit_unreachable,
        "no reply within --timeout " +
            format_duration(static_cast<uint64_t>(conn_opts.timeout.count())),
        "DEADLINE_EXCEEDED");
  check_status(result.status, "request");
  if (conn_opts.json) {
    json_writer out;
    out.open_object().number("id", result.message_id).open_object("headers");
    for (auto& [name, value] : result.headers)
      out.text(name, value);
    out.close_object().bytes("payload", result.payload).close_object();
    std::cout << out.str() << std::endl;
  } else {
    std::cout << result.payload;
    if (result.payload.empty() || result.payload.back() != '\n')
      std::cout << '\n';
    std::cout.flush();
  }
  return exit_ok;
}

using steady = std::chrono::steady_clock;

// Milliseconds left until `deadline` (0 once passed, at most a minute), for
// poll().
int ms_left(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - steady::now())
                  .count();
  return static_cast<int>(std::clamp<decltype(left)>(left, 0, 60'000));
}

// Kills the process group of a command that ran out of time and reaps it.
void kill_command(pid_t pid) {
  ::kill(-pid, SIGKILL); // the shell and what it started
  ::kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

// Runs `command` with `input` on its standard input (through /bin/sh, in a
// process group of its own) and returns its standard output; its standard
// error stays the CLI's. Nothing if it did not exit within `limit`: then
// its whole process group was killed.
std::optional<std::string> run_command(const std::string& command,
                                       const std::string& input,
                                       std::chrono::milliseconds limit) {
  auto deadline = steady::now() + limit;
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0)
    throw cli_failure(exit_refused, "--command: cannot make a pipe");
  auto pid = fork();
  if (pid < 0)
    throw cli_failure(exit_refused, "--command: cannot start a process");
  if (pid == 0) {
    setpgid(0, 0);
    std::signal(SIGPIPE, SIG_DFL);    // ignored by the CLI, not by the command
    stop_signals::unblock_in_child(); // blocked by the CLI, not the command
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid); // also here, so that a kill cannot precede it
  close(in[0]);
  close(out[1]);
  std::string output;
  std::size_t written = 0;
  int to_child = in[1];
  if (input.empty())
    close(to_child), to_child = -1;
  bool timed_out = false;
  for (;;) {
    if (steady::now() >= deadline) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out[0], POLLIN, 0}, {to_child, POLLOUT, 0}};
    auto ready = poll(fds, to_child >= 0 ? 2 : 1, ms_left(deadline));
    if (ready < 0 && errno != EINTR)
      break;
    if (ready <= 0)
      continue;
    if (to_child >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      auto n = write(to_child, input.data() + written, input.size() - written);
      if (n > 0)
        written += static_cast<std::size_t>(n);
      if (n < 0 || written == input.size())
        close(to_child), to_child = -1;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      auto n = read(out[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      if (output.size() < max_command_output)
        output.append(buf, static_cast<std::size_t>(n));
    }
  }
  if (to_child >= 0)
    close(to_child);
  close(out[0]);
  int status = 0;
  // Its output ended, but it may still run (it closed its standard output).
  while (!timed_out && waitpid(pid, &status, WNOHANG) == 0) {
    if (steady::now() >= deadline)
      timed_out = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (timed_out) {
    kill_command(pid);
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::cerr << "tinybroker-cli: --command exited with status "
              << (WIFEXITED(status) ? WEXITSTATUS(status) : -1)
              << "; replying with its output" << std::endl;
  return output;
}

// Runs `reply` once the command line was parsed.
int run_reply(const reply_options& opts, const connection_options& conn_opts) {
  require_utf8("pattern", opts.pattern);
  require_utf8("--group", opts.group);
  if (!opts.command.empty())
    std::signal(SIGPIPE, SIG_IGN); // a command that exits unread is no crash
  stop_signals stop; // before connect(): gRPC's threads inherit the mask
  auto conn = connect_unless_stopped(conn_opts, stop);
  if (!conn)
    return exit_ok; // Ctrl-C while waiting for an absent broker
  auto session = conn->open_session();
  if (opts.group.empty())
    session->subscribe(request_subscription_id, opts.pattern, "",
                       subscribe_request_id);
  else
    session->join(request_subscription_id, opts.group, opts.pattern, 0,
                  subscribe_request_id);
  if (!wait_subscribed(*session, opts.pattern, conn_opts, stop))
    return stopped(*session, stop, conn_opts, "answered", 0, opts.count);
  std::cerr << "answering requests to " << opts.pattern;
  if (!opts.group.empty())
    std::cerr << " in group " << opts.group;
  std::cerr << std::endl;
  uint64_t served = 0;
  while (opts.count == 0 || served < opts.count) {
    if (stop.pending())
      return stopped(*session, stop, conn_opts, "answered", served, opts.count);
    auto frame = session->next(stop_check_interval);
    if (!frame) {
      if (session->ended())
        throw cli_failure(exit_unreachable,
                          "the stream ended: " + describe(session->status()),
                          "UNAVAILABLE");
      continue;
    }
    if (frame->has_error()) {
      std::cerr << "tinybroker-cli: " << frame->error().request()
                << " refused: " << describe(frame->error().error())
                << std::endl;
      continue;
    }
    if (frame->has_unsubscribed())
      throw cli_failure(exit_refused, "subscription ended by the broker: " +
                                          frame->unsubscribed().reason());
    for (auto& d : frame->deliveries().deliveries()) {
      // Stopped: the requests not yet run get no answer from this replier
      // (in a group they go back to the group when the stream ends).
      if (stop.pending())
        return stopped(*session, stop, conn_opts, "answered", served,
                       opts.count);
      if (d.reply_handle() == 0) {
        if (d.delivery_id() != 0)
          session->ack({d.delivery_id()}); // a plain message: nothing to say
        continue;
      }
      pb::ClientFrame out;
      auto* reply = out.mutable_reply();
      reply->set_reply_handle(d.reply_handle());
      if (opts.command.empty()) {
        reply->set_payload(opts.body);
      } else {
        auto output =
            run_command(opts.command, d.payload(), opts.command_timeout);
        if (!output) {
          // No reply: the caller sees its own timeout (as if no responder
          // answered); in a group the delivery stays unacked and is
          // redelivered after ack_wait.
          std::cerr << "tinybroker-cli: [#" << d.message_id() << "] "
                    << d.topic()
                    << ": --command did not finish within --command-timeout "
                    << format_duration(
                           static_cast<uint64_t>(opts.command_timeout.count()))
                    << "; killed it, no reply sent" << std::endl;
          continue;
        }
        reply->set_payload(std::move(*output));
      }
      session->send(out);
      ++served;
      std::cout << "[#" << d.message_id() << "] " << d.topic() << " replied "
                << reply->payload().size() << " bytes" << std::endl;
      if (opts.count != 0 && served == opts.count)
        break;
    }
  }
  session->close(conn_opts.timeout);
  return exit_ok;
}

} // namespace

std::vector<command> add_request_commands(CLI::App& app,
                                          const connection_options& conn_opts) {
  auto req = std::make_shared<request_options>();
  auto* request = app.add_subcommand(
      "request", "Send a request and print the reply's payload. Nobody "
                 "listening: exit 1 at once ('no responders'); no reply "
                 "within --timeout: exit 3.");
  request->add_option("TOPIC", req->topic, "topic to send the request to")
      ->required();
  auto* data = request->add_option(
      "DATA", req->data, "payload; without it, standard input is sent");
  request->add_option("-g,--group", req->group,
                      "one member of this consumer group answers");
  request
      ->add_option("-H,--header", req->headers,
                   "header NAME=VALUE (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  set_examples(*request, "  tinybroker-cli request svc.time now\n"
                         "  tinybroker-cli request svc.resize --group "
                         "resizers --timeout 30s < photo.jpg\n");
  auto rep = std::make_shared<reply_options>();
  auto* reply = app.add_subcommand(
      "reply", "Answer the requests to a topic pattern: with BODY, or with "
               "the standard output of --command, run once per request with "
               "the request's payload on its standard input.");
  reply->add_option("PATTERN", rep->pattern, "topic pattern to answer")
      ->required();
  auto* body = reply->add_option("BODY", rep->body, "the reply to send");
  auto* command_flag =
      reply
          ->add_option("-c,--command", rep->command,
                       "shell command whose output is the reply")
          ->excludes(body);
  reply
      ->add_option_function<std::string>(
          "--command-timeout",
          [rep](const std::string& text) {
            rep->command_timeout =
                parse_duration_flag("--command-timeout", text);
            if (rep->command_timeout.count() == 0)
              throw CLI::ValidationError("--command-timeout",
                                         "must be more than 0");
          },
          "with --command: kill a run that takes longer (and what it "
          "started) and send no reply (default 10s)")
      ->type_name("DURATION")
      ->needs(command_flag);
  reply->add_option("-g,--group", rep->group,
                    "answer as a member of this consumer group");
  reply->add_option("-n,--count", rep->count,
                    "exit after answering N requests");
  set_examples(*reply, "  tinybroker-cli reply svc.time --command date\n"
                       "  tinybroker-cli reply 'svc.upper' --command "
                       "'tr a-z A-Z' --group upper\n");
  std::vector<command> result;
  result.push_back({request, [req, data, &conn_opts] {
                      return run_request(*req, data->count() > 0, conn_opts);
                    }});
  result.push_back({reply, [rep, &conn_opts] {
                      return run_reply(*rep, conn_opts);
                    }});
  return result;
}

} // namespace tb::cli
