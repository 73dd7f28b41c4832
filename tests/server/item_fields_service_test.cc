// Item fields over gRPC (issue 27): PutRequest's flags, exptime and
// WRITE_MODE_CAS, GetRequest's with_items and touch, through gphkv::Client
// (coalescing and not, one partition and three), read back through gRPC and
// through the memcached port of the same server. The server's clock is the
// test's (StoreOptions::unix_clock), so items expire at their boundary
// second without sleeping. Against a model of every key's value and fields;
// CAS races between threads; bad input (item fields on uint64 keys,
// with_items in packed gets, ...) refused whole, changing nothing; a touch on
// a --data_dir server refused FAILED_PRECONDITION.
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

constexpr uint32_t kStart = 1'800'000'000;

struct Shape {
  uint32_t partitions;
  bool coalesce;
};

struct Item {
  std::string value;
  uint32_t flags = 0;
  uint32_t exptime = 0;  // absolute
};

class ItemFieldsService : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
    o.cpu_partitions = GetParam().partitions;
    o.store.unix_clock = [this] { return now_.load(); };
    server_ = testing::start_server(o);
    ASSERT_NE(server_, nullptr);
    ClientOptions co;
    co.coalesce.enabled = GetParam().coalesce;
    client_ = testing::connect(*server_, co);
  }

  absl::StatusOr<v1::GetResponse> items(const std::vector<std::string>& keys) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    return client_->GetItems(views);
  }

  // Every key of the model, read through gRPC with its fields, as the model says now.
  void expect_model(const std::map<std::string, Item>& model, const std::vector<std::string>& keys) {
    auto got = items(keys);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->found_size(), static_cast<int>(keys.size()));
    ASSERT_EQ(got->cas_size(), static_cast<int>(keys.size()));
    size_t offset = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("key ", keys[i], " at ", now_.load()));
      auto it = model.find(keys[i]);
      const bool live = it != model.end() && (it->second.exptime == 0 || it->second.exptime > now_);
      const int k = static_cast<int>(i);
      ASSERT_EQ(got->found(k), live);
      if (!live) {
        EXPECT_EQ(got->flags(k), 0u);
        EXPECT_EQ(got->exptime(k), 0u);
        EXPECT_EQ(got->cas(k), 0u);
        continue;
      }
      EXPECT_EQ(got->values().substr(offset, got->value_lengths(k)), it->second.value);
      offset += got->value_lengths(k);
      EXPECT_EQ(got->flags(k), it->second.flags);
      EXPECT_EQ(got->exptime(k), it->second.exptime);
      EXPECT_NE(got->cas(k), 0u);
    }
  }

  std::atomic<uint32_t> now_{kStart};
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<Client> client_;
};

INSTANTIATE_TEST_SUITE_P(Shapes, ItemFieldsService,
                         ::testing::Values(Shape{1, false}, Shape{1, true}, Shape{3, false}, Shape{3, true}));

TEST_P(ItemFieldsService, FlagsAndExpiryAgainstAModelUpToTheirBoundarySecond) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  std::mt19937_64 rng(seed);
  std::map<std::string, Item> model;
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(absl::StrCat("item:", i));
  keys.push_back("never:written");
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) {
      Item item;
      item.value = absl::StrCat("v", rng() % 100000);
      item.flags = static_cast<uint32_t>(rng());
      // 0 never; a few seconds ahead; an absolute time; or negative (expired at once).
      int64_t exptime = 0;
      switch (rng() % 4) {
        case 0: exptime = 0; break;
        case 1: exptime = static_cast<int64_t>(1 + rng() % 5); break;
        case 2: exptime = static_cast<int64_t>(now_ + 1 + rng() % 5); break;
        case 3: exptime = -1; break;
      }
      item.exptime = exptime == 0       ? 0
                     : exptime < 0      ? now_.load()  // already past: a miss at once
                     : exptime < kStart ? now_ + static_cast<uint32_t>(exptime)
                                        : static_cast<uint32_t>(exptime);
      WriteOptions w;
      w.flags = item.flags;
      w.exptime = exptime;
      auto put = client_->Write(std::string_view(keys[i]), item.value, w);
      ASSERT_TRUE(put.ok()) << put.status();
      model[keys[i]] = item;
    }
    // Each second up to the last expiry: an item is there before its
    // second and gone from it on.
    for (int s = 0; s <= 6; ++s) {
      expect_model(model, keys);
      if (::testing::Test::HasFatalFailure()) return;
      now_ += 1;
    }
  }
}

TEST_P(ItemFieldsService, WhatGrpcWritesTheMemcachedPortReadsAndBack) {
  testing::MemcacheSocket socket(server_->memcached_port());
  ASSERT_TRUE(socket.connected());
  WriteOptions w;
  w.flags = 4294967295u;
  w.exptime = 100;
  ASSERT_TRUE(client_->Write(std::string_view("from:grpc"), "abc", w).ok());
  auto got = items({"from:grpc"});
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string reply = absl::StrCat("VALUE from:grpc 4294967295 3 ", got->cas(0), "\r\nabc\r\nEND\r\n");
  EXPECT_EQ(socket.round_trip("gets from:grpc\r\n", reply), reply);
  const std::string stored = "STORED\r\n";
  EXPECT_EQ(socket.round_trip("set from:memcached 77 50 2\r\nxy\r\n", stored), stored);
  got = items({"from:memcached"});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->found(0));
  EXPECT_EQ(got->values(), "xy");
  EXPECT_EQ(got->flags(0), 77u);
  EXPECT_EQ(got->exptime(0), kStart + 50);
  // The port's cas takes the version gRPC read, and gRPC's cas the port's.
  const std::string cas_line = absl::StrCat("cas from:memcached 5 0 1 ", got->cas(0), "\r\nz\r\n");
  EXPECT_EQ(socket.round_trip(cas_line, stored), stored);
  const std::string exists = "EXISTS\r\n";
  EXPECT_EQ(socket.round_trip(cas_line, exists), exists);
  got = items({"from:memcached"});
  ASSERT_TRUE(got.ok());
  w = WriteOptions{};
  w.mode = v1::WRITE_MODE_CAS;
  w.cas = got->cas(0);
  w.flags = 6;
  ASSERT_TRUE(client_->Write(std::string_view("from:memcached"), "q", w).ok());
  const std::string now_reply = "VALUE from:memcached 6 1\r\nq\r\nEND\r\n";
  EXPECT_EQ(socket.round_trip("get from:memcached\r\n", now_reply), now_reply);
}

TEST_P(ItemFieldsService, CasAnswersAbortedOrNotFoundAndChangesNothing) {
  const std::string_view key = "cas:key";
  WriteOptions cas;
  cas.mode = v1::WRITE_MODE_CAS;
  cas.cas = 1;
  EXPECT_EQ(client_->Write(key, "x", cas).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(items({"cas:key"})->found(0));
  WriteOptions set;
  set.flags = 3;
  set.exptime = 10;
  ASSERT_TRUE(client_->Write(key, "first", set).ok());
  auto before = items({"cas:key"});
  ASSERT_TRUE(before.ok());
  cas.cas = before->cas(0) + 1;
  EXPECT_EQ(client_->Write(key, "second", cas).status().code(), absl::StatusCode::kAborted);
  auto after = items({"cas:key"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->values(), "first");
  EXPECT_EQ(after->cas(0), before->cas(0));
  // A cas that stores takes its own flags and expiry, as memcached's does.
  cas.cas = before->cas(0);
  cas.flags = 4;
  cas.exptime = 10;
  ASSERT_TRUE(client_->Write(key, "second", cas).ok());
  after = items({"cas:key"});
  EXPECT_EQ(after->values(), "second");
  EXPECT_EQ(after->flags(0), 4u);
  EXPECT_EQ(after->exptime(0), kStart + 10);
  EXPECT_NE(after->cas(0), before->cas(0));
  // An expired item is absent to a cas, even with the version it had.
  cas.cas = after->cas(0);
  now_ += 10;
  EXPECT_EQ(client_->Write(key, "third", cas).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(ItemFieldsService, CasRaceBetweenClientsLosesNoIncrement) {
  const std::string_view key = "cas:counter";
  ASSERT_TRUE(client_->Write(key, "0", WriteOptions{}).ok());
  constexpr int kThreads = 4, kIncrements = 25;
  std::atomic<int> won{0}, aborted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ClientOptions co;
      co.coalesce.enabled = GetParam().coalesce;
      auto client = testing::connect(*server_, co);
      const std::vector<std::string_view> keys{key};
      for (int done = 0; done < kIncrements;) {
        auto got = client->GetItems(keys);
        if (!got.ok() || !got->found(0)) return;
        WriteOptions w;
        w.mode = v1::WRITE_MODE_CAS;
        w.cas = got->cas(0);
        const std::string next = std::to_string(std::stoll(got->values()) + 1);
        auto put = client->Write(key, next, w);
        if (put.ok()) {
          ++done;
          ++won;
        } else if (put.status().code() == absl::StatusCode::kAborted) {
          ++aborted;
        } else {
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), kThreads * kIncrements);
  auto got = items({"cas:counter"});
  ASSERT_TRUE(got.ok());
  // Every cas that won saw the value the one before it wrote.
  EXPECT_EQ(got->values(), std::to_string(kThreads * kIncrements));
}

TEST_P(ItemFieldsService, TouchSetsTheExpiryAndKeepsValueFlagsAndCas) {
  WriteOptions w;
  w.flags = 9;
  w.exptime = 5;
  ASSERT_TRUE(client_->Write(std::string_view("t"), "tv", w).ok());
  auto before = items({"t", "absent"});
  ASSERT_TRUE(before.ok());
  const std::vector<std::string_view> keys{"t", "absent"};
  auto touched = client_->Touch(keys, 100);
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_TRUE(touched->found(0));
  EXPECT_FALSE(touched->found(1));
  auto after = items({"t", "absent"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->values(), "tv");
  EXPECT_EQ(after->flags(0), 9u);
  EXPECT_EQ(after->exptime(0), kStart + 100);
  EXPECT_EQ(after->cas(0), before->cas(0));
  EXPECT_FALSE(after->found(1));
  now_ += 99;
  EXPECT_TRUE(items({"t"})->found(0));
  now_ += 1;
  EXPECT_FALSE(items({"t"})->found(0));
}

// Through the raw stub, so that no client library checks anything first.
TEST_P(ItemFieldsService, ItemFieldsOnUint64KeysAndOtherBadInputChangeNothing) {
  v1::KeyValue::Stub* stub = client_->stub();
  const std::vector<std::string_view> plain{"v0"};
  ASSERT_TRUE(client_->Put(std::vector<uint64_t>{7}, plain).ok());
  ASSERT_TRUE(client_->Write(std::string_view("b"), "b0", WriteOptions{}).ok());
  auto call_put = [&](const v1::PutRequest& req) {
    grpc::ClientContext ctx;
    v1::PutResponse resp;
    return stub->Put(&ctx, req, &resp);
  };
  auto call_get = [&](const v1::GetRequest& req) {
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    return stub->Get(&ctx, req, &resp);
  };
  auto uint64_put = [] {
    v1::PutRequest r;
    r.add_keys(7);
    r.add_value_lengths(3);
    r.set_values("bad");
    return r;
  };
  auto byte_put = [] {
    v1::PutRequest r;
    r.set_key_bytes("b");
    r.add_key_lengths(1);
    r.add_value_lengths(3);
    r.set_values("bad");
    return r;
  };
  struct Case {
    std::string field;
    v1::PutRequest req;
  };
  std::vector<Case> puts;
  puts.push_back({"PutRequest.flags", uint64_put()});
  puts.back().req.set_flags(1);
  puts.push_back({"PutRequest.exptime", uint64_put()});
  puts.back().req.set_exptime(-1);
  puts.push_back({"PutRequest.mode WRITE_MODE_CAS", uint64_put()});
  puts.back().req.set_mode(v1::WRITE_MODE_CAS);
  puts.push_back({"PutRequest.cas", byte_put()});
  puts.back().req.set_cas(5);
  puts.push_back({"PutRequest.mode 8", byte_put()});
  puts.back().req.set_mode(static_cast<v1::WriteMode>(8));
  for (const Case& c : puts) {
    SCOPED_TRACE(c.field);
    const grpc::Status s = call_put(c.req);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(c.field), std::string::npos) << s.error_message();
  }
  std::vector<std::pair<std::string, v1::GetRequest>> gets;
  v1::GetRequest g;
  g.add_keys(7);
  g.set_with_items(true);
  gets.emplace_back("GetRequest.with_items", g);
  g.set_with_items(false);
  g.set_touch(true);
  gets.emplace_back("GetRequest.touch", g);
  g = v1::GetRequest();
  g.set_key_bytes("b");
  g.add_key_lengths(1);
  g.set_touch(true);
  g.set_touch_exptime(-1);
  g.set_value_mode(v1::VALUE_MODE_EXISTS);
  gets.emplace_back("GetRequest.touch", g);
  g.set_touch(false);
  g.set_value_mode(v1::VALUE_MODE_VALUES);
  gets.emplace_back("GetRequest.touch_exptime", g);
  for (const auto& [field, req] : gets) {
    SCOPED_TRACE(field);
    const grpc::Status s = call_get(req);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(field), std::string::npos) << s.error_message();
  }
  // Packed gets take no item fields: the whole packed part is refused.
  {
    grpc::ClientContext ctx;
    auto stream = stub->Batches(&ctx);
    v1::BatchRequest req;
    req.set_id(1);
    req.mutable_gets()->set_key_bytes("b");
    req.mutable_gets()->add_key_lengths(1);
    req.mutable_gets()->set_with_items(true);
    req.add_get_counts(1);
    ASSERT_TRUE(stream->Write(req));
    v1::BatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.gets().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(resp.gets().message().find("with_items"), std::string::npos) << resp.gets().message();
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  // Nothing changed: both values, the byte key's fields, and no expiry.
  auto plain_get = client_->Get(std::vector<uint64_t>{7});
  ASSERT_TRUE(plain_get.ok());
  EXPECT_EQ(plain_get->value(0), "v0");
  auto b = items({"b"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->values(), "b0");
  EXPECT_EQ(b->flags(0), 0u);
  EXPECT_EQ(b->exptime(0), 0u);
}

// With --data_dir a touch is logged (durable_server_test.cc kills the server
// after one); here a clean restart, through the final snapshot, keeps it too.
TEST(ItemFieldsDataDir, ATouchKeepsTheVersionAndItsExpiryComesBack) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gphkv-item-fields-", getpid());
  fs::remove_all(dir);
  server::ServerOptions o = testing::test_options();
  o.data_dir.dir = dir.string();
  v1::GetResponse touched;
  {
    auto server = testing::start_server(o);
    ASSERT_NE(server, nullptr);
    auto client = testing::connect(*server);
    WriteOptions w;
    w.flags = 2;
    w.exptime = 1000;
    ASSERT_TRUE(client->Write(std::string_view("k"), "v", w).ok());
    const std::vector<std::string_view> keys{"k"};
    auto before = client->GetItems(keys);
    ASSERT_TRUE(before.ok()) << before.status();
    EXPECT_EQ(before->flags(0), 2u);
    EXPECT_NE(before->exptime(0), 0u);
    ASSERT_TRUE(client->Touch(keys, 5000).ok());
    auto after = client->GetItems(keys);
    ASSERT_TRUE(after.ok());
    EXPECT_GT(after->exptime(0), before->exptime(0));
    EXPECT_EQ(after->cas(0), before->cas(0));
    touched = *after;
  }
  auto server = testing::start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = testing::connect(*server);
  const std::vector<std::string_view> keys{"k"};
  auto back = client->GetItems(keys);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->values(), "v");
  EXPECT_EQ(back->flags(0), 2u);
  EXPECT_EQ(back->exptime(0), touched.exptime(0));
  EXPECT_EQ(back->cas(0), touched.cas(0));
  server.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gphkv
