// Snapshot files alone: written from a PairSource, read back into a sink;
// cut and bit-flipped files are refused naming the file and offset, or
// under skip-corrupt load every intact block; a source that fails leaves
// nothing behind.
#include <random>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/durability/file_names.h"
#include "server/durability/pair_codec.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"
#include "server/durability/snapshot_feed.h"
#include "server/durability/snapshot_format.h"
#include "server/durability/snapshot_reader.h"
#include "server/durability/snapshot_writer.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

using testing::Model;
using testing::ModelSink;
using testing::ModelSource;
using testing::ScratchDir;

Model random_model(std::mt19937_64& rng, size_t n) {
  Model m;
  m[0] = "zero";
  m[UINT64_MAX] = "";
  while (m.size() < n) {
    std::string v(rng() % 200, '\0');
    for (char& c : v) c = static_cast<char>(rng());
    m[rng()] = v;
  }
  return m;
}

// The offsets of the block records.
std::vector<uint64_t> block_offsets(const std::string& bytes) {
  std::vector<uint64_t> offs;
  for (uint64_t off = kSnapshotBlocksOffset; off < bytes.size();) {
    const RecordAt r = read_record(bytes, off);
    if (r.check != RecordCheck::kOk) break;
    offs.push_back(off);
    off = r.end;
  }
  return offs;
}

// The pairs of the block at `offset`.
Model block_pairs(const std::string& bytes, uint64_t offset) {
  ModelSink sink;
  const RecordAt r = read_record(bytes, offset);
  std::vector<uint64_t> keys;
  std::vector<std::string_view> values;
  EXPECT_EQ(r.payload.substr(0, 1), std::string(1, kSnapshotBlockOfKeys)) << "a block of uint64 keys";
  uint64_t at = 1;
  EXPECT_TRUE(decode_pair_entries(r.payload, &at, UINT64_MAX, &keys, &values));
  EXPECT_TRUE(sink.on_puts(Pairs{keys, values}).ok());
  return sink.state;
}

struct Written {
  std::string path;
  std::string bytes;
  Model model;
};

Written write_random_snapshot(const std::string& dir, uint64_t seed, uint64_t sequence) {
  std::mt19937_64 rng(seed);
  Written w;
  w.model = random_model(rng, 2000);
  ModelSource source(&w.model, 97);
  auto info = write_snapshot(dir, sequence, source, 4096);
  EXPECT_TRUE(info.ok()) << info.status();
  w.path = info->path;
  w.bytes = testing::read_file(w.path);
  EXPECT_EQ(info->file_bytes, w.bytes.size());
  EXPECT_EQ(info->header.pairs, w.model.size());
  EXPECT_GT(info->header.blocks, 20u);
  return w;
}

// Every field of the header comes back whole: each holds a value that needs
// all its bytes, so a field cut short or written past the payload shows.
TEST(Snapshot, TheHeaderKeepsEveryFieldWhole) {
  SnapshotHeader h;
  h.sequence = 0x0102030405060708ULL;
  h.pairs = 0x1112131415161718ULL;
  h.value_bytes = 0x2122232425262728ULL;
  h.blocks = 0x3132333435363738ULL;
  h.created_unix_ms = 0x4142434445464748LL;
  const std::string payload = encode_snapshot_header(h);
  EXPECT_EQ(payload.size(), kSnapshotHeaderPayloadBytes);
  auto back = decode_snapshot_header(payload);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, kSnapshotVersion);
  EXPECT_EQ(back->sequence, h.sequence);
  EXPECT_EQ(back->pairs, h.pairs);
  EXPECT_EQ(back->value_bytes, h.value_bytes);
  EXPECT_EQ(back->blocks, h.blocks);
  EXPECT_EQ(back->created_unix_ms, h.created_unix_ms);
  EXPECT_EQ(decode_snapshot_header(payload.substr(0, payload.size() - 4)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Snapshot, RoundTrip) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), seed, 42);
  EXPECT_EQ(w.path, tmp.path() + "/snapshot-00000000000000000042.gphkv");
  ModelSink sink;
  auto load = load_snapshot({42, w.path}, RecoverMode::kStrict, sink);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(sink.state, w.model);
  // The bulk-load hint came first, with the header's counts.
  EXPECT_EQ(sink.puts_before_begin, 0u);
  EXPECT_EQ(sink.begun_pairs, w.model.size());
  uint64_t value_bytes = 0;
  for (const auto& [k, v] : w.model) value_bytes += v.size();
  EXPECT_EQ(sink.begun_value_bytes, value_bytes);
  EXPECT_EQ(load->header.sequence, 42u);
  EXPECT_EQ(load->pairs, w.model.size());
  EXPECT_EQ(testing::list_names(tmp.path()), std::vector<std::string>{"snapshot-00000000000000000042.gphkv"});
}

// A sink that refuses a block (recovery out of --memory) ends the load with
// its error at once, while the blocks are being read ahead of it: the
// blocks before it were delivered, none after.
TEST(Snapshot, ASinkErrorEndsTheLoadWhileBlocksAreReadAhead) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), seed, 5);
  class RefusingSink : public ModelSink {
   public:
    absl::Status on_puts(const Pairs& pairs) override {
      if (++blocks == 3) return absl::ResourceExhaustedError("full");
      return ModelSink::on_puts(pairs);
    }
    int blocks = 0;
  };
  RefusingSink sink;
  auto load = load_snapshot({5, w.path}, RecoverMode::kStrict, sink);
  EXPECT_EQ(load.status().code(), absl::StatusCode::kResourceExhausted) << load.status();
  EXPECT_EQ(sink.blocks, 3);
  const std::vector<uint64_t> offs = block_offsets(w.bytes);
  Model first_two = block_pairs(w.bytes, offs[0]);
  for (const auto& [k, v] : block_pairs(w.bytes, offs[1])) first_two[k] = v;
  EXPECT_EQ(sink.state, first_two);
}

// A key that occurs twice (a fuzzy export met it again) ends with its last value.
TEST(Snapshot, TheLastOccurrenceOfAKeyWins) {
  class Twice : public PairSource {
   public:
    absl::StatusOr<bool> next(Pairs* out) override {
      if (calls_ == 2) return false;
      values_[0] = calls_++ == 0 ? "old" : "new";
      *out = Pairs{keys_, values_};
      return true;
    }

   private:
    int calls_ = 0;
    std::vector<uint64_t> keys_{1};
    std::vector<std::string_view> values_{""};
  } source;
  ScratchDir tmp;
  ASSERT_TRUE(write_snapshot(tmp.path(), 1, source, 1 << 20).ok());
  ModelSink sink;
  auto load = load_snapshot({1, tmp.path() + "/" + snapshot_name(1)}, RecoverMode::kStrict, sink);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->pairs, 2u);
  EXPECT_EQ(sink.state, (Model{{1, "new"}}));
}

// Cut anywhere: strict refuses, naming the file and an offset; skip-corrupt
// (past the header) loads exactly the blocks wholly before the cut.
TEST(Snapshot, CutFilesAreRefusedOrLoadTheirIntactBlocks) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), seed, 7);
  const std::vector<uint64_t> blocks = block_offsets(w.bytes);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t cut = trial < 80 ? trial : rng() % w.bytes.size();
    SCOPED_TRACE(::testing::Message() << "cut at " << cut);
    testing::write_file(w.path, w.bytes.substr(0, cut));
    ModelSink strict;
    auto s = load_snapshot({7, w.path}, RecoverMode::kStrict, strict);
    ASSERT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
    EXPECT_NE(s.status().message().find("snapshot " + w.path + " at offset "), std::string::npos) << s.status();
    ModelSink skip;
    auto k = load_snapshot({7, w.path}, RecoverMode::kSkipCorrupt, skip);
    if (cut < kSnapshotBlocksOffset) {
      EXPECT_FALSE(k.ok());
      continue;
    }
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_FALSE(k->dropped.empty());
    Model expected;
    for (size_t b = 0; b < blocks.size(); ++b) {
      const uint64_t end = b + 1 < blocks.size() ? blocks[b + 1] : w.bytes.size();
      if (end <= cut) expected.merge(block_pairs(w.bytes, blocks[b]));
    }
    EXPECT_EQ(skip.state, expected);
  }
}

// A flipped bit in a block: strict refuses naming that block's offset;
// skip-corrupt loads every other block. In the header: refused either way.
TEST(Snapshot, BitFlipsAreRefusedOrSkipped) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), seed, 9);
  const std::vector<uint64_t> blocks = block_offsets(w.bytes);
  for (int trial = 0; trial < 60; ++trial) {
    const uint64_t at = trial < 10 ? rng() % kSnapshotBlocksOffset : rng() % w.bytes.size();
    std::string flipped = w.bytes;
    flipped[at] ^= static_cast<char>(1 << (rng() % 8));
    testing::write_file(w.path, flipped);
    SCOPED_TRACE(::testing::Message() << "flip at " << at);
    ModelSink strict, skip;
    auto s = load_snapshot({9, w.path}, RecoverMode::kStrict, strict);
    ASSERT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
    auto k = load_snapshot({9, w.path}, RecoverMode::kSkipCorrupt, skip);
    if (at < kSnapshotBlocksOffset) {
      EXPECT_FALSE(k.ok());
      continue;
    }
    const size_t b = std::upper_bound(blocks.begin(), blocks.end(), at) - blocks.begin() - 1;
    EXPECT_NE(s.status().message().find("at offset " + std::to_string(blocks[b]) + ":"), std::string::npos)
        << s.status();
    ASSERT_TRUE(k.ok()) << k.status();
    Model expected = w.model;
    for (const auto& [key, value] : block_pairs(w.bytes, blocks[b])) expected.erase(key);
    EXPECT_EQ(skip.state, expected);
  }
}

TEST(Snapshot, AHeaderThatDisagreesWithTheNameIsRefused) {
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), 1, 5);
  const std::string renamed = tmp.path() + "/" + snapshot_name(6);
  ASSERT_TRUE(rename_file(w.path, renamed).ok());
  ModelSink sink;
  auto s = load_snapshot({6, renamed}, RecoverMode::kSkipCorrupt, sink);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("the header says batch 5, the name batch 6"), std::string::npos) << s.status();
}

// Byte keys' pairs go in blocks of their own (issue 26) and come back with
// every byte, beside uint64 keys that read as the same numbers.
TEST(Snapshot, RoundTripWithByteKeys) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  const Model model = random_model(rng, 500);
  testing::ByteModel byte_model;
  byte_model[std::string(kMaxByteKeyBytes, 'k')] = "longest";
  byte_model[std::string("\0", 1)] = "nul";
  byte_model["0"] = "not the uint64 key 0";
  while (byte_model.size() < 700) {
    std::string key(1 + rng() % 40, '\0'), value(rng() % 100, '\0');
    for (char& c : key) c = static_cast<char>(rng());
    for (char& c : value) c = static_cast<char>(rng());
    byte_model[key] = value;
  }
  ModelSource source(&model, 97, &byte_model);
  auto info = write_snapshot(tmp.path(), 9, source, 4096);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->header.version, kSnapshotVersion);
  EXPECT_EQ(info->header.pairs, model.size() + byte_model.size());
  const std::string bytes = testing::read_file(info->path);
  std::set<char> kinds;
  for (uint64_t off : block_offsets(bytes)) kinds.insert(read_record(bytes, off).payload[0]);
  EXPECT_EQ(kinds, (std::set<char>{kSnapshotBlockOfKeys, kSnapshotBlockOfByteKeys}));
  for (RecoverMode mode : {RecoverMode::kStrict, RecoverMode::kSkipCorrupt}) {
    ModelSink sink;
    auto load = load_snapshot({9, info->path}, mode, sink);
    ASSERT_TRUE(load.ok()) << load.status();
    EXPECT_EQ(sink.state, model);
    EXPECT_EQ(sink.byte_state, byte_model);
    EXPECT_EQ(load->pairs, model.size() + byte_model.size());
  }
}

// A snapshot of version 1 (before byte keys: blocks without a kind byte)
// still loads.
TEST(Snapshot, AVersionOneFileStillLoads) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  const Model model = random_model(rng, 300);
  SnapshotHeader h;
  h.version = kSnapshotVersionUint64Only;
  h.sequence = 5;
  h.pairs = model.size();
  std::string blocks;
  std::string block;
  auto flush = [&] {
    const auto frame = record_header(block);
    blocks.append(frame.data(), frame.size());
    blocks += block;
    block.clear();
    ++h.blocks;
  };
  for (const auto& [k, v] : model) {
    const std::vector<uint64_t> key{k};
    const std::vector<std::string_view> value{v};
    append_pair_entries(&block, key, value);
    h.value_bytes += v.size();
    if (block.size() > 2048) flush();
  }
  if (!block.empty()) flush();
  const std::string head = encode_snapshot_header(h);
  const auto head_frame = record_header(head);
  const std::string path = tmp.path() + "/" + snapshot_name(5);
  testing::write_file(path,
                      std::string(kSnapshotMagic) + std::string(head_frame.data(), head_frame.size()) + head + blocks);
  ModelSink sink;
  auto load = load_snapshot({5, path}, RecoverMode::kStrict, sink);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->header.version, 1u);
  EXPECT_EQ(sink.state, model);
  EXPECT_TRUE(sink.byte_state.empty());
}

// Version 3 (a newer build's) is neither damage to skip nor a file to read.
TEST(Snapshot, AFormatVersionFromANewerBuildIsRefusedInEitherMode) {
  ScratchDir tmp;
  const Written w = write_random_snapshot(tmp.path(), 1, 4);
  const RecordAt head = read_record(w.bytes, kSnapshotMagic.size());
  ASSERT_EQ(head.check, RecordCheck::kOk);
  std::string payload(head.payload);
  payload[0] = 3;  // the version field
  const auto frame = record_header(payload);
  std::string bytes = w.bytes;
  bytes.replace(kSnapshotMagic.size(), frame.size() + payload.size(),
                std::string(frame.data(), frame.size()) + payload);
  testing::write_file(w.path, bytes);
  for (RecoverMode mode : {RecoverMode::kStrict, RecoverMode::kSkipCorrupt}) {
    ModelSink sink;
    auto s = load_snapshot({4, w.path}, mode, sink);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented) << s.status();
    EXPECT_NE(s.status().message().find("version 3"), std::string::npos) << s.status();
  }
}

TEST(Snapshot, ASourceErrorLeavesNothingBehind) {
  ScratchDir tmp;
  std::mt19937_64 rng(3);
  const Model m = random_model(rng, 500);
  ModelSource source(&m, 10);
  source.fail_at_chunk = 20;
  auto info = write_snapshot(tmp.path(), 3, source, 1024);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(testing::list_names(tmp.path()).empty());
}

// The executor's side pushes chunks while the writer drains them.
TEST(SnapshotFeed, CarriesChunksAcrossThreadsWithinItsCap) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const Model m = random_model(rng, 5000);
  ScratchDir tmp;
  SnapshotFeed feed(8 << 10);
  std::thread owner([&] {
    auto it = m.begin();
    while (it != m.end()) {
      if (!feed.wants_more()) {
        std::this_thread::yield();
        continue;
      }
      PairChunk c;
      for (int i = 0; i < 50 && it != m.end(); ++i, ++it) {
        c.keys.push_back(it->first);
        c.lengths.push_back(static_cast<uint32_t>(it->second.size()));
        c.bytes += it->second;
      }
      feed.push(std::move(c));
    }
    feed.finish();
  });
  auto info = write_snapshot(tmp.path(), 1, feed, 4096);
  owner.join();
  ASSERT_TRUE(info.ok()) << info.status();
  ModelSink sink;
  ASSERT_TRUE(load_snapshot({1, info->path}, RecoverMode::kStrict, sink).ok());
  EXPECT_EQ(sink.state, m);
}

TEST(SnapshotFeed, FailEndsTheSnapshotAndAbandonStopsTheOwner) {
  SnapshotFeed feed(1 << 20);
  feed.push(PairChunk{{1}, {1}, "a"});
  feed.fail(absl::UnavailableError("store gone"));
  Pairs p;
  EXPECT_EQ(feed.next(&p).status().code(), absl::StatusCode::kUnavailable);

  SnapshotFeed other(1 << 20);
  EXPECT_TRUE(other.wants_more());
  other.abandon();
  EXPECT_TRUE(other.abandoned());
  EXPECT_FALSE(other.wants_more());
}

}  // namespace
}  // namespace gphkv::server::durability
