// What the TOML config loader tests share (tests/config/config_loader_test.cpp,
// config_values_test.cpp): a config text loaded as the file "t.toml", its
// config or its error text, and the built-in defaults as such a load gives
// them.

#pragma once

#include <string>

#include <gtest/gtest.h>

#include "config/config_loader.hpp"

namespace tb::test {

/// Loads `text` as "t.toml" and returns its error text; fails if it loads.
inline std::string error_of(const std::string& text) {
  auto res = tb::load_config_string(text, "t.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

/// Loads `text` as "t.toml" and returns the config; fails on an error.
inline tb::broker_config config_of(const std::string& text) {
  auto res = tb::load_config_string(text, "t.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

/// Returns the built-in defaults as loaded from a file named "t.toml".
inline tb::broker_config defaults() {
  tb::broker_config cfg;
  cfg.source = "t.toml";
  return cfg;
}

} // namespace tb::test
