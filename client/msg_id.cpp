#include "client/msg_id.hpp"

#include <cstring>
#include <random>

namespace tb::client {

msg_id_prefix random_msg_id_prefix() {
  std::random_device device;
  uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
  msg_id_prefix prefix;
  std::memcpy(prefix.data(), &bits, prefix.size());
  return prefix;
}

void write_msg_id(const msg_id_prefix& prefix, uint64_t n, char* out) noexcept {
  std::memcpy(out, prefix.data(), prefix.size());
  for (std::size_t i = generated_msg_id_bytes; i > prefix.size(); --i) {
    out[i - 1] = static_cast<char>(n & 0xff);
    n >>= 8;
  }
}

std::string make_msg_id(const msg_id_prefix& prefix, uint64_t n) {
  std::string id(generated_msg_id_bytes, '\0');
  write_msg_id(prefix, n, id.data());
  return id;
}

} // namespace tb::client
