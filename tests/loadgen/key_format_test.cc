// --key_format: the names the load generator gives byte keys.
#include "loadgen/key_format.h"

#include <memory>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "loadgen/size_distribution.h"

namespace gphkv::loadgen {
namespace {

TEST(KeyFormat, ParsesEveryFormatAndRefusesOthers) {
  EXPECT_EQ(*ParseKeyFormat("u64"), KeyFormat::kU64);
  EXPECT_EQ(*ParseKeyFormat("bytes"), KeyFormat::kBytes);
  EXPECT_EQ(*ParseKeyFormat("tao"), KeyFormat::kTao);
  EXPECT_FALSE(ParseKeyFormat("string").ok());
  EXPECT_STREQ(KeyFormatName(KeyFormat::kBytes), "bytes");
  EXPECT_STREQ(KeyFormatName(KeyFormat::kTao), "tao");
}

// --key_length as a size spec: each id its own length within the spec, the
// same every time it is named, every length of the range used, names distinct.
TEST(KeyFormat, ByteKeyLengthsFollowTheirSpecPerId) {
  auto spec = ParseSizeDistribution("16-40");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const ByteKeyNames names(std::shared_ptr<const SizeDistribution>(std::move(*spec)));
  EXPECT_EQ(names.length(), 40u);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 5000; ++i) ids.push_back(i * 7919);
  std::string storage;
  std::vector<std::string_view> views;
  names.Name(ids, &storage, &views);
  std::set<size_t> lengths;
  std::set<std::string_view> distinct(views.begin(), views.end());
  EXPECT_EQ(distinct.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_GE(views[i].size(), 16u);
    ASSERT_LE(views[i].size(), 40u);
    ASSERT_EQ(views[i], names.Name(ids[i])) << "an id is named the same every time";
    lengths.insert(views[i].size());
  }
  EXPECT_EQ(lengths.size(), 25u) << "every length of 16-40";
}

// TaoBench's shapes: objects for even ids, associations for odd ones, every
// id its own name, none longer than kMaxTaoLength.
TEST(KeyFormat, TaoNamesAreObjectsAndAssociationsOneForEachId) {
  const ByteKeyNames names(24, KeyFormat::kTao);
  EXPECT_EQ(names.Name(0), "o:0");
  EXPECT_EQ(names.Name(84), "o:42");
  // 2 * (8 * 12345 + 3) + 1: type 3, rest 12345 = 12 * 1000 + 345.
  EXPECT_EQ(names.Name(2 * (8 * 12345 + 3) + 1), "a:12:3:345");
  EXPECT_EQ(names.Name(~uint64_t{0}).size(), size_t{ByteKeyNames::kMaxTaoLength});
  std::mt19937_64 rng(7);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 20000; ++i) ids.push_back(i);
  for (int i = 0; i < 20000; ++i) ids.push_back(rng());
  std::string storage;
  std::vector<std::string_view> views;
  names.Name(ids, &storage, &views);
  std::set<uint64_t> distinct_ids(ids.begin(), ids.end());
  std::set<std::string_view> distinct(views.begin(), views.end());
  EXPECT_EQ(distinct.size(), distinct_ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_LE(views[i].size(), ByteKeyNames::kMaxTaoLength);
    ASSERT_EQ(views[i].substr(0, 2), ids[i] % 2 == 0 ? "o:" : "a:") << ids[i];
    ASSERT_EQ(views[i], names.Name(ids[i]));
  }
}

TEST(KeyFormat, ByteKeysHaveTheirLengthAndNameTheirIdOnly) {
  const ByteKeyNames names(24);
  EXPECT_EQ(names.Name(17), "k:0000000000000000000017");
  EXPECT_EQ(names.Name(~uint64_t{0}), "k:0018446744073709551615");
  // An id with more digits than the length leaves room for makes a longer key, never a shared one.
  EXPECT_EQ(ByteKeyNames(3).Name(12345), "k:12345");
  std::string storage;
  std::vector<std::string_view> views;
  const std::vector<uint64_t> ids = {0, 1, 10, 1, 99999};
  names.Name(ids, &storage, &views);
  ASSERT_EQ(views.size(), ids.size());
  std::set<std::string_view> distinct(views.begin(), views.end());
  EXPECT_EQ(distinct.size(), 4u);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(views[i].size(), 24u);
    EXPECT_EQ(views[i], names.Name(ids[i]));
  }
}

}  // namespace
}  // namespace gphkv::loadgen
