#include "net/client.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

namespace {

// The largest gRPC message the client reads or writes.
constexpr int max_message_bytes = 64 << 20;

} // namespace

void to_proto(const outgoing_message& msg, pb::Message& out) {
  out.set_topic(msg.topic);
  out.set_payload(msg.payload);
  for (auto& [name, value] : msg.headers)
    (*out.mutable_headers())[name] = value;
  if (!msg.key.empty())
    out.set_key(msg.key);
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            grpc::ChannelArguments args) {
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

connection::connection(const std::string& address)
    : connection(make_channel(address)) {}

connection::connection(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)), stub_(pb::Broker::NewStub(channel_)) {}

grpc::Status connection::publish(const std::vector<outgoing_message>& messages,
                                 std::vector<pb::PublishResult>* results,
                                 std::chrono::milliseconds timeout) {
  pb::PublishRequest request;
  for (auto& msg : messages)
    to_proto(msg, *request.add_messages());
  pb::PublishReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  auto status = stub_->Publish(&ctx, request, &reply);
  if (results != nullptr)
    results->assign(reply.results().begin(), reply.results().end());
  return status;
}

std::unique_ptr<session> connection::open_session() {
  return std::make_unique<session>(*stub_);
}

bool connection::wait_connected(std::chrono::milliseconds timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

} // namespace tb::client
