// libFuzzer target: the TOML config loader.
//
// The input is a config file's text. `load_config_string` must never throw
// or crash: it answers a config or an error text. A loaded config must be
// within the domains the loader promises (a valid listen address, valid
// group names) and must describe itself; an error must say something.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "actors/routing/topic.hpp"
#include "config/config_loader.hpp"

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
  check(cfg.limits.max_topic_tokens >= 1, "max_topic_tokens");
  // Pattern syntax is the router's to check (docs/configuration.md); the
  // loader guarantees names and a non-empty pattern.
  for (const auto& [name, group] : cfg.groups) {
    check(!tb::validate_group_name(name), "a declared group's name", name);
    check(!group.pattern.empty(), "a declared group's pattern", name);
  }
  check(!tb::describe(cfg).empty(), "an empty description");
  return 0;
}
