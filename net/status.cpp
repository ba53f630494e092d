#include "net/status.hpp"

#include <vector>

#include <google/protobuf/message_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/support/proto_buffer_reader.h>

namespace tb {

namespace {

// Says why `bytes`, which did not parse as `type`, are malformed.
std::string why_malformed(grpc::ByteBuffer& bytes, const std::string& type) {
  std::vector<grpc::Slice> slices;
  std::string data;
  if (bytes.Dump(&slices).ok())
    for (auto& slice : slices)
      data.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  auto text =
      std::to_string(data.size()) + " bytes do not parse as a " + type + ": ";
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromString(data))
    return text + "they are not protobuf wire format (a truncated field, "
                  "or a bad tag or wire type)";
  return text + "a field does not hold what its type requires (a string "
                "that is not UTF-8, or an embedded message that does not "
                "parse)";
}

} // namespace

grpc::Status to_grpc_status(ec code, const std::string& text) {
  if (code == ec::none)
    return grpc::Status::OK;
  auto status_code = static_cast<grpc::StatusCode>(grpc_status_code(code));
  return grpc::Status{status_code, std::string{to_string(code)} + ": " + text};
}

grpc::Status parse_request(grpc::ByteBuffer& bytes,
                           google::protobuf::MessageLite& msg) {
  {
    grpc::ProtoBufferReader reader{&bytes};
    if (reader.status().ok() && msg.ParseFromZeroCopyStream(&reader))
      return grpc::Status::OK;
  }
  return to_grpc_status(ec::invalid_request,
                        why_malformed(bytes, msg.GetTypeName()));
}

} // namespace tb
