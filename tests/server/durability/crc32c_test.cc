#include "server/durability/crc32c.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c_extend_portable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
}

// RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  std::string zeros(32, '\0'), ones(32, '\xFF'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

// The instruction path (where the CPU has it) and the table path agree on
// random data at every alignment and length, and extending piece by piece
// equals one pass.
TEST(Crc32c, PathsAgreeAndExtendComposes) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed << " sse4.2=" << crc32c_uses_sse42());
  std::mt19937_64 rng(seed);
  std::string data(4096 + 16, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t off = rng() % 16, len = rng() % 4096;
    const char* p = data.data() + off;
    const uint32_t whole = crc32c_extend(0, p, len);
    ASSERT_EQ(whole, crc32c_extend_portable(0, p, len)) << "offset " << off << " length " << len;
    const size_t cut = len == 0 ? 0 : rng() % len;
    ASSERT_EQ(crc32c_extend(crc32c_extend(0, p, cut), p + cut, len - cut), whole);
  }
}

}  // namespace
}  // namespace gphkv::server::durability
