// gphkv-loadgen against two gphkv-server shards over mutual TLS (a
// throwaway CA from openssl), with the unary API (each call split by shard)
// and the coalesced one (gphkv::ShardedClient): the run is healthy, and the
// keys it loaded are all stored, about half on each shard. (That each key
// is on the shard the router names is shard_processes_test's to check.)
#include "absl/strings/str_cat.h"
#include "gphkv/client/sharded_client.h"
#include "tests/client/server_process.h"
#include "tests/client/test_certificates.h"
#include "tests/loadgen/e2e_common.h"

namespace gphkv::loadgen::testing {
namespace {

class ShardsE2e : public ::testing::TestWithParam<std::string> {};

TEST_P(ShardsE2e, LoadsAndRunsOverTwoShardsWithMutualTls) {
  const std::string api = GetParam();
  const std::string dir = TempDir("shards-" + api);
  auto ca = gphkv::testing::MakeTestCa(dir, "ca");
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto server_cert = gphkv::testing::IssueTestCertificate(*ca, "server", {"DNS:localhost", "IP:127.0.0.1"});
  auto client_cert = gphkv::testing::IssueTestCertificate(*ca, "client", {"DNS:loadgen.test"});
  ASSERT_TRUE(server_cert.ok() && client_cert.ok());
  const std::vector<std::string> tls = {"--tls_cert=" + server_cert->cert, "--tls_key=" + server_cert->key,
                                        "--tls_client_ca=" + ca->cert};
  gphkv::testing::ServerProcess a(dir + "/a.log", tls), b(dir + "/b.log", tls);
  ASSERT_TRUE(a.WaitServing()) << a.log();
  ASSERT_TRUE(b.WaitServing()) << b.log();
  const std::string servers = a.address() + "," + b.address();
  const std::string json = dir + "/report.json";
  constexpr uint64_t kKeys = 20000;
  const int rc = RunLoadgenBinary(
      dir, "run",
      {"--target=gphkv", "--api=" + api, "--address=" + servers, "--tls_ca=" + ca->cert,
       "--tls_cert=" + client_cert->cert, "--tls_key=" + client_cert->key, "--keys=" + std::to_string(kKeys),
       "--write_fraction=0", "--threads=2", "--connections=2", "--depth=2", "--warmup=0.5", "--duration=1.5",
       "--json=" + json, "--progress=false", "--wait_ready=30"});
  ASSERT_EQ(rc, 0) << a.log() << b.log();
  const auto j = nlohmann::json::parse(ReadFile(json));
  ExpectHealthyReport(j, "gphkv", kKeys);
  EXPECT_EQ(j["config"]["address"], servers);

  // Every loaded key is stored once, about half on each shard.
  TlsFiles files;
  files.ca_file = ca->cert;
  files.cert_file = client_cert->cert;
  files.key_file = client_cert->key;
  ClientOptions o;
  auto loaded = LoadTlsFiles(files);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  o.tls = *loaded;
  auto client = ShardedClient::Connect(servers, o);
  ASSERT_TRUE(client.ok()) << client.status();
  uint64_t total = 0;
  for (const auto& s : (*client)->Stats()) {
    ASSERT_TRUE(s.answer.ok()) << s.shard << ": " << s.answer.status();
    EXPECT_NEAR(static_cast<double>(s.answer->keys()), kKeys / 2.0, 0.10 * kKeys / 2) << s.shard;
    total += s.answer->keys();
  }
  EXPECT_EQ(total, kKeys);
}

INSTANTIATE_TEST_SUITE_P(SplittingApis, ShardsE2e, ::testing::Values("unary", "coalesced"));

}  // namespace
}  // namespace gphkv::loadgen::testing
