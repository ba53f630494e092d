// Permission checks of one token, and the token table that finds it.

#include "auth/access_grant.hpp"
#include "auth/token_table.hpp"

#include <gtest/gtest.h>

namespace {

using namespace tb;

token_config token(std::string name, std::string secret) {
  token_config t;
  t.name = std::move(name);
  t.secret_sha256 = secret.empty() ? "" : sha256_hex(secret);
  return t;
}

auth_config two_tokens() {
  auth_config cfg;
  cfg.enabled = true;
  auto orders = token("orders", "orders-secret-0123456789");
  orders.publish = {"orders.>"};
  orders.subscribe = {"orders.eu.>"};
  orders.groups = {"billing"};
  orders.any_group = false;
  auto ops = token("ops", "ops-secret-0123456789abc");
  ops.admin = true;
  ops.cert_subject = "CN=ops,O=Example";
  cfg.tokens = {orders, ops};
  return cfg;
}

TEST(AccessGrant, WithoutAuthEverythingIsAllowed) {
  access_grant open;
  EXPECT_TRUE(may_publish(open, "any.topic"));
  EXPECT_TRUE(may_subscribe(open, ">"));
  EXPECT_TRUE(may_join(open, "g"));
  EXPECT_TRUE(may_administer(open));
}

TEST(AccessGrant, ChecksEachKindOfRequest) {
  token_table table{two_tokens()};
  auto who = table.authenticate("Bearer orders-secret-0123456789", "");
  ASSERT_FALSE(who.error) << who.error.text;
  auto& g = who.grant;
  EXPECT_EQ(g.token, "orders");
  EXPECT_TRUE(may_publish(g, "orders.eu.created"));
  EXPECT_FALSE(may_publish(g, "invoices.eu"));
  EXPECT_FALSE(may_publish(g, "orders")); // '>' needs a token
  EXPECT_TRUE(may_subscribe(g, "orders.eu.*"));
  EXPECT_FALSE(may_subscribe(g, "orders.>"));
  EXPECT_TRUE(may_join(g, "billing"));
  EXPECT_FALSE(may_join(g, "shipping"));
  EXPECT_FALSE(may_administer(g));
  EXPECT_EQ(describe_client(g), "token \"orders\"");
}

TEST(TokenTable, RefusesMissingMalformedAndWrongTokens) {
  token_table table{two_tokens()};
  for (auto header : {"", "Bearer", "Bearer ", "Basic b3JkZXJz",
                      "Bearer orders-secret-012345678", "orders-secret"}) {
    auto who = table.authenticate(header, "");
    EXPECT_EQ(who.error.code, ec::unauthenticated) << header;
    // The secret never appears in the answer.
    EXPECT_EQ(who.error.text.find("orders-secret"), std::string::npos);
  }
  // The scheme compares without case, as HTTP's does.
  EXPECT_FALSE(table.authenticate("bearer orders-secret-0123456789", "").error);
}

TEST(TokenTable, AWrongTokenIsRefusedEvenWithAGoodCertificate) {
  token_table table{two_tokens()};
  auto who =
      table.authenticate("Bearer wrong-secret-0123456789", "CN=ops,O=Example");
  EXPECT_EQ(who.error.code, ec::unauthenticated);
}

TEST(TokenTable, ACertificateSubjectStandsForItsToken) {
  token_table table{two_tokens()};
  auto who = table.authenticate("", "CN=ops,O=Example");
  ASSERT_FALSE(who.error) << who.error.text;
  EXPECT_EQ(who.grant.token, "ops");
  EXPECT_TRUE(may_administer(who.grant));
  EXPECT_EQ(who.credential, "cert:CN=ops,O=Example");
  auto stranger = table.authenticate("", "CN=stranger");
  EXPECT_EQ(stranger.error.code, ec::unauthenticated);
  EXPECT_NE(stranger.error.text.find("CN=stranger"), std::string::npos);
}

TEST(TokenTable, CredentialsAreFoundAgainAfterAReloadUnlessRevoked) {
  token_table before{two_tokens()};
  auto who = before.authenticate("Bearer orders-secret-0123456789", "");
  ASSERT_FALSE(who.error);
  EXPECT_EQ(who.credential.rfind("token:", 0), 0u);
  EXPECT_EQ(who.credential.find("orders-secret"), std::string::npos);
  // The token keeps its secret but may now publish anywhere.
  auto cfg = two_tokens();
  cfg.tokens[0].publish = {">"};
  token_table changed{cfg};
  auto grant = changed.lookup(who.credential);
  ASSERT_TRUE(grant);
  EXPECT_TRUE(may_publish(*grant, "invoices.eu"));
  // Rotated: the old secret is gone.
  cfg.tokens[0].secret_sha256 = sha256_hex("orders-rotated-0123456789");
  token_table rotated{cfg};
  EXPECT_FALSE(rotated.lookup(who.credential));
}

TEST(TokenTable, DisabledTableAllowsEverything) {
  token_table off;
  auto who = off.authenticate("", "");
  EXPECT_FALSE(who.error);
  EXPECT_FALSE(who.grant.enforced);
}

TEST(Sha256, MatchesTheKnownDigest) {
  EXPECT_EQ(sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
