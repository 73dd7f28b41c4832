#include "server/durability/record_format.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

std::string frame(const std::string& payload) {
  const auto h = record_header(payload);
  return std::string(h.data(), h.size()) + payload;
}

TEST(RecordFormat, ReadsBackRecordsBackToBack) {
  const std::string bytes = frame("first") + frame("") + frame(std::string(70000, 'x'));
  RecordAt a = read_record(bytes, 0);
  ASSERT_EQ(a.check, RecordCheck::kOk);
  EXPECT_EQ(a.payload, "first");
  RecordAt b = read_record(bytes, a.end);
  ASSERT_EQ(b.check, RecordCheck::kOk);
  EXPECT_EQ(b.payload, "");
  RecordAt c = read_record(bytes, b.end);
  ASSERT_EQ(c.check, RecordCheck::kOk);
  EXPECT_EQ(c.payload.size(), 70000u);
  EXPECT_EQ(c.end, bytes.size());
}

TEST(RecordFormat, EveryCutIsTruncated) {
  const std::string bytes = frame("a payload of some length");
  for (size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_EQ(read_record(bytes.substr(0, len), 0).check, RecordCheck::kTruncated) << len;
  }
}

// A flip of any bit, length field included, is caught: as a bad CRC, or as
// a length that runs past the end.
TEST(RecordFormat, EveryBitFlipIsCaught) {
  const std::string bytes = frame("payload bytes 0123456789");
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_NE(read_record(flipped, 0).check, RecordCheck::kOk) << "bit " << bit;
  }
}

TEST(RecordFormat, NextIntactRecordTellsATornTailFromDamage) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::string a = frame(std::string(300, 'a')), b = frame(std::string(200, 'b'));
  // Damage in the first record with an intact one after it: found.
  std::string bytes = a + b;
  bytes[20] ^= 1;
  ASSERT_NE(read_record(bytes, 0).check, RecordCheck::kOk);
  EXPECT_EQ(next_intact_record(bytes, 0), std::optional<uint64_t>(a.size()));
  // A torn tail: a cut record, then zeros or random bytes: nothing intact.
  std::string torn = a.substr(0, 150) + std::string(4096, '\0');
  EXPECT_EQ(next_intact_record(torn, 0), std::nullopt);
  std::string noise = a.substr(0, 150);
  for (int i = 0; i < 4096; ++i) noise.push_back(static_cast<char>(rng()));
  EXPECT_EQ(next_intact_record(noise, 0), std::nullopt);
}

}  // namespace
}  // namespace gphkv::server::durability
