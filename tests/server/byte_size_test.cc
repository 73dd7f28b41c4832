#include "server/byte_size.h"

#include <string>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

TEST(ByteSize, ParsesUnits) {
  uint64_t v = 0;
  std::string err;
  ASSERT_TRUE(parse_byte_size("512MiB", &v, &err));
  EXPECT_EQ(v, 512ull << 20);
  ASSERT_TRUE(parse_byte_size("4GiB", &v, &err));
  EXPECT_EQ(v, 4ull << 30);
  ASSERT_TRUE(parse_byte_size("1000", &v, &err));
  EXPECT_EQ(v, 1000u);
  ASSERT_TRUE(parse_byte_size("2GB", &v, &err));
  EXPECT_EQ(v, 2000000000u);
  EXPECT_FALSE(parse_byte_size("12 parsecs", &v, &err));
  EXPECT_NE(err.find("parsecs"), std::string::npos);
  EXPECT_FALSE(parse_byte_size("MiB", &v, &err));
  EXPECT_EQ(format_byte_size(1ull << 30), "1GiB");
}

}  // namespace
}  // namespace gphkv::server
