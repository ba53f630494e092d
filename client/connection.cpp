#include "client/connection.hpp"

#include <algorithm>
#include <cstdint>

#include "client/check.hpp"
#include "client/message_limit.hpp"
#include "client/tls_diagnosis.hpp"

#include <grpcpp/support/client_interceptor.h>

namespace tb::client {

namespace pb = tinybroker::v1;

namespace {

// The largest gRPC message the client reads or writes.
constexpr int max_grpc_message_bytes = 64 << 20;

namespace ix = grpc::experimental;

// The metadata a channel adds to each of its calls.
using call_metadata = std::vector<std::pair<std::string, std::string>>;

// Adds `authorization: Bearer <token>` and `tinybroker-client-name` to the
// metadata of each call. gRPC sends call credentials only over secure
// channels, so an interceptor does it on plain (loopback) channels as well
// as TLS ones.
class metadata_interceptor : public ix::Interceptor {
public:
  explicit metadata_interceptor(std::shared_ptr<const call_metadata> values)
      : values_(std::move(values)) {}

  void Intercept(ix::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            ix::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA))
      for (auto& [key, value] : *values_) {
        // A name set on the call itself (`open_session(name)`) wins.
        auto* sent = methods->GetSendInitialMetadata();
        if (sent->find(key) == sent->end())
          sent->emplace(key, value);
      }
    methods->Proceed();
  }

private:
  std::shared_ptr<const call_metadata> values_;
};

// Makes a `metadata_interceptor` for each call of a channel.
class metadata_factory : public ix::ClientInterceptorFactoryInterface {
public:
  explicit metadata_factory(call_metadata values)
      : values_(std::make_shared<const call_metadata>(std::move(values))) {}

  ix::Interceptor* CreateClientInterceptor(ix::ClientRpcInfo*) override {
    return new metadata_interceptor(values_);
  }

private:
  std::shared_ptr<const call_metadata> values_;
};

} // namespace

void to_proto(const outgoing_message& msg, pb::Message& out) {
  out.set_topic(msg.topic);
  out.set_payload(msg.payload);
  for (auto& [name, value] : msg.headers)
    (*out.mutable_headers())[name] = value;
  if (!msg.key.empty())
    out.set_key(msg.key);
  // Milliseconds in 32 bits: a longer TTL is sent as the longest (49
  // days).
  auto millis = [](std::chrono::milliseconds x) {
    return static_cast<uint32_t>(
        std::clamp<int64_t>(x.count(), 0, int64_t{UINT32_MAX}));
  };
  out.set_ttl_ms(millis(msg.ttl));
  if (msg.delay.count() > int64_t{UINT32_MAX}) {
    // Too long for delay_ms: sent as the time it names, so that the
    // broker's refusal (beyond limits.max_delay) names the real delay.
    out.set_not_before_unix_ms(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            (std::chrono::system_clock::now() + msg.delay).time_since_epoch())
            .count());
  } else {
    out.set_delay_ms(millis(msg.delay));
  }
  if (msg.not_before != std::chrono::system_clock::time_point{})
    out.set_not_before_unix_ms(
        std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(
                                 msg.not_before.time_since_epoch())
                                 .count()));
  out.set_priority(msg.priority);
  if (!msg.msg_id.empty())
    out.set_msg_id(msg.msg_id);
}

void limit_connect_attempts(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(connect_attempt_timeout.count()));
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            grpc::ChannelArguments args) {
  return make_channel(address, security_options{}, std::move(args));
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const security_options& security,
                                            grpc::ChannelArguments args) {
  return make_channel(address, security, std::string{}, std::move(args));
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const security_options& security,
                                            const std::string& client_name,
                                            grpc::ChannelArguments args) {
  if (auto status = check_client_name(client_name); !status.ok())
    throw invalid_request(status);
  auto credentials = make_channel_credentials(security);
  args.SetMaxReceiveMessageSize(max_grpc_message_bytes);
  args.SetMaxSendMessageSize(max_grpc_message_bytes);
  // Appended: a value `args` already hold is found first and wins.
  limit_connect_attempts(args);
  if (!security.server_name.empty())
    args.SetSslTargetNameOverride(security.server_name);
  call_metadata metadata;
  if (!security.token.empty())
    metadata.emplace_back("authorization", "Bearer " + security.token);
  if (!client_name.empty())
    metadata.emplace_back(client_name_key, encode_client_name(client_name));
  if (metadata.empty())
    return grpc::CreateCustomChannel(address, credentials, args);
  std::vector<std::unique_ptr<ix::ClientInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<metadata_factory>(std::move(metadata)));
  return ix::CreateCustomChannelWithInterceptors(address, credentials, args,
                                                 std::move(factories));
}

connection::connection(const std::string& address,
                       const security_options& security,
                       const std::string& client_name)
    : connection(make_channel(address, security, client_name)) {
  address_ = address;
  security_ = security;
}

connection::connection(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)), stub_(pb::Broker::NewStub(channel_)) {}

connection::connection(std::shared_ptr<grpc::Channel> channel,
                       const std::string& address,
                       const security_options& security)
    : connection(std::move(channel)) {
  address_ = address;
  security_ = security;
}

grpc::Status connection::publish(const std::vector<outgoing_message>& messages,
                                 std::vector<pb::PublishResult>* results,
                                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::system_clock::now() + timeout;
  auto limit = max_message_bytes(deadline);
  // Issue 26, point 3: a message over the broker's limit is refused here,
  // with its own result, before sending; the others are sent.
  pb::PublishRequest request;
  std::vector<pb::PublishResult> refused(messages.size());
  std::vector<bool> sent(messages.size(), false);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    auto* msg = request.add_messages();
    to_proto(messages[i], *msg);
    if (auto size = check_message_size(*msg, limit, address_); !size.ok()) {
      auto* error = refused[i].mutable_error();
      error->set_code(static_cast<int32_t>(size.error_code()));
      error->set_reason(message_too_large_reason);
      error->set_message(size.error_message());
      request.mutable_messages()->RemoveLast();
      continue;
    }
    sent[i] = true;
  }
  // A string that is not UTF-8 would make the whole request unparsable.
  if (auto status = check_strings(request); !status.ok())
    return status;
  pb::PublishReply reply;
  grpc::Status status;
  if (request.messages_size() > 0) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    status = stub_->Publish(&ctx, request, &reply);
  }
  if (results != nullptr) {
    results->clear();
    for (int i = 0, next = 0; status.ok() && i < static_cast<int>(sent.size());
         ++i)
      results->push_back(!sent[i]                      ? refused[i]
                         : next < reply.results_size() ? reply.results(next++)
                                                       : pb::PublishResult{});
  }
  return explain(std::move(status));
}

std::size_t
connection::max_message_bytes(std::chrono::system_clock::time_point deadline) {
  std::lock_guard<std::mutex> guard{limit_mutex_};
  if (!max_message_bytes_)
    max_message_bytes_ = ask_max_message_bytes(*stub_, deadline);
  return max_message_bytes_.value_or(0);
}

grpc::Status connection::explain(grpc::Status status) {
  constexpr std::string_view connect_failed =
      "failed to connect to all addresses";
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
      status.error_message().find(connect_failed) == std::string::npos)
    return status;
  auto cause = likely_cause(status.error_message());
  if (cause.empty())
    return status;
  return grpc::Status{status.error_code(),
                      "cannot connect to the broker at " + address_ + ": " +
                          cause + " (gRPC: " + status.error_message() + ")"};
}

std::string connection::likely_cause(std::string_view grpc_message) {
  if (address_.empty()) // made from a channel: no address to probe
    return {};
  std::lock_guard<std::mutex> guard{explain_mutex_};
  auto now = std::chrono::steady_clock::now();
  if (explained_at_ == std::chrono::steady_clock::time_point{} ||
      now - explained_at_ > std::chrono::seconds(10)) {
    explained_ =
        diagnose_connect_failure(address_, security_, grpc_message).sentence;
    explained_at_ = now;
  }
  return explained_;
}

std::unique_ptr<session>
connection::open_session(const std::string& client_name) {
  return std::make_unique<session>(*stub_, client_name);
}

bool connection::wait_connected(std::chrono::milliseconds timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

} // namespace tb::client
