// Request/reply (async client): a service answers requests with serve(),
// a caller asks with request() and gets the reply, NO_RESPONDERS at once
// when no service runs, or DEADLINE_EXCEEDED when it does not answer.

#include <cctype>
#include <iostream>
#include <string>

#include "client/async_client.hpp"
#include "example_args.hpp"

namespace {

/// The name errors start with.
constexpr const char* program = "request_reply";

using namespace std::chrono_literals;

// The --help text.
const std::string usage_text =
    "usage: request_reply [--server HOST:PORT] serve\n"
    "       request_reply [--server HOST:PORT] ask TEXT\n"
    "`serve` answers requests to \"svc.upper\" with the text in upper case "
    "until killed; `ask` sends one and prints the reply.\n"
    "The server defaults to $TINYBROKER_SERVER, else 127.0.0.1:7400;\n"
    "the token and TLS come from TINYBROKER_TOKEN, TINYBROKER_CA, ...\n";

// Prints how to call the example; returns the usage error code.
int usage() {
  std::cerr << usage_text;
  return 2;
}

// Answers requests until the client closes for good (or the process is
// killed).
int serve(const std::string& server) {
  auto settings = example::options_from_env(program);
  if (!example::reach_broker(server, settings, program))
    return 3;
  tb::client::async_client client{server, settings};
  auto sub = client.serve("svc.upper", [](const tb::client::delivery& req) {
    std::string text = req.payload();
    for (auto& c : text)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return tb::client::reply_message{text};
  });
  auto status = sub->wait_subscribed(10s);
  if (!status.ok()) {
    example::error(program)
        << "subscribe failed: " << status.error_message() << "\n";
    return 1;
  }
  std::cout << "serving svc.upper" << std::endl;
  return client.wait_closed().ok() ? 0 : 1;
}

// Sends one request and prints the reply.
int ask(const std::string& server, const std::string& text) {
  auto settings = example::options_from_env(program);
  if (!example::reach_broker(server, settings, program))
    return 3;
  tb::client::async_client client{server, settings};
  tb::client::request_options options;
  options.timeout = 2s;
  auto reply = client.request({"svc.upper", text, {}, {}}, options).get();
  if (reply.no_responders()) {
    example::error(program) << "no responders: start `request_reply serve` "
                               "first\n";
    return 1;
  }
  if (!reply.ok()) {
    example::error(program)
        << "request failed: " << reply.status.error_message() << "\n";
    return 1;
  }
  std::cout << reply.payload << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto cmd = example::parse_command_line(argc, argv, program, usage_text);
  const auto& args = cmd.args;
  if (args.empty())
    return usage();
  if (args[0] == "serve" && args.size() == 1)
    return serve(cmd.server);
  if (args[0] == "ask" && args.size() == 2)
    return ask(cmd.server, args[1]);
  return usage();
}
