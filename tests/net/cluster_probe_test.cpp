// Tests of the look at a peer's port before the cluster dials it
// (net/cluster_probe.hpp): a cluster node's first bytes pass, an HTTP/2
// server's (a broker's gRPC port) do not, and neither do too few, nor a
// port that never speaks.

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "net/cluster_probe.hpp"
#include "tests/e2e/broker_process.hpp"

namespace tb::test {
namespace {

/// Returns the bytes of `hex`.
std::string bytes(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(ClusterProbe, ACafServerHandshakeIsAClusterNode) {
  // The first 16 bytes a node (CAF 0.17.6) sent on accepting a connection:
  // operation 0, a payload of 0x123 bytes, protocol version 3.
  EXPECT_EQ(
      tb::check_cluster_greeting(bytes("00000000000001230000000000000003")),
      "");
}

TEST(ClusterProbe, AGrpcServersFirstFrameIsNot) {
  // A broker's gRPC port: HTTP/2's SETTINGS frame, which CAF 0.17.6 took
  // for a server handshake without payload (and crashed on).
  auto why =
      tb::check_cluster_greeting(bytes("0000180400000000000004003fffff00"));
  EXPECT_NE(why.find("not a cluster handshake"), std::string::npos) << why;
  EXPECT_NE(why.find("gRPC port"), std::string::npos) << why;
  // Nor is another operation, a payload over 1 MiB or a version of 0.
  EXPECT_NE(
      tb::check_cluster_greeting(bytes("01000000000001230000000000000003")),
      "");
  EXPECT_NE(
      tb::check_cluster_greeting(bytes("00000000002000010000000000000003")),
      "");
  EXPECT_NE(
      tb::check_cluster_greeting(bytes("00000000000001230000000000000000")),
      "");
}

TEST(ClusterProbe, TooFewBytesAreNoHandshake) {
  auto why = tb::check_cluster_greeting(bytes("000000000000"));
  EXPECT_NE(why.find("sent 6 bytes"), std::string::npos) << why;
  EXPECT_NE(tb::check_cluster_greeting(""), "");
}

TEST(ClusterProbe, AClosedPortIsNamed) {
  // Port 1 on loopback: nothing listens there.
  auto found = tb::probe_cluster_peer("127.0.0.1", 1, std::chrono::seconds(2));
  EXPECT_FALSE(found.connected);
  EXPECT_NE(found.why.find("refused"), std::string::npos) << found.why;
}

TEST(ClusterProbe, APortThatNeverSpeaksIsGivenUpAtTheTimeout) {
  // A listener that never accepts: the kernel completes the connection,
  // and nothing is ever sent (a hung process, or a server that waits for
  // its client to speak first). The probe gives up at its timeout and says
  // so, instead of handing CAF a connection that never handshakes.
  silent_listener silent;
  ASSERT_NE(silent.port(), 0);
  auto started = std::chrono::steady_clock::now();
  auto found = tb::probe_cluster_peer("127.0.0.1", silent.port(),
                                      std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(found.connected);
  EXPECT_NE(found.why.find("sent 0 bytes and no cluster handshake"),
            std::string::npos)
      << found.why;
  EXPECT_GE(took, std::chrono::milliseconds(290));
  EXPECT_LT(took, std::chrono::seconds(2));
}

} // namespace
} // namespace tb::test
