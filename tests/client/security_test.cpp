// The client's security settings without a broker: which of flag and
// environment wins, token files, PEM files and settings that do not fit.

#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "client/connection.hpp"
#include "client/security.hpp"
#include "fake_broker.hpp"

namespace tb::test {
namespace {

using client::security_error;
using client::security_options;
using client::security_sources;

// Writes `text` to a fresh file and returns its path.
std::string temp_file(const std::string& text) {
  char path[] = "/tmp/tb-security-XXXXXX";
  close(mkstemp(path));
  std::ofstream{path, std::ios::binary} << text;
  return path;
}

// Returns the message of the security_error that `fn` throws ("" if none).
template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const security_error& e) {
    return e.what();
  }
  return "";
}

// Returns an environment holding just `vars`.
client::env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ClientSecurity, ReadsEveryVariableAndTakesAnEmptyOneAsUnset) {
  auto env = client::security_sources_from_env(
      env_of({{"TINYBROKER_TOKEN", "t"},
              {"TINYBROKER_TOKEN_FILE", ""},
              {"TINYBROKER_CA", "ca.pem"},
              {"TINYBROKER_CERT", "c.pem"},
              {"TINYBROKER_KEY", "k.pem"},
              {"TINYBROKER_TLS_SERVER_NAME", "broker.example"}}));
  EXPECT_EQ(env.token, "t");
  EXPECT_FALSE(env.token_file.has_value());
  EXPECT_EQ(env.ca_file, "ca.pem");
  EXPECT_EQ(env.cert_file, "c.pem");
  EXPECT_EQ(env.key_file, "k.pem");
  EXPECT_EQ(env.server_name, "broker.example");
}

TEST(ClientSecurity, EachFlagBeatsItsVariable) {
  security_sources env{"env-token", {},        "env-ca",
                       "env-cert",  "env-key", "env-name"};
  security_sources flags{"flag-token", {},         "flag-ca",
                         "flag-cert",  "flag-key", "flag-name"};
  auto got = client::resolve_security(flags, env);
  EXPECT_EQ(got.token, "flag-token");
  EXPECT_EQ(got.ca_file, "flag-ca");
  EXPECT_EQ(got.cert_file, "flag-cert");
  EXPECT_EQ(got.key_file, "flag-key");
  EXPECT_EQ(got.server_name, "flag-name");
  got = client::resolve_security({}, env);
  EXPECT_EQ(got.token, "env-token");
  EXPECT_EQ(got.ca_file, "env-ca");
  EXPECT_EQ(got.server_name, "env-name");
}

TEST(ClientSecurity, ATokenFlagBeatsBothTokenVariables) {
  security_sources env;
  env.token = "env-token";
  env.token_file = "/nonexistent/token"; // never read
  security_sources flags;
  flags.token = "flag-token";
  EXPECT_EQ(client::resolve_security(flags, env).token, "flag-token");
  flags = {};
  flags.token_file = temp_file("file-token\n");
  EXPECT_EQ(client::resolve_security(flags, env).token, "file-token");
}

TEST(ClientSecurity, TokenAndTokenFileTogetherAreRefused) {
  security_sources both;
  both.token = "a";
  both.token_file = temp_file("b");
  EXPECT_EQ(error_of([&] { client::resolve_security(both, {}); }),
            "--token and --token-file are both given; use one");
  EXPECT_EQ(error_of([&] { client::resolve_security({}, both); }),
            "TINYBROKER_TOKEN and TINYBROKER_TOKEN_FILE are both set; use one");
}

TEST(ClientSecurity, ATokenFileLosesItsTrailingWhitespaceOnly) {
  EXPECT_EQ(client::read_token_file(temp_file("abc\n")), "abc");
  EXPECT_EQ(client::read_token_file(temp_file("abc\r\n")), "abc");
  EXPECT_EQ(client::read_token_file(temp_file("abc \t\n\n")), "abc");
  EXPECT_EQ(client::read_token_file(temp_file("a.b-c_d~")), "a.b-c_d~");
}

TEST(ClientSecurity, AnUnreadableOrEmptyTokenFileIsAClearError) {
  EXPECT_EQ(error_of([] { client::read_token_file("/nonexistent/tok"); }),
            "cannot read token file \"/nonexistent/tok\": No such file or "
            "directory");
  auto empty = temp_file(" \n");
  EXPECT_EQ(error_of([&] { client::read_token_file(empty); }),
            "token file \"" + empty + "\" holds no token");
}

TEST(ClientSecurity, ACertificateNeedsItsKeyAndViceVersa) {
  security_sources flags;
  flags.cert_file = "c.pem";
  auto message = error_of([&] { client::resolve_security(flags, {}); });
  EXPECT_EQ(message, "a client certificate (--cert, TINYBROKER_CERT) needs "
                     "its key (--key, TINYBROKER_KEY)");
  security_sources env;
  env.key_file = "k.pem";
  EXPECT_NO_THROW(client::resolve_security(flags, env)); // one from each
  EXPECT_EQ(error_of([&] { client::resolve_security({}, env); }),
            "a client key (--key, TINYBROKER_KEY) needs its certificate "
            "(--cert, TINYBROKER_CERT)");
}

TEST(ClientSecurity, AServerNameNeedsTls) {
  security_options options;
  options.server_name = "localhost";
  EXPECT_NE(error_of([&] { client::check_security(options); }), "");
  options.ca_file = "ca.pem";
  EXPECT_NO_THROW(client::check_security(options));
}

TEST(ClientSecurity, ATokenWithSpacesOrControlCharactersIsRefusedUnnamed) {
  for (std::string token : {"has space", "new\nline", "caf\xc3\xa9"}) {
    security_options options;
    options.token = token;
    auto message = error_of([&] { client::check_security(options); });
    EXPECT_NE(message, "") << token;
    EXPECT_EQ(message.find(token), std::string::npos) << message;
  }
}

TEST(ClientSecurity, TlsIsOnWithACaOrAClientCertificate) {
  security_options options;
  options.token = "t";
  EXPECT_FALSE(options.tls());
  options.ca_file = "ca.pem";
  EXPECT_TRUE(options.tls());
  options = {};
  options.cert_file = "c.pem";
  EXPECT_TRUE(options.tls());
}

TEST(ClientSecurity, MissingOrNonPemFilesAreClearErrorsOfMakeChannel) {
  security_options options;
  options.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(error_of([&] { client::make_channel("127.0.0.1:1", options); }),
            "cannot read CA file \"/nonexistent/ca.pem\": No such file or "
            "directory");
  options.ca_file = temp_file("not a certificate\n");
  EXPECT_EQ(error_of([&] { client::make_channel("127.0.0.1:1", options); }),
            "CA file \"" + options.ca_file +
                "\" is not PEM (no \"-----BEGIN\" line)");
  auto certs = make_fake_pki();
  options.ca_file = certs.ca;
  options.cert_file = certs.client_cert;
  options.key_file = "/nonexistent/client.key";
  EXPECT_EQ(error_of([&] { client::connection conn("127.0.0.1:1", options); }),
            "cannot read key file \"/nonexistent/client.key\": No such file "
            "or directory");
  options.key_file = certs.client_key;
  EXPECT_NO_THROW(client::connection conn("127.0.0.1:1", options));
}

} // namespace
} // namespace tb::test
