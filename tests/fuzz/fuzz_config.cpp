// libFuzzer target: the TOML config loader.
//
// The input is a config file's text. `load_config_string` must never throw
// or crash: it answers a config or an error text. A loaded config must be
// within the domains the loader promises (a valid listen address, limits
// and durations in range, valid group names) and must describe itself; an
// error must say something.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config_loader.hpp"
#include "routing/topic.hpp"

namespace {

// Aborts with `what` and `detail` if `ok` is false.
void check(bool ok, const char* what, const std::string& detail = {}) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz_config: %s: %s\n", what, detail.c_str());
  std::abort();
}

} // namespace

/// libFuzzer's entry point: loads `data` as a config and checks the result.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto result = tb::load_config_string(text, "fuzz.toml");
  if (!result) {
    check(!result.error().text.empty(), "an empty error text");
    return 0;
  }
  const auto& cfg = result.value();
  check(cfg.source == "fuzz.toml", "source", cfg.source);
  check(tb::check_listen_address(cfg.listen).empty(), "listen", cfg.listen);
  check(cfg.worker_threads <= 1024, "worker_threads");
  check(cfg.scheduler == "handoff" || cfg.scheduler == "sharing" ||
            cfg.scheduler == "stealing",
        "scheduler", cfg.scheduler);
  check(cfg.topic_idle_timeout.count() >= 1, "topic_idle_timeout");
  check(cfg.shutdown_grace.count() >= 0, "shutdown_grace");
  const auto& l = cfg.limits;
  check(l.max_topic_tokens >= 1 && l.max_publish_batch >= 1 &&
            l.subscription_buffer >= 1 &&
            l.max_subscriptions_per_session >= 1 &&
            l.max_in_flight_per_session >= 1 && l.max_frame_messages >= 1,
        "a limit below its minimum of 1");
  check(cfg.group_defaults.pattern.empty(), "a pattern in the defaults");
  // Pattern syntax is the router's to check (docs/configuration.md); the
  // loader guarantees names, a non-empty pattern and a positive ack_wait.
  for (const auto& [name, group] : cfg.groups) {
    check(!tb::validate_group_name(name), "a declared group's name", name);
    check(!group.pattern.empty(), "a declared group's pattern", name);
    check(group.ack_wait.count() >= 1, "a declared group's ack_wait", name);
    check(group.max_pending_messages >= 1, "max_pending_messages", name);
  }
  check(!tb::describe(cfg).empty(), "an empty description");
  return 0;
}
