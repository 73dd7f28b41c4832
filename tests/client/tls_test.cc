// TLS between gphkv::Client / ShardedClient and gphkv-server, with a
// throwaway CA made by openssl: a client that trusts the CA reads and writes;
// one that does not, or that shows no client certificate (or one of another
// CA) where the server requires it, is refused and changes nothing; bad PEM
// files stop the server's start (and the client's loading) naming the flag.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gphkv/client/sharded_client.h"
#include "tests/client/test_certificates.h"
#include "tests/loadgen/child_process.h"
#include "tests/server/test_server.h"
#include "tls/pem_files.h"

namespace gphkv {
namespace {

using ::testing::HasSubstr;

class Tls : public ::testing::Test {
 protected:
  struct Files {
    std::string dir;
    testing::TestCa ca, other_ca;
    testing::TestCertificate server, client, stranger, other_name;
  };

  static void SetUpTestSuite() {
    testing::keep_grpc_initialized();
    files_ = new Files;
    Files& f = *files_;
    f.dir = loadgen::testing::TempDir("tls");
    auto ca = testing::MakeTestCa(f.dir, "ca");
    auto other = testing::MakeTestCa(f.dir, "other-ca");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ASSERT_TRUE(other.ok()) << other.status();
    f.ca = *ca;
    f.other_ca = *other;
    auto server = testing::IssueTestCertificate(f.ca, "server", {"DNS:localhost", "IP:127.0.0.1"});
    auto client = testing::IssueTestCertificate(f.ca, "client", {"DNS:client.test"});
    auto stranger = testing::IssueTestCertificate(f.other_ca, "stranger", {"DNS:client.test"});
    auto other_name = testing::IssueTestCertificate(f.ca, "other-name", {"DNS:shard.test"});
    for (auto* c : {&server, &client, &stranger, &other_name}) ASSERT_TRUE(c->ok()) << c->status();
    f.server = *server;
    f.client = *client;
    f.stranger = *stranger;
    f.other_name = *other_name;
  }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(files_, nullptr); }
  const Files& f() const { return *files_; }

  std::unique_ptr<server::Server> start(const testing::TestCertificate& cert, bool require_client_certs) {
    server::ServerOptions o = testing::test_options();
    o.tls.cert_file = cert.cert;
    o.tls.key_file = cert.key;
    if (require_client_certs) o.tls.client_ca_file = f().ca.cert;
    return testing::start_server(o);
  }

  // Client options from files, as the CLI loads them; refused clients fail
  // at once (no retries, a short deadline).
  ClientOptions options(TlsFiles files) const {
    auto tls = LoadTlsFiles(files);
    EXPECT_TRUE(tls.ok()) << tls.status();
    ClientOptions o;
    o.tls = tls.ok() ? *tls : TlsOptions{};
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(3000);
    return o;
  }
  TlsFiles trusting(const std::string& ca, const testing::TestCertificate* cert = nullptr) const {
    TlsFiles t;
    t.ca_file = ca;
    if (cert) {
      t.cert_file = cert->cert;
      t.key_file = cert->key;
    }
    return t;
  }

  static absl::Status put(Client& c, uint64_t key, std::string_view value) {
    return c.Put(std::vector<uint64_t>{key}, std::vector<std::string_view>{value}).status();
  }
  static std::string get(Client& c, uint64_t key) {
    auto r = c.Get(std::vector<uint64_t>{key});
    if (!r.ok()) return "error: " + r.status().ToString();
    return r->found(0) ? std::string(r->value(0)) : "(not found)";
  }

  static Files* files_;
};

Tls::Files* Tls::files_ = nullptr;

TEST_F(Tls, AClientThatTrustsTheCaReadsAndWrites) {
  auto server = start(f().server, false);
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", server->port());
  for (bool coalesce : {true, false}) {
    ClientOptions o = options(trusting(f().ca.cert));
    o.coalesce.enabled = coalesce;
    auto client = Client::Connect(address, o);
    ASSERT_TRUE(put(*client, 1, coalesce ? "over tls, coalesced" : "over tls, unary").ok());
    EXPECT_EQ(get(*client, 1), coalesce ? "over tls, coalesced" : "over tls, unary");
    EXPECT_TRUE(client->Health().ok());
  }
}

TEST_F(Tls, ClientsThatDoNotTrustTheCaAreRefusedAndChangeNothing) {
  auto server = start(f().server, false);
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", server->port());
  auto trusted = Client::Connect(address, options(trusting(f().ca.cert)));
  ASSERT_TRUE(put(*trusted, 7, "original").ok());

  ClientOptions plain;
  plain.max_attempts = 1;
  plain.timeout = std::chrono::milliseconds(3000);
  auto plain_text = Client::Connect(address, plain);
  auto other_ca = Client::Connect(address, options(trusting(f().other_ca.cert)));
  for (Client* c : {plain_text.get(), other_ca.get()}) {
    const absl::Status s = put(*c, 7, "overwritten");
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_FALSE(put(*c, 8, "new").ok());
    EXPECT_FALSE(c->Health().ok());
  }
  EXPECT_EQ(get(*trusted, 7), "original");
  EXPECT_EQ(get(*trusted, 8), "(not found)");
}

TEST_F(Tls, UnderMutualTlsOnlyClientsWithACertificateOfTheCaGetIn) {
  auto server = start(f().server, true);
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", server->port());
  auto member = Client::Connect(address, options(trusting(f().ca.cert, &f().client)));
  ASSERT_TRUE(put(*member, 3, "member's").ok());
  EXPECT_EQ(get(*member, 3), "member's");

  auto no_certificate = Client::Connect(address, options(trusting(f().ca.cert)));
  auto stranger = Client::Connect(address, options(trusting(f().ca.cert, &f().stranger)));
  for (Client* c : {no_certificate.get(), stranger.get()}) {
    EXPECT_FALSE(put(*c, 3, "intruder's").ok());
    EXPECT_FALSE(put(*c, 4, "intruder's").ok());
    EXPECT_FALSE(c->Delete(std::vector<uint64_t>{3}).ok());
    EXPECT_THAT(get(*c, 3), HasSubstr("error"));
  }
  EXPECT_EQ(get(*member, 3), "member's");
  EXPECT_EQ(get(*member, 4), "(not found)");
}

TEST_F(Tls, TheCertificateMustNameTheServerUnlessTheClientSaysWhichName) {
  auto server = start(f().other_name, false);  // for shard.test only
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", server->port());
  auto by_address = Client::Connect(address, options(trusting(f().ca.cert)));
  EXPECT_FALSE(put(*by_address, 1, "x").ok());
  TlsFiles named = trusting(f().ca.cert);
  named.server_name = "shard.test";
  auto by_name = Client::Connect(address, options(named));
  EXPECT_TRUE(put(*by_name, 1, "x").ok());
}

TEST_F(Tls, AShardedClientReachesEveryShardOverMutualTls) {
  auto a = start(f().server, true);
  auto b = start(f().server, true);
  ASSERT_TRUE(a && b);
  const std::string list = absl::StrCat("127.0.0.1:", a->port(), ",127.0.0.1:", b->port());
  auto client = ShardedClient::Connect(list, options(trusting(f().ca.cert, &f().client)));
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (uint64_t k = 0; k < 64; ++k) {
    keys.push_back(k);
    values.push_back(absl::StrCat("tls-", k));
  }
  ASSERT_TRUE((*client)->Put(keys, std::vector<std::string_view>(values.begin(), values.end())).ok());
  auto r = (*client)->Get(keys);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(r->value(i), values[i]);
  uint64_t stored = 0;
  for (const auto& s : (*client)->Stats()) {
    ASSERT_TRUE(s.answer.ok()) << s.shard << ": " << s.answer.status();
    EXPECT_GT(s.answer->keys(), 0u) << s.shard << " got no keys";
    stored += s.answer->keys();
  }
  EXPECT_EQ(stored, keys.size());
}

TEST_F(Tls, BadFilesStopTheServersStartNamingTheFlag) {
  const std::string dir = f().dir;
  std::ofstream(dir + "/garbage.pem") << "not a certificate\n";
  std::ofstream(dir + "/empty.pem");
  ASSERT_TRUE(testing::RunOpenssl(dir, {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256",
                                        "-pass", "pass:secret", "-out", dir + "/encrypted.key"})
                  .ok());
  struct Case {
    std::string cert, key, client_ca, expect;
    absl::StatusCode code;
  };
  const std::vector<Case> cases = {
      {dir + "/missing.crt", f().server.key, "", "cannot read --tls_cert=" + dir + "/missing.crt",
       absl::StatusCode::kNotFound},
      {f().server.cert, f().client.key, "", "--tls_key=" + f().client.key + " does not belong to the certificate",
       absl::StatusCode::kInvalidArgument},
      {f().server.cert, dir + "/encrypted.key", "", "holds no unencrypted PEM private key",
       absl::StatusCode::kInvalidArgument},
      {dir + "/garbage.pem", f().server.key, "", "--tls_cert=" + dir + "/garbage.pem holds no PEM certificate",
       absl::StatusCode::kInvalidArgument},
      {dir + "/empty.pem", f().server.key, "", "--tls_cert=" + dir + "/empty.pem is empty",
       absl::StatusCode::kInvalidArgument},
      {f().server.cert, f().server.key, dir + "/garbage.pem", "--tls_client_ca=" + dir + "/garbage.pem holds no",
       absl::StatusCode::kInvalidArgument},
      {f().server.cert, "", "", "--tls_cert and --tls_key go together", absl::StatusCode::kInvalidArgument},
      {"", "", f().ca.cert, "--tls_client_ca needs --tls_cert", absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    server::ServerOptions o = testing::test_options();
    o.tls = {c.cert, c.key, c.client_ca};
    auto s = server::Server::start(o);
    ASSERT_FALSE(s.ok()) << "started with " << c.cert << " " << c.key << " " << c.client_ca;
    EXPECT_EQ(s.status().code(), c.code) << s.status();
    EXPECT_THAT(s.status().message(), HasSubstr(c.expect));
  }
}

TEST_F(Tls, BadFilesStopTheClientsLoadingNamingTheFlag) {
  TlsFiles cert_alone;
  cert_alone.cert_file = f().client.cert;
  EXPECT_THAT(LoadTlsFiles(cert_alone).status().message(), HasSubstr("--tls_cert and --tls_key go together"));
  TlsFiles missing_ca = trusting(f().dir + "/nowhere.crt");
  EXPECT_EQ(LoadTlsFiles(missing_ca).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(LoadTlsFiles(missing_ca).status().message(), HasSubstr("--tls_ca=" + f().dir + "/nowhere.crt"));
  TlsFiles mismatched = trusting(f().ca.cert, &f().client);
  mismatched.key_file = f().stranger.key;
  EXPECT_THAT(LoadTlsFiles(mismatched).status().message(), HasSubstr("does not belong to the certificate"));
  // Nothing asked for: plain text.
  auto off = LoadTlsFiles(TlsFiles{});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled);
  TlsFiles system_roots;
  system_roots.enabled = true;
  auto on = LoadTlsFiles(system_roots);
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->enabled);
  EXPECT_EQ(on->root_certificates, "");
}

TEST(PemFiles, ACertificateChainParsesWholeOrNotAtAll) {
  const std::string dir = loadgen::testing::TempDir("pem");
  auto ca = testing::MakeTestCa(dir, "ca");
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto cert = tls::ReadPemFile("--tls_ca", ca->cert);
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_TRUE(tls::CheckCertificates("two", *cert + *cert).ok());
  // A second certificate cut short is an error, not one good certificate.
  const std::string cut = *cert + cert->substr(0, cert->size() / 2) + "\n-----END CERTIFICATE-----\n";
  const absl::Status s = tls::CheckCertificates("cut", cut);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("certificate 2 in cut does not parse"));
}

}  // namespace
}  // namespace gphkv
