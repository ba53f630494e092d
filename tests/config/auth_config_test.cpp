// Tests of the [auth] table: tokens, where their secrets are kept, and what
// they may do.

#include "auth/token_table.hpp"
#include "config/config_loader.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using tb::load_config_string;

// Loads `text` as "a.toml"; fails the test on an error.
tb::broker_config config_of(const std::string& text) {
  auto res = load_config_string(text, "a.toml");
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().text);
  return res.ok() ? res.value() : tb::broker_config{};
}

// Loads `text` as "a.toml" and returns its error text; fails if it loads.
std::string error_of(const std::string& text) {
  auto res = load_config_string(text, "a.toml");
  EXPECT_FALSE(res.ok()) << "loaded:\n" << text;
  return res.ok() ? std::string{} : res.error().text;
}

constexpr const char* secret = "s3cret-s3cret-s3cret";

TEST(auth_config, off_by_default) {
  EXPECT_FALSE(tb::broker_config{}.auth.enabled);
  EXPECT_FALSE(config_of("").auth.enabled);
}

TEST(auth_config, a_token_with_every_key) {
  auto cfg = config_of(std::string{"[auth]\n[[auth.tokens]]\n"
                                   "name = \"orders\"\nsecret = \""} +
                       secret +
                       "\"\npublish = [\"orders.>\"]\n"
                       "subscribe = [\"orders.eu.>\", \"audit.*\"]\n"
                       "groups = [\"billing\"]\nadmin = true\n"
                       "cert_subject = \"CN=orders\"\n");
  ASSERT_TRUE(cfg.auth.enabled);
  ASSERT_EQ(cfg.auth.tokens.size(), 1u);
  auto& t = cfg.auth.tokens[0];
  EXPECT_EQ(t.name, "orders");
  // Only the hash is kept.
  EXPECT_EQ(t.secret_sha256, tb::sha256_hex(secret));
  EXPECT_EQ(t.publish, std::vector<std::string>{"orders.>"});
  EXPECT_EQ(t.subscribe, (std::vector<std::string>{"orders.eu.>", "audit.*"}));
  EXPECT_EQ(t.groups, std::vector<std::string>{"billing"});
  EXPECT_FALSE(t.any_group);
  EXPECT_TRUE(t.admin);
  EXPECT_EQ(t.cert_subject, "CN=orders");
  // Without a groups key, any group its patterns allow.
  auto open = config_of(std::string{"[[auth.tokens]]\nname = \"x\"\n"
                                    "secret = \""} +
                        secret + "\"\n");
  EXPECT_TRUE(open.auth.tokens[0].any_group);
  EXPECT_FALSE(open.auth.tokens[0].admin);
  EXPECT_TRUE(open.auth.tokens[0].publish.empty());
}

TEST(auth_config, secrets_from_a_file_the_environment_or_a_hash) {
  auto dir = std::filesystem::temp_directory_path() / "tb_auth_config_test";
  std::filesystem::create_directories(dir);
  std::ofstream{dir / "orders.token"} << secret << "\n";
  auto file = config_of("[[auth.tokens]]\nname = \"f\"\nsecret_file = \"" +
                        (dir / "orders.token").string() + "\"\n");
  EXPECT_EQ(file.auth.tokens[0].secret_sha256, tb::sha256_hex(secret));
  // A relative path starts from the config file's directory.
  std::ofstream{dir / "relative.toml"}
      << "[[auth.tokens]]\nname = \"r\"\nsecret_file = \"orders.token\"\n";
  auto relative = tb::load_config_file((dir / "relative.toml").string(),
                                       tb::policy_names{});
  ASSERT_TRUE(relative.ok()) << relative.error().text;
  EXPECT_EQ(relative.value().auth.tokens[0].secret_sha256,
            tb::sha256_hex(secret));
  // So do the [tls] files.
  std::ofstream{dir / "tls.toml"}
      << "[tls]\ncert = \"server.crt\"\nkey = \"keys/server.key\"\n"
         "client_ca = \"/etc/ca.crt\"\n";
  auto tls =
      tb::load_config_file((dir / "tls.toml").string(), tb::policy_names{});
  ASSERT_TRUE(tls.ok()) << tls.error().text;
  EXPECT_EQ(tls.value().tls.cert, (dir / "server.crt").string());
  EXPECT_EQ(tls.value().tls.key, (dir / "keys/server.key").string());
  EXPECT_EQ(tls.value().tls.client_ca, "/etc/ca.crt");
  setenv("TB_AUTH_TEST_TOKEN", secret, 1);
  auto env = config_of("[[auth.tokens]]\nname = \"e\"\n"
                       "secret_env = \"TB_AUTH_TEST_TOKEN\"\n");
  EXPECT_EQ(env.auth.tokens[0].secret_sha256, tb::sha256_hex(secret));
  auto upper = tb::sha256_hex(secret);
  for (auto& c : upper)
    c = static_cast<char>(std::toupper(c));
  auto hashed = config_of("[[auth.tokens]]\nname = \"h\"\nsecret_sha256 = \"" +
                          upper + "\"\n");
  EXPECT_EQ(hashed.auth.tokens[0].secret_sha256, tb::sha256_hex(secret));
  std::filesystem::remove_all(dir);
}

TEST(auth_config, bad_tokens_name_the_key_and_the_problem) {
  auto text = error_of("[[auth.tokens]]\nname = \"x\"\nsecret = \"short\"\n");
  EXPECT_NE(text.find("auth.tokens.secret"), std::string::npos) << text;
  EXPECT_NE(text.find("at least 16"), std::string::npos) << text;
  EXPECT_EQ(text.find("short"), std::string::npos) << "secret echoed:" << text;
  text = error_of("[[auth.tokens]]\nname = \"x\"\n"
                  "secret_file = \"/nonexistent/token\"\n");
  EXPECT_NE(text.find("cannot read /nonexistent/token"), std::string::npos)
      << text;
  unsetenv("TB_AUTH_UNSET");
  text = error_of("[[auth.tokens]]\nname = \"x\"\nsecret_env = "
                  "\"TB_AUTH_UNSET\"\n");
  EXPECT_NE(text.find("TB_AUTH_UNSET is not set"), std::string::npos) << text;
  text = error_of("[[auth.tokens]]\nname = \"x\"\nsecret_sha256 = \"abc\"\n");
  EXPECT_NE(text.find("64 hex digits"), std::string::npos) << text;
  text = error_of("[[auth.tokens]]\nname = \"x\"\n");
  EXPECT_NE(text.find("the token has no secret"), std::string::npos) << text;
  text = error_of(std::string{"[[auth.tokens]]\nname = \"x\"\nsecret = \""} +
                  secret + "\"\nsecret_env = \"HOME\"\n");
  EXPECT_NE(text.find("the token has secret and secret_env"), std::string::npos)
      << text;
  text =
      error_of(std::string{"[[auth.tokens]]\nsecret = \""} + secret + "\"\n");
  EXPECT_NE(text.find("a token needs a name"), std::string::npos) << text;
  text = error_of(std::string{"[[auth.tokens]]\nname = \"x\"\nsecret = \""} +
                  secret + "\"\npublish = [\"orders..x\"]\n");
  EXPECT_NE(text.find("auth.tokens.publish"), std::string::npos) << text;
  text = error_of(std::string{"[[auth.tokens]]\nname = \"x\"\nsecret = \""} +
                  secret + "\"\ngroups = [\"bad name\"]\n");
  EXPECT_NE(text.find("auth.tokens.groups"), std::string::npos) << text;
  text = error_of(std::string{"[[auth.tokens]]\nname = \"x\"\nsecret = \""} +
                  secret + "\"\npermissions = 1\n");
  EXPECT_NE(text.find("unknown key"), std::string::npos) << text;
}

TEST(auth_config, names_secrets_and_subjects_are_unique) {
  auto token = [](const std::string& name, const std::string& s) {
    return "[[auth.tokens]]\nname = \"" + name + "\"\nsecret = \"" + s + "\"\n";
  };
  auto text =
      error_of(token("a", secret) + token("a", "another-secret-0123456"));
  EXPECT_NE(text.find("two tokens are named \"a\""), std::string::npos) << text;
  text = error_of(token("a", secret) + token("b", secret));
  EXPECT_NE(text.find("same secret"), std::string::npos) << text;
}

TEST(auth_config, enabled_false_keeps_auth_off_with_tokens_listed) {
  auto cfg = config_of(std::string{"[auth]\nenabled = false\n"
                                   "[[auth.tokens]]\nname = \"x\"\n"
                                   "secret = \""} +
                       secret + "\"\n");
  EXPECT_FALSE(cfg.auth.enabled);
  EXPECT_EQ(cfg.auth.tokens.size(), 1u);
}

TEST(auth_config, the_summary_names_tokens_never_secrets) {
  auto cfg = config_of(std::string{"[[auth.tokens]]\nname = \"orders\"\n"
                                   "secret = \""} +
                       secret + "\"\n");
  auto text = tb::describe(cfg);
  EXPECT_NE(text.find("auth: on, 1 tokens (orders)"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(secret), std::string::npos);
  EXPECT_EQ(text.find(tb::sha256_hex(secret)), std::string::npos);
  EXPECT_NE(tb::describe(tb::broker_config{}).find("auth: off"),
            std::string::npos);
}

} // namespace
