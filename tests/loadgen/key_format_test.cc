// --key_format: the names the load generator gives byte keys.
#include "loadgen/key_format.h"

#include <set>

#include "gtest/gtest.h"

namespace gphkv::loadgen {
namespace {

TEST(KeyFormat, ParsesBothFormatsAndRefusesOthers) {
  EXPECT_EQ(*ParseKeyFormat("u64"), KeyFormat::kU64);
  EXPECT_EQ(*ParseKeyFormat("bytes"), KeyFormat::kBytes);
  EXPECT_FALSE(ParseKeyFormat("string").ok());
  EXPECT_STREQ(KeyFormatName(KeyFormat::kBytes), "bytes");
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
