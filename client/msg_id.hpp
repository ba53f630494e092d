// The msg_ids an idempotent client gives its messages (issue 28): 8 random
// bytes per client instance and a 7-byte counter, 15 bytes in all. Binary
// (`Message.msg_id` is a `bytes` field), and short enough for the
// broker's parsed copy to stay in std::string's inline buffer (no
// allocation per id).

#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tb::client {

/// The length of a generated msg_id in bytes.
constexpr std::size_t generated_msg_id_bytes = 15;

/// The random part of one client instance's generated msg_ids: two clients
/// share it with odds of 1 in 2^64.
using msg_id_prefix = std::array<char, 8>;

/// Returns 8 bytes from std::random_device: the prefix of a new client.
msg_id_prefix random_msg_id_prefix();

/// Writes the msg_id numbered `n` of the client with `prefix` into `out`
/// (`generated_msg_id_bytes` bytes): the prefix, then the low 56 bits of `n`
/// big-endian, so that no two of 2^56 numbers share an id.
void write_msg_id(const msg_id_prefix& prefix, uint64_t n, char* out) noexcept;

/// Returns the msg_id numbered `n` of the client with `prefix`.
std::string make_msg_id(const msg_id_prefix& prefix, uint64_t n);

} // namespace tb::client
