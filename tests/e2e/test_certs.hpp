// Test certificates, made once per test process with the `openssl` command
// (tests/e2e/make_test_certs.sh), for the tests of TLS and mutual TLS.
//
//   const auto& certs = tb::test::shared_test_certs();
//   options.pem_root_certs = certs.read("ca.crt");
//   config << "cert = \"" << certs.path("server.crt") << "\"\n";
//
// The files (PEM; keys are unencrypted P-256 EC keys):
//   ca.crt, ca.key                 the test CA
//   server.crt, server.key         DNS localhost and IP 127.0.0.1, by ca
//   client.crt, client.key         subject CN=client-a,O=tinybroker-test
//                                  (RFC 2253), by ca
//   expired-client.crt, .key       by ca; valid only on 2020-01-01
//   other-ca.crt, other-ca.key     a second CA, unrelated to ca
//   other-client.crt, .key         same subject as client.crt, by other-ca
//   expired-server.crt, .key       as server.crt; valid only on 2020-01-01
//   special-client.crt, .key       by ca; subject CN=orders,
//                                  O=Ex\C3\A4mple\, Inc. (RFC 2253: needs
//                                  escaping)
//   renewed-server.crt, .key       as server.crt, but CN=renewed
//   expiring-server.crt, .key      as server.crt, CN=expiring; valid for
//                                  5 days from its making

#pragma once

#include <string>

namespace tb::test {

/// A directory of test certificates and keys (see the list above).
struct test_certs {
  /// The directory holding the files.
  std::string dir;

  /// Returns the path of file `name` (e.g. "server.crt") in `dir`.
  std::string path(const std::string& name) const;

  /// Returns the contents of file `name`; aborts the test program if it
  /// cannot be read.
  std::string read(const std::string& name) const;
};

/// Returns the certificates of this test process, made on first use in a
/// fresh temporary directory (removed at exit). Aborts the test program
/// with a message if `openssl` is missing or the script fails: the TLS
/// tests cannot run without them.
const test_certs& shared_test_certs();

} // namespace tb::test
