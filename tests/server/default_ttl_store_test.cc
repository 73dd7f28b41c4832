// --default_ttl (StoreOptions::default_ttl_seconds, issue 27): a byte-key
// item set, added, replaced or cas'd without an expiry takes the default,
// counted from its write by the store's clock; an explicit expiry wins;
// append, prepend, incr and decr keep the item's own expiry, and an incr
// that creates its item (memcached's ma N0) takes the default; uint64 keys
// (no item header) and recovery's puts (each item's fields as logged) are
// left alone. On both backends.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_store_test.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

class DefaultTtlStore : public ItemStoreTest {
 protected:
  static constexpr uint32_t kTtl = 100;

  void configure(StoreOptions& o) override {
    ItemStoreTest::configure(o);
    o.default_ttl_seconds = kTtl;
  }

  absl::Status write(const std::string& key, const std::string& value, PutMode mode, int64_t exptime = 0,
                     uint64_t cas = 0) {
    auto c = make_byte_put({key}, {value}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.mode = mode;
    op.exptime = exptime;
    op.cas = cas;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    return st[0];
  }

  // The item of `key` as a get sees it now (its value and fields), or nullopt.
  std::optional<std::pair<std::string, byte_key::ItemMeta>> item(const std::string& key) {
    auto c = make_byte_get({key}, GetParam().hash_bits);
    std::vector<byte_key::ItemMeta> items;
    std::get<GetOp>(c->call.op).items = &items;
    std::vector<absl::Status> st;
    store_->apply_gets({&c->call}, &st);
    EXPECT_TRUE(st[0].ok()) << st[0];
    if (!c->get_out.found(0)) return std::nullopt;
    return std::make_pair(c->get_out.values(), items.at(0));
  }
};

TEST_P(DefaultTtlStore, WritesWithoutAnExpiryTakeTheDefault) {
  const uint32_t t0 = now_;
  ASSERT_TRUE(write("set", "v", PutMode::kSet).ok());
  ASSERT_TRUE(write("explicit", "v", PutMode::kSet, 5).ok());
  ASSERT_TRUE(write("added", "v", PutMode::kAdd).ok());
  ASSERT_TRUE(write("replaced", "v", PutMode::kSet, 1000).ok());
  ASSERT_TRUE(write("replaced", "w", PutMode::kReplace).ok());
  ASSERT_TRUE(write("counter", "7", PutMode::kSet, 1000).ok());
  ASSERT_TRUE(write("counter", "3", PutMode::kIncrement).ok());
  ASSERT_TRUE(write("appended", "a", PutMode::kSet, 1000).ok());
  ASSERT_TRUE(write("appended", "b", PutMode::kAppend).ok());
  // Recovery's puts carry each item's fields: an item logged without an expiry keeps none.
  byte_key::ItemMeta logged;
  logged.flags = 9;
  ASSERT_TRUE(store_->put_byte_pairs({"recovered"}, {"r"}, {logged}).ok());
  auto ids = make_put({42}, {"uint64"});
  std::vector<absl::Status> st;
  store_->apply_puts({&ids->call}, &st);
  ASSERT_TRUE(st[0].ok());

  EXPECT_EQ(item("set")->second.exptime, t0 + kTtl);
  EXPECT_EQ(item("explicit")->second.exptime, t0 + 5) << "an explicit expiry wins";
  EXPECT_EQ(item("added")->second.exptime, t0 + kTtl);
  EXPECT_EQ(item("replaced")->second.exptime, t0 + kTtl) << "a replace stores a new item";
  EXPECT_EQ(item("counter")->second.exptime, t0 + 1000) << "incr keeps the item's expiry";
  EXPECT_EQ(item("counter")->first, "10");
  EXPECT_EQ(item("appended")->second.exptime, t0 + 1000) << "append keeps the item's expiry";
  EXPECT_EQ(item("recovered")->second.exptime, 0u);
  EXPECT_EQ(item("recovered")->second.flags, 9u);

  // A cas without an expiry takes the default too.
  now_ += 50;
  const uint64_t cas = item("set")->second.cas;
  ASSERT_TRUE(write("set", "v2", PutMode::kCompareAndSet, 0, cas).ok());
  EXPECT_EQ(item("set")->second.exptime, t0 + 50 + kTtl);

  // At the boundary second the defaulted items go; the others stay.
  now_ = t0 + kTtl - 1;
  EXPECT_TRUE(item("added").has_value());
  now_ = t0 + kTtl;
  EXPECT_FALSE(item("added").has_value());
  EXPECT_FALSE(item("replaced").has_value());
  EXPECT_TRUE(item("set").has_value()) << "written again at t0 + 50";
  EXPECT_TRUE(item("recovered").has_value());
  now_ = t0 + 100000;
  EXPECT_FALSE(item("set").has_value());
  EXPECT_TRUE(item("recovered").has_value());
  auto back = make_get({42});
  store_->apply_gets({&back->call}, &st);
  ASSERT_TRUE(st[0].ok());
  EXPECT_TRUE(back->get_out.found(0)) << "uint64 keys never expire";
}

// memcached's ma N (PutOp::vivify): a miss is created with N's expiry; N0
// (none) takes the default, as a set without one does; a hit keeps its own.
TEST_P(DefaultTtlStore, AnIncrementThatCreatesTakesTheDefaultForNoExpiry) {
  const uint32_t t0 = now_;
  auto vivify = [&](const std::string& key, int64_t n_exptime) {
    auto c = make_byte_put({key}, {"1"}, GetParam().hash_bits);
    PutOp& op = std::get<PutOp>(c->call.op);
    op.mode = PutMode::kIncrement;
    op.vivify = true;
    op.vivify_exptime = n_exptime;
    op.initial = 5;
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    return st[0];
  };
  ASSERT_TRUE(vivify("n0", 0).ok());
  ASSERT_TRUE(vivify("n30", 30).ok());
  ASSERT_TRUE(write("held", "7", PutMode::kSet, 1000).ok());
  ASSERT_TRUE(vivify("held", 0).ok());
  EXPECT_EQ(item("n0")->first, "5");
  EXPECT_EQ(item("n0")->second.exptime, t0 + kTtl);
  EXPECT_EQ(item("n30")->second.exptime, t0 + 30) << "N's own expiry wins";
  EXPECT_EQ(item("held")->first, "8");
  EXPECT_EQ(item("held")->second.exptime, t0 + 1000) << "an increment of a stored item keeps its expiry";
  now_ = t0 + kTtl;
  EXPECT_FALSE(item("n0").has_value());
  EXPECT_TRUE(item("held").has_value());
}

INSTANTIATE_TEST_SUITE_P(Backends, DefaultTtlStore,
                         ::testing::Values(ByteKeyBackend{engine::Backend::kCpu, 64},
                                           ByteKeyBackend{engine::Backend::kCuda, 64}),
                         byte_key_backend_name);

}  // namespace
}  // namespace gphkv::server
