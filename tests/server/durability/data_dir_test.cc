// DataDir end to end in one process: snapshots taken while batches keep
// coming (a fuzzy export, as the executor will feed it) plus the log
// replay equal the model at every restart; crashes at each step of the
// snapshot protocol keep the previous snapshot; a corrupt snapshot falls
// back to an older one only with a complete log after it, else is refused
// or, under skip-corrupt, skipped block by block; one server per directory.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/durability/data_dir.h"
#include "server/durability/file_names.h"
#include "server/durability/snapshot_feed.h"
#include "server/durability/snapshot_format.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

using testing::append_batches;
using testing::list_names;
using testing::Model;
using testing::model_after;
using testing::ModelSink;
using testing::ModelSource;
using testing::ScratchDir;

DataDirOptions small_files(RecoverMode recover = RecoverMode::kStrict) {
  DataDirOptions o;
  o.log.fsync = FsyncPolicy::kNever;
  o.log.segment_bytes = 32 << 10;
  o.snapshot_block_bytes = 2 << 10;
  o.recover = recover;
  return o;
}

// A synchronous snapshot of the stream's state after `last`.
void take_snapshot(DataDir& dir, uint64_t seed, uint64_t last) {
  const Model m = model_after(seed, last);
  ModelSource source(&m, 64);
  ASSERT_TRUE(dir.snapshot(source).ok());
  ASSERT_EQ(dir.state().snapshot_sequence, last);
}

std::unique_ptr<DataDir> open_ok(const std::string& path, const DataDirOptions& o, ModelSink* sink) {
  auto dir = DataDir::open(path, o, *sink);
  EXPECT_TRUE(dir.ok()) << dir.status();
  return dir.ok() ? std::move(*dir) : nullptr;
}

std::string snapshot_path(const std::string& dir, uint64_t seq) { return dir + "/" + snapshot_name(seq); }

void flip_bit_in_first_block(const std::string& path) {
  std::string bytes = testing::read_file(path);
  bytes[kSnapshotBlocksOffset + 40] ^= 0x10;
  testing::write_file(path, bytes);
}

TEST(DataDir, OneServerPerDirectory) {
  ScratchDir tmp;
  ModelSink a, b;
  auto first = open_ok(tmp.path(), small_files(), &a);
  ASSERT_NE(first, nullptr);
  auto second = DataDir::open(tmp.path(), small_files(), b);
  ASSERT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by another gphkv-server (pid " + std::to_string(::getpid())),
            std::string::npos)
      << second.status();
  first.reset();
  EXPECT_NE(open_ok(tmp.path(), small_files(), &b), nullptr);
}

// The owner thread plays the executor: each batch goes to the model and the
// log; now and then a snapshot starts, and between batches the owner pushes
// the next chunk of the live model (by key, from where the last ended) into
// the feed while the snapshot thread writes. Restarts in between.
TEST(DataDir, FuzzySnapshotsPlusLogEqualTheModel) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  Model model;
  uint64_t seq = 0;
  uint64_t snapshots = 0;
  for (int life = 0; life < 5; ++life) {
    SCOPED_TRACE(::testing::Message() << "life " << life << " after batch " << seq);
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ASSERT_NE(dir, nullptr);
    ASSERT_EQ(dir->recovery().last_sequence, seq);
    ASSERT_EQ(sink.state, model);
    std::shared_ptr<SnapshotFeed> feed;
    std::optional<uint64_t> cursor;  // the next key to export; none: done
    auto export_chunk = [&] {
      PairChunk c;
      for (auto it = model.lower_bound(*cursor); it != model.end() && c.keys.size() < 16; ++it) {
        c.keys.push_back(it->first);
        c.lengths.push_back(static_cast<uint32_t>(it->second.size()));
        c.bytes += it->second;
      }
      if (c.keys.empty() || c.keys.back() == UINT64_MAX) {
        cursor.reset();
      } else {
        cursor = c.keys.back() + 1;
      }
      feed->push(std::move(c));
      if (!cursor) {
        feed->finish();
        feed.reset();
      }
    };
    const int batches = 100 + static_cast<int>(rng() % 300);
    for (int i = 0; i < batches; ++i) {
      WriteBatch b = testing::random_batch(seed, ++seq, &model);
      ASSERT_TRUE(dir->append(b).ok());
      if (!feed && !dir->snapshot_running() && rng() % 50 == 0) {
        feed = std::make_shared<SnapshotFeed>(8 << 10);
        ASSERT_TRUE(dir->start_snapshot(feed).ok());
        cursor = 0;
        ++snapshots;
      }
      if (feed && feed->wants_more()) export_chunk();
    }
    while (feed) export_chunk();
    ASSERT_TRUE(dir->wait_snapshot().ok());
    // What the newest snapshot covers is gone: older snapshots, and the
    // segments all of whose batches it holds.
    const DataDirState st = dir->state();
    for (const std::string& name : list_names(tmp.path())) {
      if (name.rfind("snapshot-", 0) == 0) EXPECT_EQ(name, snapshot_name(st.snapshot_sequence));
      if (name.rfind("log-", 0) == 0) EXPECT_GT(std::stoull(name.substr(4)), st.snapshot_sequence) << name;
    }
  }
  EXPECT_GT(snapshots, 0u) << "no snapshot was taken: raise the rate";
}

// A crash at each step of writing a snapshot leaves the previous one in use:
// a partial .tmp, a whole .tmp not yet renamed, a failed export.
TEST(DataDir, ACrashDuringASnapshotKeepsThePreviousOne) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    append_batches(*dir, seed, 1, 50);
    take_snapshot(*dir, seed, 50);
    append_batches(*dir, seed, 51, 80);
  }
  const std::string bytes = testing::read_file(snapshot_path(tmp.path(), 50));
  // The snapshot of batch 80, cut short and whole, as a crash left it.
  for (uint64_t keep : {uint64_t{0}, uint64_t{100}, bytes.size() / 2, bytes.size()}) {
    SCOPED_TRACE(::testing::Message() << "a .tmp of " << keep << " bytes");
    testing::write_file(snapshot_path(tmp.path(), 80) + ".tmp", bytes.substr(0, keep));
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ASSERT_NE(dir, nullptr);
    EXPECT_EQ(dir->recovery().snapshot_sequence, 50u);
    EXPECT_EQ(sink.state, model_after(seed, 80));
    for (const std::string& name : list_names(tmp.path())) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  }
  // The export fails part way: an error, the previous snapshot untouched.
  {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ModelSource failing(&sink.state, 8);
    failing.fail_at_chunk = 3;
    EXPECT_EQ(dir->snapshot(failing).code(), absl::StatusCode::kAborted);
    EXPECT_EQ(dir->state().snapshot_sequence, 50u);
    EXPECT_FALSE(dir->state().last_snapshot_error.empty());
    EXPECT_EQ(testing::read_file(snapshot_path(tmp.path(), 50)), bytes);
  }
  ModelSink sink;
  auto dir = open_ok(tmp.path(), small_files(), &sink);
  EXPECT_EQ(sink.state, model_after(seed, 80));
}

// Snapshots at batches 30 and 60 of the stream, then batches 61..`last`;
// then the files the second snapshot removed (the first snapshot and the
// segments of batches 31..60) put back, as a crash between its rename and
// its cleanup leaves the directory.
void two_snapshots_then_restore_the_first(const std::string& path, uint64_t seed, uint64_t last) {
  ScratchDir saved;
  {
    ModelSink sink;
    auto dir = open_ok(path, small_files(), &sink);
    append_batches(*dir, seed, 1, 30);
    take_snapshot(*dir, seed, 30);
    append_batches(*dir, seed, 31, 60);
    ASSERT_TRUE(dir->sync().ok());
    testing::copy_dir(path, saved.path());
    take_snapshot(*dir, seed, 60);
    append_batches(*dir, seed, 61, last);
  }
  for (const std::string& name : list_names(saved.path())) {
    if (!std::filesystem::exists(path + "/" + name)) {
      std::filesystem::copy_file(saved.path() + "/" + name, path + "/" + name);
    }
  }
  ASSERT_TRUE(std::filesystem::exists(snapshot_path(path, 30)));
}

// Byte keys through the log and two snapshots (issue 26): each start
// recovers both kinds of key as the stream left them, from the log alone,
// then from a snapshot and the log after it.
TEST(DataDir, ByteKeysSurviveTheLogAndSnapshots) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  auto expect_state_after = [&](uint64_t last) {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ASSERT_NE(dir, nullptr);
    ASSERT_EQ(dir->recovery().last_sequence, last);
    testing::ByteModel byte_model;
    EXPECT_EQ(sink.state, model_after(seed, last, testing::Keys::kBoth, &byte_model));
    EXPECT_EQ(sink.byte_state, byte_model);
    EXPECT_GT(byte_model.size(), 10u);
  };
  auto snapshot_at = [&](DataDir& dir, uint64_t last) {
    testing::ByteModel byte_model;
    const Model m = model_after(seed, last, testing::Keys::kBoth, &byte_model);
    ModelSource source(&m, 64, &byte_model);
    ASSERT_TRUE(dir.snapshot(source).ok());
  };
  {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ASSERT_NE(dir, nullptr);
    append_batches(*dir, seed, 1, 40, testing::Keys::kBoth);
  }
  expect_state_after(40);
  {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    ASSERT_NE(dir, nullptr);
    snapshot_at(*dir, 40);
    append_batches(*dir, seed, 41, 70, testing::Keys::kBoth);
    snapshot_at(*dir, 70);
    append_batches(*dir, seed, 71, 90, testing::Keys::kBoth);
  }
  expect_state_after(90);
}

// A crash after the new snapshot was renamed in but before what it covers
// was removed: the new one is used and the rest removed at start.
TEST(DataDir, ACrashBeforeCleanupIsFinishedAtStart) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  two_snapshots_then_restore_the_first(tmp.path(), seed, 60);
  ModelSink sink;
  auto dir = open_ok(tmp.path(), small_files(), &sink);
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->recovery().snapshot_sequence, 60u);
  EXPECT_EQ(sink.state, model_after(seed, 60));
  EXPECT_EQ(list_names(tmp.path()), (std::vector<std::string>{"LOCK", snapshot_name(60)}));
}

// The newest snapshot is damaged but an older one survived with every log
// segment after it: recovery loses nothing, so it starts, says so, and sets
// the damaged snapshot aside.
TEST(DataDir, ADamagedSnapshotFallsBackToAnOlderOneWithACompleteLog) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  two_snapshots_then_restore_the_first(tmp.path(), seed, 70);
  flip_bit_in_first_block(snapshot_path(tmp.path(), 60));
  ModelSink sink;
  auto dir = open_ok(tmp.path(), small_files(), &sink);
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->recovery().snapshot_sequence, 30u);
  EXPECT_EQ(sink.state, model_after(seed, 70));
  ASSERT_EQ(dir->recovery().warnings.size(), 1u);
  EXPECT_NE(dir->recovery().warnings[0].find(snapshot_path(tmp.path(), 60) + " at offset"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(snapshot_path(tmp.path(), 60) + ".corrupt"));
}

// The only snapshot is damaged: strict refuses naming it; skip-corrupt
// starts with its intact blocks plus the log, asks for a snapshot, and one
// taken then makes the directory open strictly again.
TEST(DataDir, ADamagedOnlySnapshotIsRefusedOrSkipped) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  {
    ModelSink sink;
    auto dir = open_ok(tmp.path(), small_files(), &sink);
    append_batches(*dir, seed, 1, 40);
    take_snapshot(*dir, seed, 40);
    append_batches(*dir, seed, 41, 60);
  }
  const std::string snap = snapshot_path(tmp.path(), 40);
  flip_bit_in_first_block(snap);
  ModelSink refused;
  auto strict = DataDir::open(tmp.path(), small_files(), refused);
  ASSERT_EQ(strict.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(strict.status().message().find("snapshot " + snap + " at offset " + std::to_string(kSnapshotBlocksOffset)),
            std::string::npos)
      << strict.status();
  EXPECT_NE(strict.status().message().find("--recover=skip-corrupt"), std::string::npos);

  ModelSink sink;
  auto dir = open_ok(tmp.path(), small_files(RecoverMode::kSkipCorrupt), &sink);
  ASSERT_NE(dir, nullptr);
  EXPECT_FALSE(dir->recovery().dropped.empty());
  // The snapshot holds model_after(40) in key order, so the damaged first
  // block held its smallest keys; those the log did not write again after
  // 40 are gone, and every other key is as the log left it. (Whether any is
  // gone depends on the seed: batches 41..60 may rewrite all of them.)
  Model expected = model_after(seed, 40);
  ASSERT_LT(dir->recovery().snapshot_pairs, expected.size()) << "the damaged block's pairs should be dropped";
  const uint64_t dropped = expected.size() - dir->recovery().snapshot_pairs;
  for (uint64_t i = 0; i < dropped; ++i) expected.erase(expected.begin());
  for (uint64_t s = 41; s <= 60; ++s) testing::random_batch(seed, s, &expected);
  EXPECT_EQ(sink.state, expected);
  EXPECT_TRUE(dir->snapshot_due());
  ModelSource source(&sink.state, 64);
  ASSERT_TRUE(dir->snapshot(source).ok());
  EXPECT_FALSE(dir->snapshot_due());
  dir.reset();
  ModelSink again;
  auto reopened = open_ok(tmp.path(), small_files(), &again);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(again.state, sink.state);
}

TEST(DataDir, SnapshotDueByTimeAndByLogBytes) {
  const uint64_t seed = testing::test_seed();
  ScratchDir a, b;
  DataDirOptions by_time = small_files();
  by_time.snapshot_interval_seconds = 0.2;
  by_time.snapshot_log_bytes = 0;
  ModelSink sink;
  auto dir = open_ok(a.path(), by_time, &sink);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_FALSE(dir->snapshot_due()) << "nothing written: nothing to save";
  append_batches(*dir, seed, 1, 1);
  EXPECT_TRUE(dir->snapshot_due());
  take_snapshot(*dir, seed, 1);
  append_batches(*dir, seed, 2, 2);
  EXPECT_FALSE(dir->snapshot_due());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_TRUE(dir->snapshot_due());

  DataDirOptions by_bytes = small_files();
  by_bytes.snapshot_interval_seconds = 0;
  by_bytes.snapshot_log_bytes = 20 << 10;
  ModelSink sink2;
  auto dir2 = open_ok(b.path(), by_bytes, &sink2);
  uint64_t seq = 0;
  while (dir2->state().log.log_bytes < (20 << 10)) {
    EXPECT_FALSE(dir2->snapshot_due());
    append_batches(*dir2, seed, seq + 1, seq + 1);
    ++seq;
  }
  EXPECT_TRUE(dir2->snapshot_due());
}

TEST(DataDir, StateReportsTheDirectory) {
  const uint64_t seed = testing::test_seed();
  ScratchDir tmp;
  ModelSink sink;
  DataDirOptions o = small_files();
  o.log.segment_bytes = 64 << 20;
  auto dir = open_ok(tmp.path(), o, &sink);
  DataDirState st = dir->state();
  EXPECT_EQ(st.dir, tmp.path());
  EXPECT_EQ(st.snapshot_age_seconds, -1);
  append_batches(*dir, seed, 1, 20);
  take_snapshot(*dir, seed, 20);
  append_batches(*dir, seed, 21, 25);
  st = dir->state();
  EXPECT_EQ(st.log.last_sequence, 25u);
  EXPECT_EQ(st.snapshot_sequence, 20u);
  EXPECT_EQ(st.snapshot_bytes, testing::read_file(snapshot_path(tmp.path(), 20)).size());
  EXPECT_GE(st.snapshot_age_seconds, 0);
  EXPECT_LT(st.snapshot_age_seconds, 60);
  EXPECT_EQ(st.snapshots_taken, 1u);
  EXPECT_EQ(st.log.segments, 1u);  // the one after the snapshot
  EXPECT_GT(st.log.log_bytes, 0u);
  EXPECT_FALSE(st.snapshot_running);
}

}  // namespace
}  // namespace gphkv::server::durability
