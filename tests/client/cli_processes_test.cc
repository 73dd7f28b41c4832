// The gphkv CLI and gphkv-server as processes, with their flags: the CLI over
// two shards under mutual TLS (a throwaway CA from openssl), per-shard stats
// and health, refusals without a client certificate or without TLS that
// change nothing, a killed shard named in the CLI's error, and the server's
// start refused, naming the flag, for bad certificate files.
#include <atomic>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gphkv/client/shard_router.h"
#include "gtest/gtest.h"
#include "tests/client/server_process.h"
#include "tests/client/test_certificates.h"

namespace gphkv {
namespace {

using loadgen::testing::ChildProcess;
using loadgen::testing::ReadFile;
using loadgen::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int rc;
  std::string output;  // stdout and stderr
};

CliRun run_cli(const std::string& dir, std::vector<std::string> args) {
  static std::atomic<int> n{0};
  const std::string log = absl::StrCat(dir, "/cli", n.fetch_add(1), ".log");
  args.insert(args.begin(), GPHKV_CLI_PATH);
  ChildProcess p(args, log);
  const int rc = p.Wait(30);
  return {rc, ReadFile(log)};
}

class CliOverShards : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("cli-shards");
    auto ca = testing::MakeTestCa(dir_, "ca");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    auto server = testing::IssueTestCertificate(ca_, "server", {"DNS:localhost", "IP:127.0.0.1"});
    auto client = testing::IssueTestCertificate(ca_, "client", {"DNS:client.test"});
    ASSERT_TRUE(server.ok() && client.ok());
    server_cert_ = *server;
    client_cert_ = *client;
  }

  std::vector<std::string> tls_server_flags() const {
    return {"--tls_cert=" + server_cert_.cert, "--tls_key=" + server_cert_.key, "--tls_client_ca=" + ca_.cert};
  }
  // The CLI with `server` and the client's certificate, then `args`.
  CliRun cli(const std::string& servers, std::vector<std::string> args, bool with_certificate = true) const {
    std::vector<std::string> all = {"--server=" + servers, "--timeout=3s", "--tls_ca=" + ca_.cert};
    if (with_certificate) {
      all.push_back("--tls_cert=" + client_cert_.cert);
      all.push_back("--tls_key=" + client_cert_.key);
    }
    all.insert(all.end(), args.begin(), args.end());
    return run_cli(dir_, all);
  }

  std::string dir_;
  testing::TestCa ca_;
  testing::TestCertificate server_cert_, client_cert_;
};

TEST_F(CliOverShards, TwoShardsUnderMutualTls) {
  testing::ServerProcess a(dir_ + "/a.log", tls_server_flags());
  testing::ServerProcess b(dir_ + "/b.log", tls_server_flags());
  ASSERT_TRUE(a.WaitServing()) << a.log();
  ASSERT_TRUE(b.WaitServing()) << b.log();
  EXPECT_THAT(a.log(), HasSubstr("over TLS, client certificates required"));
  const std::string servers = a.address() + "," + b.address();

  // Four keys a shard. The ports, and so the routing, change from run to
  // run: keys 1..8 all went to one shard in about 1 run in 128.
  constexpr int kKeys = 8;
  const ShardRouter router({a.address(), b.address()});
  std::vector<uint64_t> keys;
  int per_shard[2] = {0, 0};
  for (uint64_t k = 1; keys.size() < kKeys; ++k) {
    if (per_shard[router.shard_of(k)]++ < kKeys / 2) keys.push_back(k);
  }
  for (const uint64_t k : keys) {
    const CliRun put = cli(servers, {"put", std::to_string(k), absl::StrCat("value-", k)});
    ASSERT_EQ(put.rc, 0) << put.output;
  }
  std::vector<std::string> get = {"get"};
  for (const uint64_t k : keys) get.push_back(std::to_string(k));
  const CliRun got = cli(servers, get);
  ASSERT_EQ(got.rc, 0) << got.output;
  for (const uint64_t k : keys) EXPECT_THAT(got.output, HasSubstr(absl::StrCat(k, "\tvalue-", k, "\n")));

  // Stats per shard: both named, their keys adding up, both holding some.
  const CliRun stats = cli(servers, {"--json", "stats"});
  ASSERT_EQ(stats.rc, 0) << stats.output;
  EXPECT_THAT(stats.output, HasSubstr("{\"shards\":[{\"shard\":\"" + a.address() + "\",\"answer\":{"));
  EXPECT_THAT(stats.output, HasSubstr("{\"shard\":\"" + b.address() + "\",\"answer\":{"));
  // Each shard's total (its answer's own "keys", not its partitions').
  static const std::regex kKeysField("\"answer\":\\{\"backend\":\"[^\"]*\",\"device\":\"[^\"]*\",\"keys\":(\\d+)");
  int total = 0, shards_with_keys = 0;
  for (auto it = std::sregex_iterator(stats.output.begin(), stats.output.end(), kKeysField);
       it != std::sregex_iterator(); ++it) {
    total += std::stoi((*it)[1]);
    shards_with_keys += std::stoi((*it)[1]) > 0;
  }
  EXPECT_EQ(total, kKeys);
  EXPECT_EQ(shards_with_keys, 2) << stats.output;
  const CliRun health = cli(servers, {"health"});
  EXPECT_EQ(health.rc, 0) << health.output;
  EXPECT_EQ(health.output, "SERVING\t" + a.address() + "\nSERVING\t" + b.address() + "\n");

  // No client certificate, or no TLS: refused, and nothing changed.
  const CliRun no_cert = cli(servers, {"put", "1", "intruder"}, /*with_certificate=*/false);
  EXPECT_EQ(no_cert.rc, 3) << no_cert.output;
  EXPECT_THAT(no_cert.output, HasSubstr("UNAVAILABLE: shard 127.0.0.1:"));
  const CliRun plain = run_cli(dir_, {"--server=" + servers, "--timeout=3s", "del", "1", "2"});
  EXPECT_NE(plain.rc, 0) << plain.output;
  const CliRun still = cli(servers, {"get", "1", "2"});
  EXPECT_EQ(still.rc, 0) << still.output;
  EXPECT_EQ(still.output, "1\tvalue-1\n2\tvalue-2\n");

  // Flags that do not go together, a malformed list: usage errors, nothing sent.
  const CliRun half = run_cli(dir_, {"--server=" + servers, "--tls_cert=" + client_cert_.cert, "health"});
  EXPECT_EQ(half.rc, 2);
  EXPECT_THAT(half.output, HasSubstr("--tls_cert and --tls_key go together"));
  const CliRun bad_list = cli(a.address() + ",," + b.address(), {"get", "1"});
  EXPECT_EQ(bad_list.rc, 2);
  EXPECT_THAT(bad_list.output, HasSubstr("empty entry"));

  // A killed shard: calls that need it fail naming it; health says which.
  b.Crash();
  const CliRun spans = cli(servers, get);
  EXPECT_EQ(spans.rc, 3) << spans.output;
  EXPECT_THAT(spans.output, HasSubstr("shard " + b.address() + " failed"));
  EXPECT_THAT(spans.output, HasSubstr("the other shards answered"));
  const CliRun sick = cli(servers, {"health"});
  EXPECT_EQ(sick.rc, 1) << sick.output;
  EXPECT_THAT(sick.output, HasSubstr("SERVING\t" + a.address() + "\n"));
  EXPECT_THAT(sick.output, HasSubstr("NOT SERVING: "));
  EXPECT_THAT(sick.output, HasSubstr("\t" + b.address() + "\n"));
}

TEST_F(CliOverShards, TheServerRefusesToStartOnBadCertificateFiles) {
  {
    testing::ServerProcess missing(dir_ + "/missing.log",
                                   {"--tls_cert=" + dir_ + "/none.crt", "--tls_key=" + server_cert_.key});
    EXPECT_EQ(missing.WaitExit(20), 2);
    EXPECT_THAT(missing.log(), HasSubstr("cannot read --tls_cert=" + dir_ + "/none.crt: No such file or directory"));
  }
  {
    testing::ServerProcess mismatched(dir_ + "/mismatched.log",
                                      {"--tls_cert=" + server_cert_.cert, "--tls_key=" + client_cert_.key});
    EXPECT_EQ(mismatched.WaitExit(20), 2);
    EXPECT_THAT(mismatched.log(), HasSubstr("--tls_key=" + client_cert_.key + " does not belong to the certificate"));
    EXPECT_THAT(mismatched.log(), Not(HasSubstr("serving gphkv.v1.KeyValue")));
  }
}

}  // namespace
}  // namespace gphkv
