// The log through DataDir (no snapshots): every batch appended comes back,
// in order, across segments and fsync policies; a torn last record is cut
// wherever the crash cut it; any other damage is refused naming the file
// and offset, or, under skip-corrupt, replay stops right before it.
#include <sys/stat.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/durability/data_dir.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

using testing::append_batches;
using testing::list_names;
using testing::model_after;
using testing::ModelSink;
using testing::ScratchDir;

DataDirOptions options(FsyncPolicy fsync, uint64_t segment_bytes = uint64_t{64} << 20,
                       RecoverMode recover = RecoverMode::kStrict) {
  DataDirOptions o;
  o.log.fsync = fsync;
  o.log.segment_bytes = segment_bytes;
  o.recover = recover;
  return o;
}

// A log of batches 1..n (policy never: these tests look at the files).
void write_log(const std::string& path, uint64_t seed, uint64_t n, uint64_t segment_bytes = uint64_t{64} << 20) {
  ModelSink sink;
  auto dir = DataDir::open(path, options(FsyncPolicy::kNever, segment_bytes), sink);
  ASSERT_TRUE(dir.ok()) << dir.status();
  append_batches(**dir, seed, 1, n);
}

// Opens `path` and expects the state after batch `last`.
void expect_recovers_to(const std::string& path, uint64_t seed, uint64_t last, const DataDirOptions& o) {
  ModelSink sink;
  auto dir = DataDir::open(path, o, sink);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ((*dir)->recovery().last_sequence, last);
  EXPECT_EQ(sink.state, model_after(seed, last));
}

std::string segment(const std::string& dir, int i) {
  std::vector<std::string> segs;
  for (const std::string& n : list_names(dir)) {
    if (n.rfind("log-", 0) == 0 && n.find(".corrupt") == std::string::npos) segs.push_back(dir + "/" + n);
  }
  return i < 0 ? segs[segs.size() + i] : segs[i];
}

TEST(Log, RoundTripAcrossSegmentsAndPolicies) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  for (FsyncPolicy p : {FsyncPolicy::kAlways, FsyncPolicy::kEverySec, FsyncPolicy::kNever}) {
    SCOPED_TRACE(fsync_policy_name(p));
    ScratchDir tmp;
    const DataDirOptions o = options(p, 16 << 10);
    {
      ModelSink sink;
      auto dir = DataDir::open(tmp.path(), o, sink);
      ASSERT_TRUE(dir.ok()) << dir.status();
      EXPECT_TRUE(sink.state.empty());
      append_batches(**dir, seed, 1, 150);
      const LogWriterState st = (*dir)->state().log;
      EXPECT_EQ(st.last_sequence, 150u);
      EXPECT_GT(st.segments, 3u);
      if (p == FsyncPolicy::kAlways) EXPECT_EQ(st.durable_sequence, 150u);
    }
    expect_recovers_to(tmp.path(), seed, 150, o);
    {
      ModelSink sink;
      auto dir = DataDir::open(tmp.path(), o, sink);
      ASSERT_TRUE(dir.ok()) << dir.status();
      append_batches(**dir, seed, 151, 200);
    }
    expect_recovers_to(tmp.path(), seed, 200, o);
  }
}

TEST(Log, TornLastRecordIsCutAtEveryByte) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir full;
  write_log(full.path(), seed, 20);
  const std::string seg_name = segment(full.path(), -1).substr(full.path().size());
  const std::string bytes = testing::read_file(full.path() + seg_name);
  const std::vector<uint64_t> offsets = testing::record_offsets(bytes);
  ASSERT_EQ(offsets.size(), 20u);
  const uint64_t start = offsets.back();
  // Every byte of the last record's header and the payload's first bytes,
  // then up to 500 more spread over the rest, and its last byte.
  std::vector<uint64_t> cuts;
  const uint64_t step = std::max<uint64_t>(1, (bytes.size() - start) / 500);
  for (uint64_t cut = start; cut < bytes.size(); cut += cut < start + 64 ? 1 : step) cuts.push_back(cut);
  cuts.push_back(bytes.size() - 1);
  const testing::Model before_last = model_after(seed, 19);
  std::mt19937_64 rng(seed);
  for (uint64_t cut : cuts) {
    SCOPED_TRACE(::testing::Message() << "cut at byte " << cut << " of " << bytes.size());
    ScratchDir crash;
    testing::write_file(crash.path() + seg_name, bytes.substr(0, cut));
    ModelSink sink;
    auto dir = DataDir::open(crash.path(), options(FsyncPolicy::kNever), sink);
    ASSERT_TRUE(dir.ok()) << dir.status();
    EXPECT_EQ((*dir)->recovery().torn_bytes_cut, cut - start);
    ASSERT_EQ(sink.state, before_last);
    EXPECT_EQ(testing::read_file(crash.path() + seg_name).size(), start) << "the torn bytes stay";
    if (rng() % 20 == 0 || cut == start + 1) {
      // Later appends follow the cut cleanly.
      append_batches(**dir, seed, 20, 21);
      dir->reset();
      expect_recovers_to(crash.path(), seed, 21, options(FsyncPolicy::kNever));
    }
  }
}

TEST(Log, GarbageAfterTheLastRecordIsCut) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int kind = 0; kind < 2; ++kind) {
    ScratchDir tmp;
    write_log(tmp.path(), seed, 10);
    const std::string seg = segment(tmp.path(), -1);
    std::string tail(4096, '\0');  // a crash after the size grew, before the data landed
    if (kind == 1) {
      for (char& c : tail) c = static_cast<char>(rng());
    }
    testing::write_file(seg, testing::read_file(seg) + tail);
    expect_recovers_to(tmp.path(), seed, 10, options(FsyncPolicy::kNever));
  }
}

// A bit flipped anywhere in the log: the last record of the newest segment
// is indistinguishable from a torn write and is cut; anywhere else strict
// recovery refuses, naming the file and the damaged record's offset, and
// skip-corrupt recovers exactly the batches before it, sets the rest aside,
// and the directory then opens strictly and takes new batches.
TEST(Log, BitFlipsAreCutRefusedOrSkipped) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir pristine;
  write_log(pristine.path(), seed, 60, 8 << 10);
  const std::vector<std::string> names = list_names(pristine.path());
  std::vector<std::string> segs;
  for (const std::string& n : names) {
    if (n.rfind("log-", 0) == 0) segs.push_back(n);
  }
  ASSERT_GT(segs.size(), 2u);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t si = rng() % segs.size();
    const std::string bytes = testing::read_file(pristine.path() + "/" + segs[si]);
    const uint64_t at = rng() % bytes.size();
    const std::vector<uint64_t> offsets = testing::record_offsets(bytes);
    const size_t ri = std::upper_bound(offsets.begin(), offsets.end(), at) - offsets.begin() - 1;
    const uint64_t first = std::stoull(segs[si].substr(4));
    const uint64_t damaged_seq = first + ri;
    const bool torn = si + 1 == segs.size() && ri + 1 == offsets.size();
    SCOPED_TRACE(::testing::Message() << "bit flip in " << segs[si] << " at byte " << at << " (batch " << damaged_seq
                                      << ")");
    std::string flipped = bytes;
    flipped[at] ^= static_cast<char>(1 << (rng() % 8));

    ScratchDir strict;
    testing::copy_dir(pristine.path(), strict.path());
    testing::write_file(strict.path() + "/" + segs[si], flipped);
    ModelSink sink;
    auto dir = DataDir::open(strict.path(), options(FsyncPolicy::kNever), sink);
    if (torn) {
      ASSERT_TRUE(dir.ok()) << dir.status();
      EXPECT_EQ(sink.state, model_after(seed, 59));
      continue;
    }
    ASSERT_EQ(dir.status().code(), absl::StatusCode::kDataLoss) << dir.status();
    const std::string msg(dir.status().message());
    EXPECT_NE(msg.find(segs[si] + " at offset " + std::to_string(offsets[ri]) + ":"), std::string::npos) << msg;

    ScratchDir skip;
    testing::copy_dir(pristine.path(), skip.path());
    testing::write_file(skip.path() + "/" + segs[si], flipped);
    expect_recovers_to(skip.path(), seed, damaged_seq - 1,
                       options(FsyncPolicy::kNever, 8 << 10, RecoverMode::kSkipCorrupt));
    bool set_aside = false;
    for (const std::string& n : list_names(skip.path())) set_aside |= n.find(".corrupt") != std::string::npos;
    EXPECT_TRUE(set_aside);
    // What skip-corrupt left opens strictly, and the log goes on after it.
    {
      ModelSink again;
      auto reopened = DataDir::open(skip.path(), options(FsyncPolicy::kNever, 8 << 10), again);
      ASSERT_TRUE(reopened.ok()) << reopened.status();
      append_batches(**reopened, seed, damaged_seq, damaged_seq + 2);
    }
    expect_recovers_to(skip.path(), seed, damaged_seq + 2, options(FsyncPolicy::kNever));
  }
}

TEST(Log, AMissingSegmentIsAGap) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  for (int which : {0, 1}) {  // the first segment, a middle one
    ScratchDir tmp;
    write_log(tmp.path(), seed, 60, 8 << 10);
    const std::string gone = segment(tmp.path(), which);
    const std::string after = segment(tmp.path(), which + 1);
    ASSERT_TRUE(remove_file(gone).ok());
    ModelSink sink;
    auto dir = DataDir::open(tmp.path(), options(FsyncPolicy::kNever), sink);
    ASSERT_EQ(dir.status().code(), absl::StatusCode::kDataLoss);
    const std::string msg(dir.status().message());
    EXPECT_NE(msg.find(after + " at offset 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("are missing"), std::string::npos) << msg;
    const uint64_t first_gone = std::stoull(gone.substr(gone.rfind("log-") + 4));
    expect_recovers_to(tmp.path(), seed, first_gone - 1,
                       options(FsyncPolicy::kNever, 8 << 10, RecoverMode::kSkipCorrupt));
  }
}

TEST(Log, ASequenceNumberOutOfTurnIsRefused) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  // log-1 holding batches 1, 2, 3 and then 5.
  std::string bytes;
  uint64_t offset_of_5 = 0;
  for (uint64_t seq : {1, 2, 3, 5}) {
    WriteBatch b = testing::random_batch(seed, seq, nullptr);
    b.set_sequence(seq);
    const auto h = record_header(b.payload());
    if (seq == 5) offset_of_5 = bytes.size();
    bytes += std::string(h.data(), h.size()) + std::string(b.payload());
  }
  testing::write_file(tmp.path() + "/log-00000000000000000001.gphkv", bytes);
  ModelSink sink;
  auto dir = DataDir::open(tmp.path(), options(FsyncPolicy::kNever), sink);
  ASSERT_EQ(dir.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(
      dir.status().message().find("at offset " + std::to_string(offset_of_5) + ": batch 5 where batch 4 was expected"),
      std::string::npos)
      << dir.status();
  expect_recovers_to(tmp.path(), seed, 3, options(FsyncPolicy::kNever, 64 << 20, RecoverMode::kSkipCorrupt));
}

// everysec: what a crash of the machine can lose is what was not synced yet,
// and it loses it from the end: the recovered state is the one after some
// batch at or past the last synced one. A crash that kept later bytes but
// lost earlier ones (a hole) is refused, never replayed around.
TEST(Log, EverysecLosesASuffixNeverAHole) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  uint64_t durable = 0, synced_size = 0;
  {
    ModelSink sink;
    auto dir = DataDir::open(tmp.path(), options(FsyncPolicy::kEverySec), sink);
    ASSERT_TRUE(dir.ok()) << dir.status();
    append_batches(**dir, seed, 1, 30);
    // The background thread syncs within about a second.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((*dir)->state().log.durable_sequence < 30 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    durable = (*dir)->state().log.durable_sequence;
    ASSERT_EQ(durable, 30u) << "the background sync did not run within 5 s";
    synced_size = testing::read_file(segment(tmp.path(), -1)).size();
    append_batches(**dir, seed, 31, 60);
  }
  const std::string seg = segment(tmp.path(), -1);
  const std::string bytes = testing::read_file(seg);
  for (int trial = 0; trial < 30; ++trial) {
    const uint64_t keep = synced_size + rng() % (bytes.size() - synced_size + 1);
    ScratchDir crash;
    testing::copy_dir(tmp.path(), crash.path());
    testing::write_file(crash.path() + seg.substr(tmp.path().size()), bytes.substr(0, keep));
    ModelSink sink;
    auto dir = DataDir::open(crash.path(), options(FsyncPolicy::kNever), sink);
    ASSERT_TRUE(dir.ok()) << dir.status();
    const uint64_t last = (*dir)->recovery().last_sequence;
    EXPECT_GE(last, durable);
    EXPECT_EQ(sink.state, model_after(seed, last)) << "kept " << keep << " bytes";
  }
  // A hole: a page of unsynced bytes lost, later ones kept.
  std::string holed = bytes;
  const uint64_t page = synced_size + 16;
  ASSERT_LT(page + 4096 + 1024, holed.size());
  std::fill(holed.begin() + static_cast<ptrdiff_t>(page), holed.begin() + static_cast<ptrdiff_t>(page + 4096), '\0');
  testing::write_file(seg, holed);
  ModelSink sink;
  auto dir = DataDir::open(tmp.path(), options(FsyncPolicy::kNever), sink);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kDataLoss) << dir.status();
}

// The newest segment's first batch: the segments before it are closed.
uint64_t newest_segment_start(const std::string& dir) {
  const std::string name = segment(dir, -1).substr(dir.size() + 1);
  return std::stoull(name.substr(4, 20));
}

// Rotation with the early writeback on (a writeback every 8 KiB of 64 KiB
// segments) and no background sync coming round: after every append the
// closed segments are synced (durable_sequence reaches the batch before the
// newest segment: what is synced is a prefix), always syncs every batch,
// and a machine crash that keeps any prefix of the newest segment's bytes
// (none of them synced) recovers a state after a batch at or past the
// durable one.
TEST(Log, RotationSyncsTheClosedSegmentsWithEarlyWriteback) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (FsyncPolicy p : {FsyncPolicy::kEverySec, FsyncPolicy::kNever, FsyncPolicy::kAlways}) {
    SCOPED_TRACE(fsync_policy_name(p));
    ScratchDir tmp;
    DataDirOptions o = options(p, 64 << 10);
    o.log.writeback_bytes = 8 << 10;
    o.log.sync_interval_seconds = 3600;
    o.log.max_sync_lag_seconds = 3600;
    uint64_t durable = 0;
    {
      ModelSink sink;
      auto dir = DataDir::open(tmp.path(), o, sink);
      ASSERT_TRUE(dir.ok()) << dir.status();
      for (uint64_t seq = 1; seq <= 300; ++seq) {
        append_batches(**dir, seed, seq, seq);
        const LogWriterState st = (*dir)->state().log;
        if (p == FsyncPolicy::kAlways) {
          ASSERT_EQ(st.durable_sequence, seq);
        } else {
          ASSERT_GE(st.durable_sequence, newest_segment_start(tmp.path()) - 1) << "after batch " << seq;
        }
      }
      const LogWriterState st = (*dir)->state().log;
      EXPECT_GT(st.segments, 5u);
      if (p == FsyncPolicy::kAlways) {
        EXPECT_EQ(st.writebacks, 0u);
      } else {
        // The background thread is woken, not waited for: give it a moment.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while ((*dir)->state().log.writebacks == 0 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_GT((*dir)->state().log.writebacks, 0u);
      }
      durable = st.durable_sequence;
      // Crash images taken while the writer is open (its destructor syncs).
      const std::string seg = segment(tmp.path(), -1);
      const std::string bytes = testing::read_file(seg);
      for (int trial = 0; trial < 10; ++trial) {
        const uint64_t keep = p == FsyncPolicy::kAlways ? bytes.size() : rng() % (bytes.size() + 1);
        ScratchDir crash;
        testing::copy_dir(tmp.path(), crash.path());
        testing::write_file(crash.path() + seg.substr(tmp.path().size()), bytes.substr(0, keep));
        ModelSink recovered;
        DataDirOptions again = options(FsyncPolicy::kNever);
        auto reopened = DataDir::open(crash.path(), again, recovered);
        ASSERT_TRUE(reopened.ok()) << reopened.status();
        const uint64_t last = (*reopened)->recovery().last_sequence;
        EXPECT_GE(last, durable) << "kept " << keep << " of " << bytes.size() << " bytes";
        EXPECT_EQ(recovered.state, model_after(seed, last)) << "kept " << keep << " bytes";
      }
    }
    expect_recovers_to(tmp.path(), seed, 300, options(FsyncPolicy::kNever));
  }
}

// everysec with a disk slower than the writes: once batches have waited
// past max_sync_lag_seconds for the background sync, append syncs itself.
TEST(Log, EverysecSyncsInlineWhenTheBackgroundSyncFallsBehind) {
  const uint64_t seed = testing::test_seed();
  ScratchDir tmp;
  DataDirOptions o = options(FsyncPolicy::kEverySec);
  o.log.sync_interval_seconds = 3600;  // the background thread never comes round
  o.log.max_sync_lag_seconds = 0.05;
  ModelSink sink;
  auto dir = DataDir::open(tmp.path(), o, sink);
  ASSERT_TRUE(dir.ok()) << dir.status();
  append_batches(**dir, seed, 1, 1);
  EXPECT_EQ((*dir)->state().log.durable_sequence, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  append_batches(**dir, seed, 2, 2);
  const LogWriterState st = (*dir)->state().log;
  EXPECT_EQ(st.syncs_fell_behind, 1u);
  EXPECT_EQ(st.durable_sequence, 2u);
}

}  // namespace
}  // namespace gphkv::server::durability
