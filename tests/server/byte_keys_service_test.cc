// Byte keys over the wire (issue 26), through the raw stub so that no client
// library stands between: unary Get, Put and Delete, a Pipeline, a Batches
// message's ops and packed gets, on one store and split over partitions;
// "42" and 42 are two keys; bad keys are INVALID_ARGUMENT naming their
// index and change nothing; a server with --data_dir keeps byte keys across
// a restart.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;
using testing::test_options;

template <class Request>
Request with_byte_keys(const std::vector<std::string>& keys) {
  Request r;
  for (const std::string& k : keys) {
    r.add_key_lengths(static_cast<uint32_t>(k.size()));
    r.mutable_key_bytes()->append(k);
  }
  return r;
}

v1::PutRequest byte_put(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  auto r = with_byte_keys<v1::PutRequest>(keys);
  for (const std::string& v : values) {
    r.add_value_lengths(static_cast<uint32_t>(v.size()));
    r.mutable_values()->append(v);
  }
  return r;
}

std::unique_ptr<grpc::ClientContext> context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

// The values a GetResponse gives, "" for a miss, "<missing>" marks.
std::vector<std::string> values_of(const v1::GetResponse& r) {
  std::vector<std::string> out;
  size_t off = 0;
  for (int i = 0; i < r.found_size(); ++i) {
    if (!r.found(i)) {
      out.push_back("<missing>");
      continue;
    }
    out.push_back(r.values().substr(off, r.value_lengths(i)));
    off += r.value_lengths(i);
  }
  return out;
}

class ByteKeysService : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    auto o = test_options();
    o.cpu_partitions = GetParam();
    server_ = start_server(o);
    ASSERT_NE(server_, nullptr);
    client_ = connect(*server_);
  }
  v1::GetResponse get(const std::vector<std::string>& keys) {
    v1::GetResponse resp;
    auto ctx = context();
    const grpc::Status s = client_->stub()->Get(ctx.get(), with_byte_keys<v1::GetRequest>(keys), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  grpc::Status put(const v1::PutRequest& req, v1::PutResponse* resp) {
    auto ctx = context();
    return client_->stub()->Put(ctx.get(), req, resp);
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(ByteKeysService, UnaryPutGetDeleteOfAnyBytes) {
  const std::string nul("a\0b", 3), longest(250, 'k');
  const std::vector<std::string> keys = {"user:42:profile", nul, longest, "42"};
  const std::vector<std::string> values = {"hello", std::string("\0\1", 2), "L", "forty-two as bytes"};
  v1::PutResponse created;
  ASSERT_TRUE(put(byte_put(keys, values), &created).ok());
  ASSERT_EQ(created.created_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(created.created(i));
  // The uint64 key 42 is another key.
  auto ctx = context();
  v1::GetRequest u64;
  u64.add_keys(42);
  v1::GetResponse u64_resp;
  ASSERT_TRUE(client_->stub()->Get(ctx.get(), u64, &u64_resp).ok());
  EXPECT_FALSE(u64_resp.found(0)) << "the byte key \"42\" answered for the uint64 key 42";

  EXPECT_EQ(values_of(get({"42", "user:42:profile", "absent", nul, longest, nul})),
            (std::vector<std::string>{"forty-two as bytes", "hello", "<missing>", values[1], "L", values[1]}));
  v1::DeleteResponse deleted;
  ctx = context();
  ASSERT_TRUE(
      client_->stub()->Delete(ctx.get(), with_byte_keys<v1::DeleteRequest>({nul, "absent", nul}), &deleted).ok());
  EXPECT_EQ(deleted.deleted_size(), 3);
  EXPECT_TRUE(deleted.deleted(0));
  EXPECT_FALSE(deleted.deleted(1));
  EXPECT_FALSE(deleted.deleted(2));
  EXPECT_EQ(values_of(get({nul, "user:42:profile"})), (std::vector<std::string>{"<missing>", "hello"}));
}

TEST_P(ByteKeysService, PipelineAndBatchesCarryByteKeys) {
  {
    auto ctx = context();
    auto rw = client_->stub()->Pipeline(ctx.get());
    v1::PipelineRequest p;
    p.set_id(1);
    *p.mutable_put() = byte_put({"p:1", "p:2"}, {"one", "two"});
    ASSERT_TRUE(rw->Write(p));
    v1::PipelineRequest g;
    g.set_id(2);
    *g.mutable_get() = with_byte_keys<v1::GetRequest>({"p:2", "p:1", "p:3"});
    ASSERT_TRUE(rw->Write(g));
    rw->WritesDone();
    std::map<uint64_t, v1::PipelineResponse> got;
    v1::PipelineResponse r;
    while (rw->Read(&r)) got[r.id()] = r;
    ASSERT_TRUE(rw->Finish().ok());
    ASSERT_EQ(got.count(2), 1u);
    EXPECT_EQ(got[2].code(), 0) << got[2].message();
    EXPECT_EQ(values_of(got[2].get()), (std::vector<std::string>{"two", "one", "<missing>"}));
  }
  auto ctx = context();
  auto rw = client_->stub()->Batches(ctx.get());
  v1::BatchRequest m;
  m.set_id(7);
  *m.add_ops()->mutable_put() = byte_put({"b:1", "b:2"}, {"x", "y"});
  // Packed gets of byte keys: two requests of 2 and 1 keys.
  *m.mutable_gets() = with_byte_keys<v1::GetRequest>({"b:2", "p:1", "b:1"});
  m.add_get_counts(2);
  m.add_get_counts(1);
  ASSERT_TRUE(rw->Write(m));
  rw->WritesDone();
  v1::BatchResponse r;
  ASSERT_TRUE(rw->Read(&r));
  ASSERT_TRUE(rw->Finish().ok());
  ASSERT_EQ(r.results_size(), 1);
  EXPECT_EQ(r.results(0).code(), 0) << r.results(0).message();
  EXPECT_EQ(r.gets().code(), 0) << r.gets().message();
  EXPECT_EQ(values_of(r.gets().get()), (std::vector<std::string>{"y", "one", "x"}));
}

TEST_P(ByteKeysService, BadKeysAreInvalidArgumentNamingTheKeyAndChangeNothing) {
  auto expect_invalid = [&](const v1::PutRequest& req, const std::string& needle) {
    v1::PutResponse resp;
    const grpc::Status s = put(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(needle), std::string::npos) << s.error_message() << " lacks " << needle;
  };
  expect_invalid(byte_put({"good", "", "also"}, {"1", "2", "3"}), "byte key 1 is 0 bytes");
  expect_invalid(byte_put({"good", std::string(251, 'x')}, {"1", "2"}), "byte key 1 is 251 bytes");
  v1::PutRequest both = byte_put({"good"}, {"1"});
  both.add_keys(5);
  expect_invalid(both, "one kind of key");
  v1::PutRequest short_keys = byte_put({"good", "also"}, {"1", "2"});
  short_keys.mutable_key_bytes()->pop_back();
  expect_invalid(short_keys, "key_lengths sum to 8");
  EXPECT_EQ(values_of(get({"good", "also"})), (std::vector<std::string>{"<missing>", "<missing>"}));
}

INSTANTIATE_TEST_SUITE_P(Partitions, ByteKeysService, ::testing::Values(1u, 3u));

// Byte keys written to a server with --data_dir (three partitions, each its
// own directory) are there after a restart, beside uint64 keys; a delete
// stays deleted.
TEST(ByteKeysDurability, AServerWithADataDirKeepsByteKeysAcrossARestart) {
  auto o = test_options();
  o.cpu_partitions = 3;
  o.data_dir.dir = ::testing::TempDir() + "/byte_keys_data_dir";
  std::filesystem::remove_all(o.data_dir.dir);
  const std::vector<std::string> keys = {"user:42:profile", std::string("\0\xffk", 3), "42", std::string(250, 'x')};
  {
    auto server = start_server(o);
    ASSERT_NE(server, nullptr);
    auto client = connect(*server);
    v1::PutResponse resp;
    auto ctx = context();
    ASSERT_TRUE(client->stub()->Put(ctx.get(), byte_put(keys, {"profile", "binary", "bytes", "long"}), &resp).ok());
    v1::PutRequest by_id;
    by_id.add_keys(42);
    by_id.add_value_lengths(3);
    by_id.set_values("u64");
    ctx = context();
    ASSERT_TRUE(client->stub()->Put(ctx.get(), by_id, &resp).ok());
    v1::DeleteResponse deleted;
    ctx = context();
    ASSERT_TRUE(client->stub()->Delete(ctx.get(), with_byte_keys<v1::DeleteRequest>({keys[1]}), &deleted).ok());
    EXPECT_TRUE(deleted.deleted(0));
  }
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::GetResponse got;
  auto ctx = context();
  ASSERT_TRUE(client->stub()->Get(ctx.get(), with_byte_keys<v1::GetRequest>(keys), &got).ok());
  EXPECT_EQ(values_of(got), (std::vector<std::string>{"profile", "<missing>", "bytes", "long"}));
  v1::GetRequest by_id;
  by_id.add_keys(42);
  ctx = context();
  ASSERT_TRUE(client->stub()->Get(ctx.get(), by_id, &got).ok());
  EXPECT_EQ(values_of(got), (std::vector<std::string>{"u64"}));
  server.reset();
  std::filesystem::remove_all(o.data_dir.dir);
}

}  // namespace
}  // namespace gphkv
