#include "client/message_limit.hpp"

namespace tb::client {

namespace pb = tinybroker::v1;

std::size_t counted_message_bytes(const pb::Message& message) {
  auto bytes = message.payload().size() + message.key().size();
  for (auto& [name, value] : message.headers())
    bytes += name.size() + value.size();
  return bytes;
}

std::optional<std::size_t>
ask_max_message_bytes(pb::Broker::Stub& stub,
                      std::chrono::system_clock::time_point deadline) {
  pb::InfoReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  auto status = stub.Info(&ctx, pb::InfoRequest{}, &reply);
  if (status.ok())
    return static_cast<std::size_t>(reply.max_message_bytes());
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED)
    return std::size_t{0}; // a broker before Info: it checks by itself
  return std::nullopt;
}

grpc::Status check_message_size(const pb::Message& message,
                                std::size_t max_bytes,
                                const std::string& address) {
  auto counted = counted_message_bytes(message);
  if (max_bytes == 0 || counted <= max_bytes)
    return grpc::Status::OK;
  return grpc::Status{grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "message to \"" + message.topic() + "\" has " +
                          std::to_string(counted) +
                          " bytes (payload, headers and key); the broker" +
                          (address.empty() ? std::string{} : " at " + address) +
                          " takes at most " + std::to_string(max_bytes) +
                          " (limits.max_message_bytes); nothing was sent"};
}

} // namespace tb::client
