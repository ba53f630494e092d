// Tells ThreadSanitizer about an ordering that gRPC guarantees but TSan
// cannot see, because gRPC is an uninstrumented library: a reactor's
// reaction (OnReadDone, OnWriteDone, OnDone) runs after the call that
// started its operation (StartRead, StartWrite, Finish, the constructor),
// and OnDone runs after every other reaction has returned.
// No-ops in every other build (TINYBROKER_TSAN comes from CMake).

#pragma once

#if defined(TINYBROKER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace tb {

/// Marks what this thread did so far as visible to a later
/// `tsan_acquire(addr)` on any thread (ThreadSanitizer builds only).
inline void tsan_release([[maybe_unused]] const void* addr) {
#if defined(TINYBROKER_TSAN)
  __tsan_release(const_cast<void*>(addr));
#endif
}

/// Orders this thread after every `tsan_release(addr)` so far
/// (ThreadSanitizer builds only).
inline void tsan_acquire([[maybe_unused]] const void* addr) {
#if defined(TINYBROKER_TSAN)
  __tsan_acquire(const_cast<void*>(addr));
#endif
}

} // namespace tb
