#include "server/durability/write_batch.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

using testing::Model;
using testing::ModelSink;

TEST(WriteBatch, RandomBatchesReplayToTheModel) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  Model model;
  ModelSink sink;
  DecodedBatch decoded;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    WriteBatch batch = testing::random_batch(seed, seq, &model);
    batch.set_sequence(seq);
    ASSERT_TRUE(decode_write_batch(batch.payload(), &decoded).ok());
    EXPECT_EQ(decoded.sequence, seq);
    EXPECT_EQ(decoded.puts + decoded.deletes, batch.ops());
    ASSERT_TRUE(decoded.replay(sink).ok());
    ASSERT_EQ(sink.state, model) << "after batch " << seq;
  }
}

// Consecutive additions of one kind extend one run; order across kinds holds.
TEST(WriteBatch, RunsMergeAndKeepOrder) {
  WriteBatch batch;
  const std::vector<uint64_t> k1{1, 2}, k2{3}, k3{1};
  batch.add_puts(k1, std::vector<uint32_t>{1, 2}, "abb");
  batch.add_puts(k2, std::vector<uint32_t>{0}, "");
  batch.add_deletes(k3);
  const std::vector<std::string_view> v{"late"};
  batch.add_puts(Pairs{k3, v});
  batch.set_sequence(7);
  DecodedBatch d;
  ASSERT_TRUE(decode_write_batch(batch.payload(), &d).ok());
  ASSERT_EQ(d.runs.size(), 3u);
  EXPECT_EQ(d.runs[0].keys, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(d.runs[0].values, (std::vector<std::string_view>{"a", "bb", ""}));
  EXPECT_FALSE(d.runs[1].puts);
  EXPECT_EQ(d.runs[2].values, (std::vector<std::string_view>{"late"}));
  ModelSink sink;
  ASSERT_TRUE(d.replay(sink).ok());
  EXPECT_EQ(sink.state, (Model{{1, "late"}, {2, "bb"}, {3, ""}}));
}

// Without its CRC a payload can be cut anywhere; decoding never reads past
// it: it fails, or (cut at a run's end) yields fewer runs.
TEST(WriteBatch, CutPayloadsFailOrShrinkNeverOverrun) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  WriteBatch batch = testing::random_batch(seed, 1, nullptr);
  batch.set_sequence(1);
  const std::string payload(batch.payload());
  DecodedBatch whole, cut;
  ASSERT_TRUE(decode_write_batch(payload, &whole).ok());
  for (size_t len = 0; len < payload.size(); ++len) {
    const std::string prefix = payload.substr(0, len);  // its own buffer, so an overrun is an ASan error
    if (decode_write_batch(prefix, &cut).ok()) {
      EXPECT_LT(cut.runs.size(), whole.runs.size()) << len;
    }
  }
}

TEST(WriteBatch, UnknownRunKindIsDataLoss) {
  WriteBatch batch;
  batch.add_deletes(std::vector<uint64_t>{5});
  std::string payload(batch.payload());
  payload[8] = 9;
  DecodedBatch d;
  const absl::Status s = decode_write_batch(payload, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("unknown run kind 9 at byte 8"), std::string::npos) << s;
}

}  // namespace
}  // namespace gphkv::server::durability
