#include "server/durability/write_batch.h"

#include <cstring>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "server/durability/pair_codec.h"
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

TEST(WriteBatch, RandomBatchesWithByteKeysReplayToBothModels) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  Model model;
  testing::ByteModel byte_model;
  ModelSink sink;
  DecodedBatch decoded;
  uint64_t byte_runs = 0;
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    WriteBatch batch = testing::random_batch(seed, seq, &model, testing::Keys::kBoth, &byte_model);
    batch.set_sequence(seq);
    ASSERT_TRUE(decode_write_batch(batch.payload(), &decoded).ok());
    EXPECT_EQ(decoded.puts + decoded.deletes, batch.ops());
    for (const auto& run : decoded.runs) byte_runs += !run.byte_keys.empty();
    ASSERT_TRUE(decoded.replay(sink).ok());
    ASSERT_EQ(sink.state, model) << "after batch " << seq;
    ASSERT_EQ(sink.byte_state, byte_model) << "after batch " << seq;
  }
  EXPECT_GT(byte_runs, 100u);
  EXPECT_GT(byte_model.size(), 10u);
}

// A byte key's bytes come back exactly: NUL bytes, the longest key, and a
// byte key that reads as a number never meets the uint64 key of that number.
TEST(WriteBatch, ByteKeyRunsKeepTheirBytesAndTheirOrder) {
  const std::string binary("\0k\xff\0", 4), longest(kMaxByteKeyBytes, 'x');
  const std::vector<std::string_view> keys{binary, longest, "42"}, second{"42"};
  WriteBatch batch;
  batch.add_byte_puts(keys, std::vector<uint32_t>{1, 0, 2}, "abb");
  batch.add_puts(std::vector<uint64_t>{42}, std::vector<uint32_t>{3}, "u64");
  batch.add_byte_deletes(second);
  batch.add_byte_puts(second, std::vector<uint32_t>{4}, "back");
  batch.set_sequence(3);
  DecodedBatch d;
  ASSERT_TRUE(decode_write_batch(batch.payload(), &d).ok());
  ASSERT_EQ(d.runs.size(), 4u);
  EXPECT_EQ(d.runs[0].byte_keys, keys);
  EXPECT_TRUE(d.runs[0].keys.empty());
  EXPECT_EQ(d.runs[0].values, (std::vector<std::string_view>{"a", "", "bb"}));
  EXPECT_EQ(d.runs[1].keys, (std::vector<uint64_t>{42}));
  EXPECT_FALSE(d.runs[2].puts);
  EXPECT_EQ(d.runs[2].byte_keys, second);
  EXPECT_EQ(d.puts, 5u);
  EXPECT_EQ(d.deletes, 1u);
  ModelSink sink;
  ASSERT_TRUE(d.replay(sink).ok());
  EXPECT_EQ(sink.state, (Model{{42, "u64"}}));
  EXPECT_EQ(sink.byte_state, (testing::ByteModel{{binary, "a"}, {longest, ""}, {"42", "back"}}));
}

TEST(WriteBatch, ByteKeyOfAnImpossibleLengthIsDataLoss) {
  for (const uint16_t length : {uint16_t{0}, static_cast<uint16_t>(kMaxByteKeyBytes + 1)}) {
    WriteBatch batch;
    batch.add_byte_deletes(std::vector<std::string_view>{"abc"});
    std::string payload(batch.payload());
    // The entry's length field, after the sequence (8) and the run header (5).
    std::memcpy(&payload[13], &length, sizeof length);
    payload.resize(15);
    payload.append(length, 'k');
    DecodedBatch d;
    const absl::Status s = decode_write_batch(payload, &d);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << length;
    EXPECT_NE(s.message().find("length out of range"), std::string::npos) << s;
  }
}

TEST(WriteBatch, CutPayloadsWithByteKeysFailOrShrinkNeverOverrun) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  for (uint64_t seq = 1; seq <= 8; ++seq) {
    WriteBatch batch = testing::random_batch(seed, seq, nullptr, testing::Keys::kBoth);
    batch.set_sequence(seq);
    const std::string payload(batch.payload());
    if (payload.size() > 20000) continue;  // a 64 KiB value: every cut would take long
    DecodedBatch whole, cut;
    ASSERT_TRUE(decode_write_batch(payload, &whole).ok());
    for (size_t len = 0; len < payload.size(); ++len) {
      const std::string prefix = payload.substr(0, len);
      if (decode_write_batch(prefix, &cut).ok()) EXPECT_LT(cut.runs.size(), whole.runs.size()) << len;
    }
  }
}

// flush_all's marks (run kind 6) come back in their place among the puts
// and deletes, each with its version bound and delayed time, extremes too;
// a cut mark is DATA_LOSS.
TEST(WriteBatch, FlushMarksKeepTheirPlaceAndFields) {
  WriteBatch batch;
  const std::vector<std::string_view> keys{"a"};
  batch.add_byte_puts(keys, std::vector<uint32_t>{1}, "1");
  batch.add_flush(FlushMark{42, 0});
  batch.add_flush(FlushMark{0, 1'800'000'000});
  batch.add_byte_deletes(keys);
  batch.add_flush(FlushMark{UINT64_MAX, UINT32_MAX});
  batch.set_sequence(3);
  EXPECT_EQ(batch.ops(), 5u);
  DecodedBatch d;
  ASSERT_TRUE(decode_write_batch(batch.payload(), &d).ok());
  ASSERT_EQ(d.runs.size(), 4u);
  EXPECT_TRUE(d.runs[0].puts);
  EXPECT_FALSE(d.runs[1].puts);
  EXPECT_EQ(d.runs[1].flushes, (std::vector<FlushMark>{{42, 0}, {0, 1'800'000'000}}));
  EXPECT_TRUE(d.runs[2].flushes.empty());
  EXPECT_EQ(d.runs[3].flushes, (std::vector<FlushMark>{{UINT64_MAX, UINT32_MAX}}));
  ModelSink sink;
  ASSERT_TRUE(d.replay(sink).ok());
  EXPECT_EQ(sink.flushes, (std::vector<FlushMark>{{42, 0}, {0, 1'800'000'000}, {UINT64_MAX, UINT32_MAX}}));
  EXPECT_TRUE(sink.byte_state.empty());
  const std::string payload(batch.payload());
  const absl::Status cut = decode_write_batch(payload.substr(0, payload.size() - 1), &d);
  EXPECT_EQ(cut.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(cut.message().find("flush marks"), std::string::npos) << cut;
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
