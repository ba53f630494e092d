// Tests of the [grpc] table: how Session streams are served (issue 31).

#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using tb::load_config_string;

// Loads `text` as "g.toml"; fails the test on an error.
tb::broker_config grpc_config_of(const std::string& text) {
  auto res = load_config_string(text, "g.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text` as "g.toml" and returns its error text; fails if it loads.
std::string grpc_error_of(const std::string& text) {
  auto res = load_config_string(text, "g.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

TEST(grpc_config, the_callback_transport_is_the_default) {
  // Until cq loses no confirmed idempotent publish when a connection is cut
  // (ClientIdempotentTest.CutConnectionsMidPublishLoseAndDoubleNothing).
  EXPECT_EQ(tb::broker_config{}.grpc_transport, "callback");
  EXPECT_EQ(grpc_config_of("").grpc_transport, "callback");
  EXPECT_EQ(grpc_config_of("[grpc]\n").grpc_transport, "callback");
}

TEST(grpc_config, both_transports_are_read) {
  EXPECT_EQ(grpc_config_of("[grpc]\ntransport = \"callback\"\n").grpc_transport,
            "callback");
  EXPECT_EQ(grpc_config_of("[grpc]\ntransport = \"cq\"\n").grpc_transport,
            "cq");
  EXPECT_NE(grpc_config_of("[grpc]\ntransport = \"callback\"\n"),
            tb::broker_config{});
}

TEST(grpc_config, bad_values_name_key_line_and_expectation) {
  auto text = grpc_error_of("[grpc]\n\ntransport = \"async\"\n");
  EXPECT_NE(text.find("g.toml:3:"), std::string::npos) << text;
  EXPECT_NE(text.find("grpc.transport: got \"async\"; expected \"cq\" or "
                      "\"callback\""),
            std::string::npos)
      << text;
  text = grpc_error_of("[grpc]\ntransport = 1\n");
  EXPECT_NE(text.find("g.toml:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("grpc.transport:"), std::string::npos) << text;
  text = grpc_error_of("[grpc]\nthreads = 2\n");
  EXPECT_NE(text.find("grpc.threads"), std::string::npos) << text;
}

TEST(grpc_config, the_effective_config_names_the_transport) {
  auto cfg = grpc_config_of("[grpc]\ntransport = \"cq\"\n");
  EXPECT_NE(tb::describe(cfg).find("grpc transport cq"), std::string::npos)
      << tb::describe(cfg);
  EXPECT_NE(tb::describe(tb::broker_config{}).find("grpc transport callback"),
            std::string::npos);
}

} // namespace
