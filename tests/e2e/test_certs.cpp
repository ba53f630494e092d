#include "test_certs.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef TINYBROKER_MAKE_TEST_CERTS
#error "TINYBROKER_MAKE_TEST_CERTS must name tests/e2e/make_test_certs.sh"
#endif

namespace tb::test {

namespace {

// Prints `what` and ends the test program: a test without its
// certificates would only fail in confusing ways.
[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "test_certs: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Makes the certificates in a fresh temporary directory.
test_certs make_certs() {
  if (std::system("openssl version > /dev/null 2>&1") != 0)
    die("the openssl command is missing (apt-get install openssl); the TLS "
        "tests need it to make their certificates");
  std::string dir = "/tmp/tinybroker-certs-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr)
    die("cannot create a temporary directory");
  auto command = std::string{"sh '"} + TINYBROKER_MAKE_TEST_CERTS + "' '" +
                 dir + "' > '" + dir + "/make.log' 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream log{dir + "/make.log"};
    std::ostringstream text;
    text << log.rdbuf();
    die("make_test_certs.sh failed:\n" + text.str());
  }
  // Removed when the test program ends normally.
  static std::string remove_at_exit;
  remove_at_exit = dir;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(remove_at_exit, ec);
  });
  return test_certs{dir};
}

} // namespace

std::string test_certs::path(const std::string& name) const {
  return dir + "/" + name;
}

std::string test_certs::read(const std::string& name) const {
  std::ifstream in{path(name), std::ios::binary};
  if (!in)
    die("cannot read " + path(name));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const test_certs& shared_test_certs() {
  static const test_certs certs = make_certs();
  return certs;
}

} // namespace tb::test
