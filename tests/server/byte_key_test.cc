// Byte keys' table keys and records (server/byte_key.h), and the map of
// collided keys (server/collided_keys.h) against a model.
#include "server/byte_key.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "server/collided_keys.h"
#include "server/value_handle.h"
#include "tests/engine/table_checks.h"

namespace gphkv::server {
namespace {

std::string random_key(std::mt19937_64& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(1, max_len);
  std::string key(len(rng), '\0');
  for (char& c : key) c = static_cast<char>(rng());  // any byte, NUL included
  return key;
}

TEST(ByteKey, TableKeysAreXxh3WithGphkvsSeedAndDifferByKey) {
  // Stable across runs and builds: a table key is written nowhere yet, but
  // the sharded client and the durability formats will rely on it.
  EXPECT_EQ(byte_key::table_key("user:42:profile"), byte_key::table_key(std::string("user:42:profile")));
  EXPECT_NE(byte_key::table_key("user:42:profile"), byte_key::table_key("user:42:profilf"));
  EXPECT_NE(byte_key::table_key(std::string_view("a\0", 2)), byte_key::table_key("a"));
  std::set<uint64_t> seen;
  for (int i = 0; i < 100000; ++i) seen.insert(byte_key::table_key("o:" + std::to_string(i)));
  EXPECT_EQ(seen.size(), 100000u);
}

TEST(ByteKey, FewHashBitsForceCollisions) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t k = byte_key::table_key("k" + std::to_string(i), 3);
    EXPECT_LT(k, 8u);
    seen.insert(k);
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(byte_key::table_key("x", 64) & 7, byte_key::table_key("x", 3));
}

TEST(ByteKey, RecordsHoldTheKeyAndTheValueOfAnyBytesAndLength) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    const std::string key = i == 0 ? std::string(byte_key::kMaxKeyBytesLimit, '\xff') : random_key(rng, 300);
    const std::string value = i % 3 == 0 ? std::string() : random_key(rng, 500);
    std::string record;
    byte_key::append_record(key, value, &record);
    ASSERT_EQ(record.size(), byte_key::record_bytes(key, value));
    const auto parsed = byte_key::parse_record(record);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->key, key);
    EXPECT_EQ(parsed->value, value);
    EXPECT_EQ(byte_key::value_if_key(record, key), std::optional<std::string_view>(value));
  }
}

TEST(ByteKey, ARecordAnswersOnlyForItsOwnKey) {
  std::string record;
  byte_key::append_record("ab", "cX", &record);
  EXPECT_EQ(byte_key::value_if_key(record, "ab"), std::optional<std::string_view>("cX"));
  // The record's bytes begin with "abc", but its key is "ab".
  EXPECT_FALSE(byte_key::value_if_key(record, "abc").has_value());
  EXPECT_FALSE(byte_key::value_if_key(record, "a").has_value());
  EXPECT_FALSE(byte_key::value_if_key(record, "ac").has_value());
  // Truncated records are refused, not read past their end.
  EXPECT_FALSE(byte_key::parse_record(record.substr(0, 3)).has_value());
  EXPECT_FALSE(byte_key::parse_record(record.substr(0, 1)).has_value());
  EXPECT_FALSE(byte_key::parse_record("").has_value());
}

TEST(ByteKey, ItemHeadersCarryFlagsExpiryAndCas) {
  std::mt19937_64 rng(engine::testing::test_seed());
  for (int i = 0; i < 2000; ++i) {
    const std::string key = random_key(rng, i % 10 == 0 ? byte_key::kMaxKeyBytesLimit : 40);
    std::string value(rng() % 100, '\0');
    for (char& c : value) c = static_cast<char>(rng());
    byte_key::ItemMeta meta;
    if (rng() % 4 != 0) {
      meta.flags = static_cast<uint32_t>(rng() >> (rng() % 33));
      meta.exptime = static_cast<uint32_t>(rng() >> (rng() % 33));
      const int cas_shift = static_cast<int>(rng() % 65);  // 64: a CAS of 0
      meta.cas = cas_shift == 64 ? 0 : rng() >> cas_shift;
    }
    std::string record;
    byte_key::append_record(key, value, meta, &record);
    ASSERT_EQ(record.size(), byte_key::record_bytes(key, value, meta));
    // Only a record with item fields pays for the header.
    ASSERT_EQ(record.size(), 2 + key.size() + value.size() + (meta.empty() ? 0 : 16));
    const std::optional<byte_key::Record> r = byte_key::parse_record(record);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->key, key);
    EXPECT_EQ(r->value, value);
    EXPECT_TRUE(r->meta == meta);
    EXPECT_EQ(byte_key::value_if_key(record, key), std::optional<std::string_view>(value));
    // Cut anywhere inside the header or key: never read past the end.
    const size_t cut = rng() % (record.size() - value.size());
    EXPECT_FALSE(byte_key::parse_record(std::string_view(record).substr(0, cut)).has_value()) << cut;
  }
}

TEST(ByteKey, RecordsWrittenBeforeItemHeadersReadWithZeros) {
  // A record as issue 26's builds wrote it, byte for byte: [len 2][key][value].
  const std::string old(
      "\x03\x00"
      "abc"
      "value",
      10);
  const std::optional<byte_key::Record> r = byte_key::parse_record(old);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->key, "abc");
  EXPECT_EQ(r->value, "value");
  EXPECT_TRUE(r->meta == byte_key::ItemMeta{});
  // And a record without item fields is still written that way.
  std::string record;
  byte_key::append_record("abc", "value", byte_key::ItemMeta{}, &record);
  EXPECT_EQ(record, old);
  // With fields: the length's top bit, then flags, exptime, CAS, little-endian.
  record.clear();
  byte_key::append_record("abc", "v", byte_key::ItemMeta{0x01020304, 0x0a0b0c0d, 0x1122334455667788}, &record);
  EXPECT_EQ(record, std::string("\x03\x80\x04\x03\x02\x01\x0d\x0c\x0b\x0a\x88\x77\x66\x55\x44\x33\x22\x11"
                                "abcv",
                                22));
}

TEST(ByteKey, ExptimeFollowsMemcachedsRule) {
  constexpr uint32_t now = 1'800'000'000;
  EXPECT_EQ(byte_key::absolute_exptime(0, now), 0u);                         // never
  EXPECT_EQ(byte_key::absolute_exptime(1, now), now + 1);                    // relative
  EXPECT_EQ(byte_key::absolute_exptime(2592000, now), now + 2592000);        // 30 days: still relative
  EXPECT_EQ(byte_key::absolute_exptime(2592001, now), 2592001u);             // beyond: absolute (long past)
  EXPECT_EQ(byte_key::absolute_exptime(now + 5ll, now), now + 5);            // absolute
  EXPECT_EQ(byte_key::absolute_exptime(-1, now), now);                       // expired at once
  EXPECT_EQ(byte_key::absolute_exptime(int64_t{1} << 40, now), UINT32_MAX);  // clamped
  // Applying the rule again (a replayed write) keeps the time.
  for (int64_t e : {int64_t{0}, int64_t{1}, int64_t{2592000}, int64_t{-1}, int64_t{now} + 5}) {
    const uint32_t once = byte_key::absolute_exptime(e, now);
    EXPECT_EQ(byte_key::absolute_exptime(once, now + 100), once) << e;
  }
  // Expired at its second, not before; 0 never.
  EXPECT_FALSE(byte_key::is_expired(now, now - 1));
  EXPECT_TRUE(byte_key::is_expired(now, now));
  EXPECT_TRUE(byte_key::is_expired(now, now + 1));
  EXPECT_FALSE(byte_key::is_expired(0, UINT32_MAX));
}

TEST(ValueHandle, TheRecordBitIsNeitherLengthNorId) {
  const uint64_t h = value_handle::make(value_handle::kMaxLength, value_handle::kMaxIds - 1);
  EXPECT_FALSE(value_handle::is_record(h));
  const uint64_t r = value_handle::as_record(h);
  EXPECT_TRUE(value_handle::is_record(r));
  EXPECT_EQ(value_handle::length(r), value_handle::kMaxLength);
  EXPECT_EQ(value_handle::id(r), value_handle::kMaxIds - 1);
  EXPECT_FALSE(value_handle::is_record(value_handle::make(0, 0)));
}

TEST(CollidedKeys, Uint64AndByteKeysNeverShareAnIdentity) {
  // The byte key of the uint64 key's 8 little-endian bytes is still another key.
  const uint64_t k = 0x0807060504030201ull;
  EXPECT_NE(CollidedKeys::identity(k),
            CollidedKeys::identity_of_bytes(std::string("\x01\x02\x03\x04\x05\x06\x07\x08")));
  EXPECT_NE(CollidedKeys::identity(0), CollidedKeys::identity(UINT64_MAX));
  CollidedKeys keys;
  EXPECT_FALSE(keys.assign(CollidedKeys::identity(k), 1).has_value());
  EXPECT_FALSE(keys.find(CollidedKeys::identity_of_bytes(std::string("\x01\x02\x03\x04\x05\x06\x07\x08"))));
  EXPECT_EQ(keys.find(CollidedKeys::identity(k)), std::optional<ValueHandle>(1));
}

TEST(CollidedKeys, AgreesWithAModel) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  CollidedKeys keys;
  std::map<std::string, ValueHandle> model;
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    ids.push_back(i % 2 ? CollidedKeys::identity(rng() % 50) : CollidedKeys::identity_of_bytes(random_key(rng, 4)));
  }
  for (int step = 0; step < 20000; ++step) {
    const std::string& id = ids[rng() % ids.size()];
    const auto expected = [&]() -> std::optional<ValueHandle> {
      auto it = model.find(id);
      return it == model.end() ? std::nullopt : std::optional<ValueHandle>(it->second);
    }();
    switch (rng() % 3) {
      case 0: {
        const ValueHandle h = rng();
        EXPECT_EQ(keys.assign(id, h), expected);
        model[id] = h;
        break;
      }
      case 1:
        EXPECT_EQ(keys.erase(id), expected);
        model.erase(id);
        break;
      default: EXPECT_EQ(keys.find(id), expected);
    }
    ASSERT_EQ(keys.size(), model.size());
    ASSERT_EQ(keys.empty(), model.empty());
  }
  std::map<std::string, ValueHandle> listed;
  keys.for_each([&](std::string_view id, ValueHandle h) { listed.emplace(std::string(id), h); });
  EXPECT_EQ(listed, model);
  // Its bytes come back to nothing once every key is gone.
  for (const auto& [id, h] : model) keys.erase(id);
  EXPECT_EQ(keys.bytes(), 0u);
}

}  // namespace
}  // namespace gphkv::server
