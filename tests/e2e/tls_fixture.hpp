// Helpers of the TLS end-to-end tests: broker configs that use the test
// certificates, and gRPC channels that speak TLS (or not) to a broker.

#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "broker_process.hpp"
#include "client/connection.hpp"
#include "test_certs.hpp"

namespace tb::test {

/// Returns the path of a fresh config file with `[tls]` naming the test
/// files `cert` and `key` (and `client_ca` unless empty), followed by
/// `extra` TOML.
inline std::string tls_config_file(const std::string& cert,
                                   const std::string& key,
                                   const std::string& client_ca = {},
                                   const std::string& extra = {}) {
  const auto& certs = shared_test_certs();
  std::string text = "[tls]\ncert = \"" + certs.path(cert) + "\"\nkey = \"" +
                     certs.path(key) + "\"\n";
  if (!client_ca.empty())
    text += "client_ca = \"" + certs.path(client_ca) + "\"\n";
  return write_temp_file(text + extra, ".toml");
}

/// Returns the port of a `HOST:PORT` address.
inline std::string port_of(const std::string& address) {
  return address.substr(address.rfind(':') + 1);
}

/// Returns a channel to the broker at `address` over TLS, for the name
/// `localhost` (the test server certificate's), trusting the test file
/// `root` and presenting the test certificate `client` (`client.crt` and
/// `client.key` for "client") unless it is empty. The channel has a
/// connection of its own.
inline std::shared_ptr<grpc::Channel>
tls_channel(const std::string& address, const std::string& root,
            const std::string& client = {}) {
  const auto& certs = shared_test_certs();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = certs.read(root);
  if (!client.empty()) {
    options.pem_private_key = certs.read(client + ".key");
    options.pem_cert_chain = certs.read(client + ".crt");
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  client::limit_connect_attempts(args);
  return grpc::CreateCustomChannel("localhost:" + port_of(address),
                                   grpc::SslCredentials(options), args);
}

/// Returns a plain-text channel to the broker at `address`, with a
/// connection of its own.
inline std::shared_ptr<grpc::Channel>
plain_channel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  client::limit_connect_attempts(args);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

/// Starts a broker with `args` and waits until it listens; fails the test
/// (and returns the broker anyway) if it does not.
inline std::unique_ptr<broker_process>
started_broker(std::vector<std::string> args) {
  auto broker = std::make_unique<broker_process>(std::move(args));
  EXPECT_TRUE(broker->wait_ready()) << broker->output();
  return broker;
}

} // namespace tb::test
