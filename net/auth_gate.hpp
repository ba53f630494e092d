// The broker's door (spec 10): authenticates every call and stream against
// the current tokens, and swaps in new tokens on reload.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "auth/token_table.hpp"
#include "config/auth_config.hpp"

namespace tb {

/// Counts of refusals made at the door, for Stats and metrics.
struct auth_counters {
  /// Calls and streams refused with UNAUTHENTICATED.
  std::atomic<uint64_t> unauthenticated{0};
  /// Admin calls refused with PERMISSION_DENIED.
  std::atomic<uint64_t> admin_denied{0};
};

/// Holds the current `token_table` and authenticates requests with it.
/// Thread-safe: gRPC threads authenticate while a reload swaps the table.
class auth_gate {
public:
  /// Starts with the tokens of `cfg`.
  explicit auth_gate(const auth_config& cfg);

  /// Returns true if requests must present credentials.
  bool enabled() const noexcept {
    return enabled_;
  }

  /// Authenticates the call of `ctx` from its `authorization` metadata and
  /// its verified client certificate; counts a refusal.
  auth_outcome authenticate(const grpc::ServerContextBase& ctx);

  /// Authenticates an HTTP request of the console from its `Authorization`
  /// header and its verified client certificate's subject; counts a
  /// refusal as for a call.
  auth_outcome authenticate(std::string_view authorization,
                            std::string_view cert_subject);

  /// Authenticates `ctx` and checks that its token may use the admin calls;
  /// the error is UNAUTHENTICATED or PERMISSION_DENIED naming `call`.
  error_info authorize_admin(const grpc::ServerContextBase& ctx,
                             const char* call);

  /// Replaces the tokens with those of `cfg`. Refuses (and keeps the old
  /// tokens) if `cfg` turns auth on or off: that takes a restart.
  error_info reload(const auth_config& cfg);

  /// Returns the current tokens.
  std::shared_ptr<const token_table> table() const;

  /// Returns the refusal counts.
  const auth_counters& counters() const noexcept {
    return counters_;
  }

private:
  bool enabled_;
  mutable std::mutex mutex_;
  std::shared_ptr<const token_table> table_;
  auth_counters counters_;
};

} // namespace tb
