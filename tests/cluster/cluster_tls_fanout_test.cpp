// Fan-out across nodes that talk TLS to each other (issue 30 point 7,
// docs/cluster.md "Figures"): a few thousand messages published on n1
// reach n2's subscriber in order, once, over libcaf_openssl. Node
// certificates need both TLS purposes, so they are made here from the test
// CA (as in cluster_tls_test.cpp); clients talk mutual TLS to the nodes'
// gRPC ports, which use the same [tls] files.

#include <cstdlib>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "client/session.hpp"
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/e2e/test_certs.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
namespace pb = tinybroker::v1;

// The [tls] table of a node with certificate `base`.
std::string tls_fanout_table(const std::string& base) {
  return "[tls]\ncert = \"" + base + ".crt\"\nkey = \"" + base +
         ".key\"\nclient_ca = \"" + shared_test_certs().path("ca.crt") + "\"\n";
}

// A client of the node whose certificate names `node_cert_name`.
client::security_options tls_fanout_client(const std::string& node_cert_name) {
  client::security_options s;
  s.ca_file = shared_test_certs().path("ca.crt");
  s.cert_file = shared_test_certs().path("client.crt");
  s.key_file = shared_test_certs().path("client.key");
  s.server_name = node_cert_name;
  return s;
}

class ClusterTlsFanoutTest : public ClusterFixture {};

TEST_F(ClusterTlsFanoutTest, MessagesCrossATlsLinkInOrderOnce) {
  auto a = make_node_cert("tls-node-a", "ca");
  auto b = make_node_cert("tls-node-b", "ca");
  auto& n1 = add_node("n1");
  auto& n2 = add_node("n2");
  ASSERT_TRUE(start(n1, "tls = true", tls_fanout_table(a)));
  ASSERT_TRUE(start(n2, "tls = true", tls_fanout_table(b)));
  ASSERT_TRUE(n1.process->wait_for_output("cluster peer synced", 5s))
      << n1.process->output();
  ASSERT_TRUE(n2.process->wait_for_output("cluster peer synced", 5s))
      << n2.process->output();
  client::connection c1{n1.process->address(), tls_fanout_client("tls-node-a")};
  client::connection c2{n2.process->address(), tls_fanout_client("tls-node-b")};
  ASSERT_TRUE(c1.wait_connected(5s));
  ASSERT_TRUE(c2.wait_connected(5s));
  auto sub = c2.open_session();
  ASSERT_TRUE(sub->subscribe(1, "tls.>"));
  ASSERT_TRUE(sub->wait_for(pb::ServerFrame::kSubscribed, 5s));
  constexpr int total = 5000;
  constexpr int per_call = 500;
  auto started = std::chrono::steady_clock::now();
  for (int first = 0; first < total; first += per_call) {
    std::vector<client::outgoing_message> batch;
    for (int i = first; i < first + per_call; ++i)
      batch.push_back({"tls.x", std::to_string(i), {}, {}});
    std::vector<pb::PublishResult> results;
    auto status = c1.publish(batch, &results);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  auto got = sub->receive(total, 10s);
  std::cout << "[ figure ] " << got.size() << " messages n1 -> n2 over TLS in "
            << millis_since(started) << " ms" << std::endl;
  ASSERT_EQ(got.size(), size_t{total});
  for (int i = 0; i < total; ++i)
    ASSERT_EQ(got[i].payload(), std::to_string(i)) << "at " << i;
  EXPECT_TRUE(sub->receive(1, 200ms).empty()) << "a message came twice";
}

} // namespace
} // namespace tb::test
