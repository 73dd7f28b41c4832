// Server lists: addresses as given, dns:/// names resolved to a shard per
// address (named by reverse lookup), and the refusals with their reasons.
#include "gphkv/client/shard_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gphkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ShardList, AddressesAreShardsAsGiven) {
  auto one = ResolveShardList("localhost:50051");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->shards, ElementsAre("localhost:50051"));
  EXPECT_EQ(one->dns_name, "");
  auto three = ResolveShardList("10.0.0.1:1, gphkv-1.gphkv-shards:50051 ,[fd00::7]:3");
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_THAT(three->shards, ElementsAre("10.0.0.1:1", "gphkv-1.gphkv-shards:50051", "[fd00::7]:3"));
}

TEST(ShardList, MalformedListsAreRefusedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty entry"},
      {"a:1,,b:2", "empty entry"},
      {"a:1,b:2,a:1", "names a:1 twice"},
      {"dns:///gphkv-shards:50051,a:1", "stands alone"},
      {"dns:///gphkv-shards", "is not NAME:PORT"},
      {"dns:///gphkv-shards:0", "is not NAME:PORT"},
      {"dns:///gphkv-shards:70000", "is not NAME:PORT"},
      {"dns:///:50051", "has no host"},
      {"dns:///[fd00::7:50051", "unclosed ["},
  };
  for (const auto& [list, why] : bad) {
    auto r = ResolveShardList(list);
    ASSERT_FALSE(r.ok()) << "'" << list << "' was accepted";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << list;
  }
}

TEST(ShardList, ADnsNameResolvesToItsAddresses) {
  auto r = ResolveShardList("dns:///localhost:50123");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dns_name, "localhost");
  ASSERT_FALSE(r->shards.empty());
  // Each address of localhost names itself "localhost" on reverse lookup
  // (/etc/hosts) or stays an address: never anything else, always the port.
  for (const std::string& s : r->shards) {
    EXPECT_TRUE(s == "localhost:50123" || s == "127.0.0.1:50123" || s == "[::1]:50123") << s;
  }
}

TEST(ShardList, ANameThatDoesNotResolveIsNamedInTheError) {
  // .invalid never resolves (RFC 6761).
  auto r = ResolveShardList("dns:///no-such-shard.invalid:50051");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().code() == absl::StatusCode::kNotFound || r.status().code() == absl::StatusCode::kUnavailable)
      << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("no-such-shard.invalid:50051"));
}

TEST(ShardList, AddressesAreNamedByTheirReverseNameAndOneNameIsOneShard) {
  const std::vector<ResolvedAddress> addresses = {
      {"10.0.0.7", "gphkv-1.gphkv-shards.prod.svc.cluster.local"},
      {"fd00::7", "gphkv-1.gphkv-shards.prod.svc.cluster.local"},  // the same pod, dual-stack
      {"10.0.0.9", ""},                                            // no reverse record
      {"fd00::9", ""},
      {"10.0.0.5", "gphkv-0.gphkv-shards.prod.svc.cluster.local"},
      {"10.0.0.9", ""},  // getaddrinfo may repeat an address
  };
  EXPECT_THAT(ShardsOfAddresses(addresses, "50051"),
              ElementsAre("10.0.0.9:50051", "[fd00::9]:50051", "gphkv-0.gphkv-shards.prod.svc.cluster.local:50051",
                          "gphkv-1.gphkv-shards.prod.svc.cluster.local:50051"));
}

TEST(ShardList, TheShardsOfADnsNameAreCheckedAgainstThatName) {
  TlsOptions tls;
  tls.enabled = true;
  EXPECT_EQ(ShardTlsOptions(ShardList{{"10.0.0.7:1"}, "gphkv-shards.prod.svc"}, tls).server_name,
            "gphkv-shards.prod.svc");
  EXPECT_EQ(ShardTlsOptions(ShardList{{"a:1", "b:2"}, ""}, tls).server_name, "");
  tls.server_name = "given";
  EXPECT_EQ(ShardTlsOptions(ShardList{{"10.0.0.7:1"}, "gphkv-shards.prod.svc"}, tls).server_name, "given");
  TlsOptions plain;
  EXPECT_EQ(ShardTlsOptions(ShardList{{"10.0.0.7:1"}, "gphkv-shards.prod.svc"}, plain).server_name, "");
}

}  // namespace
}  // namespace gphkv
