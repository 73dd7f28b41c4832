// Process crashes. A child process appends batches of the seed's stream
// (and takes snapshots) and reports each acknowledged sequence number
// through a pipe; the parent SIGKILLs it at a random moment -- or right as
// a snapshot is being written -- then reopens the directory and checks it
// against the model: every acknowledged batch is there, at most the one
// batch written but not yet acknowledged beyond it, and nothing after a
// hole (the state is exactly the model after the last batch recovered).
// Each round continues on the same directory.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/durability/data_dir.h"
#include "tests/server/durability/durability_test_util.h"

namespace gphkv::server::durability {
namespace {

using testing::ModelSink;
using testing::ModelSource;
using testing::ScratchDir;

// In the pipe, before a snapshot starts.
constexpr uint64_t kSnapshotMarker = UINT64_MAX;

struct ChildPlan {
  FsyncPolicy fsync = FsyncPolicy::kAlways;
  uint64_t seed = 0;
  uint64_t snapshot_every = 0;                  // batches; 0: none
  bool slow_snapshots = false;                  // a pause per chunk, so a kill lands inside one
  testing::Keys keys = testing::Keys::kUint64;  // the stream's kinds of key
};

DataDirOptions child_options(FsyncPolicy fsync) {
  DataDirOptions o;
  o.log.fsync = fsync;
  o.log.segment_bytes = 64 << 10;  // rotations too
  o.snapshot_block_bytes = 4 << 10;
  return o;
}

void send(int fd, uint64_t v) {
  if (::write(fd, &v, sizeof v) != sizeof v) ::_exit(6);
}

[[noreturn]] void run_child(const std::string& path, const ChildPlan& plan, int fd) {
  ModelSink sink;
  auto dir = DataDir::open(path, child_options(plan.fsync), sink);
  if (!dir.ok()) {
    std::fprintf(stderr, "child: %s\n", dir.status().ToString().c_str());
    ::_exit(3);
  }
  for (uint64_t seq = (*dir)->recovery().last_sequence + 1;; ++seq) {
    WriteBatch b = testing::random_batch(plan.seed, seq, &sink.state, plan.keys, &sink.byte_state);
    auto got = (*dir)->append(b);
    if (!got.ok() || *got != seq) ::_exit(4);
    send(fd, seq);
    if (plan.snapshot_every > 0 && seq % plan.snapshot_every == 0) {
      send(fd, kSnapshotMarker);
      ModelSource source(&sink.state, 16, &sink.byte_state);
      if (plan.slow_snapshots) source.before_chunk = [] { ::usleep(400); };
      if (!(*dir)->snapshot(source).ok()) ::_exit(5);
    }
  }
}

struct RoundResult {
  uint64_t last_acked = 0;
  bool killed_in_snapshot = false;  // a .tmp was left
};

// Runs the child until the kill: `after` past its first ack, or, when
// kill_in_snapshot, `after` past its `snapshot_number`-th snapshot start.
RoundResult run_round(const std::string& path, const ChildPlan& plan, std::chrono::microseconds after,
                      bool kill_in_snapshot, int snapshot_number) {
  RoundResult r;
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    run_child(path, plan, fds[1]);
  }
  ::close(fds[1]);
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  int snapshots_seen = 0;
  bool killed = false;
  for (;;) {
    if (!killed && kill_at && std::chrono::steady_clock::now() >= *kill_at) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, killed || !kill_at ? 5000 : 1);
    if (ready == 0 && (killed || !kill_at)) {
      ADD_FAILURE() << "the child went quiet for 5 s";
      ::kill(pid, SIGKILL);
      killed = true;
      continue;
    }
    if (ready == 0) continue;
    uint64_t v;
    const ssize_t n = ::read(fds[0], &v, sizeof v);
    if (n == 0) break;  // the child is gone and the pipe drained
    if (n != sizeof v) {
      ADD_FAILURE() << "a short read from the child's pipe";
      break;
    }
    if (v == kSnapshotMarker) {
      if (kill_in_snapshot && ++snapshots_seen == snapshot_number) kill_at = std::chrono::steady_clock::now() + after;
      continue;
    }
    EXPECT_EQ(v, r.last_acked == 0 ? v : r.last_acked + 1) << "acks out of order";
    r.last_acked = v;
    if (!kill_in_snapshot && !kill_at) kill_at = std::chrono::steady_clock::now() + after;
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the child ended by itself: exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  for (const std::string& name : testing::list_names(path))
    r.killed_in_snapshot |= name.find(".tmp") != std::string::npos;
  return r;
}

// Reopens the directory and checks it against the acknowledgements.
void expect_recovered(const std::string& path, const ChildPlan& plan, const RoundResult& round) {
  ModelSink sink;
  auto dir = DataDir::open(path, child_options(FsyncPolicy::kNever), sink);
  ASSERT_TRUE(dir.ok()) << dir.status();
  const uint64_t last = (*dir)->recovery().last_sequence;
  EXPECT_GE(last, round.last_acked) << "an acknowledged batch was lost";
  EXPECT_LE(last, round.last_acked + 1) << "more than the one batch in flight";
  testing::ByteModel byte_model;
  EXPECT_EQ(sink.state, testing::model_after(plan.seed, last, plan.keys, &byte_model))
      << "the state after batch " << last;
  EXPECT_EQ(sink.byte_state, byte_model) << "the byte keys after batch " << last;
}

void kill_rounds(FsyncPolicy fsync, int rounds, bool in_snapshot, testing::Keys keys = testing::Keys::kUint64) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed << " fsync=" << fsync_policy_name(fsync));
  std::mt19937_64 rng(seed);
  ScratchDir tmp;
  ChildPlan plan;
  plan.fsync = fsync;
  plan.seed = seed;
  plan.snapshot_every = in_snapshot ? 25 : 40;
  plan.slow_snapshots = in_snapshot;
  plan.keys = keys;
  int killed_in_snapshot = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto after =
        in_snapshot ? std::chrono::microseconds(rng() % 6000) : std::chrono::microseconds(20000 + rng() % 280000);
    SCOPED_TRACE(::testing::Message() << "round " << round << ", kill " << after.count() << " us after "
                                      << (in_snapshot ? "a snapshot began" : "the first ack"));
    const RoundResult r = run_round(tmp.path(), plan, after, in_snapshot, 1 + static_cast<int>(rng() % 2));
    killed_in_snapshot += r.killed_in_snapshot;
    expect_recovered(tmp.path(), plan, r);
    if (::testing::Test::HasFailure()) return;
  }
  if (in_snapshot) {
    EXPECT_GT(killed_in_snapshot, 0) << "no kill landed inside a snapshot";
    std::printf("%d of %d kills landed inside a snapshot\n", killed_in_snapshot, rounds);
  }
}

TEST(Crash, KillNineWithFsyncAlwaysLosesNoAcknowledgedBatch) { kill_rounds(FsyncPolicy::kAlways, 6, false); }

// Without a machine crash the OS keeps what was written: everysec and never
// lose nothing to a process kill either (what a machine crash may lose is
// the everysec suffix test in log_test.cc).
TEST(Crash, KillNineWithFsyncEverysecLosesNoAcknowledgedBatch) { kill_rounds(FsyncPolicy::kEverySec, 4, false); }
TEST(Crash, KillNineWithFsyncNeverLosesNoAcknowledgedBatch) { kill_rounds(FsyncPolicy::kNever, 3, false); }

TEST(Crash, KillNineDuringASnapshotKeepsThePreviousOne) { kill_rounds(FsyncPolicy::kAlways, 6, true); }

// Byte keys (issue 26) in the log and the snapshots, both kinds of kill.
TEST(Crash, KillNineWithByteKeysLosesNoAcknowledgedBatch) {
  kill_rounds(FsyncPolicy::kAlways, 4, false, testing::Keys::kBoth);
  if (::testing::Test::HasFailure()) return;
  kill_rounds(FsyncPolicy::kAlways, 4, true, testing::Keys::kBoth);
}

// A write error (here the file size limit, EFBIG, part way into a record)
// breaks the writer for good: the failed append and every one after it
// return the error; the next start cuts the partial record and recovers
// every acknowledged batch.
TEST(Crash, AWriteErrorBreaksTheLogAndTheNextStartCutsThePartialRecord) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  ScratchDir tmp;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ModelSink sink;
    auto dir = DataDir::open(tmp.path(), child_options(FsyncPolicy::kAlways), sink);
    if (!dir.ok()) ::_exit(3);
    uint64_t seq = 1;
    for (; seq <= 5; ++seq) {
      WriteBatch b = testing::random_batch(seed, seq, nullptr);
      if (!(*dir)->append(b).ok()) ::_exit(4);
    }
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{(*dir)->state().log.log_bytes + 3000, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(5);
    absl::Status first;
    for (;; ++seq) {
      WriteBatch b = testing::random_batch(seed, seq, nullptr);
      auto got = (*dir)->append(b);
      if (!got.ok()) {
        first = got.status();
        break;
      }
      send(fds[1], seq);
    }
    WriteBatch b = testing::random_batch(seed, seq, nullptr);
    const absl::Status again = (*dir)->append(b).status();
    if (again.code() != first.code() || again.message() != first.message()) ::_exit(7);
    ::_exit(0);
  }
  ::close(fds[1]);
  uint64_t last_acked = 5, v;
  while (::read(fds[0], &v, sizeof v) == sizeof v) last_acked = v;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ModelSink sink;
  auto dir = DataDir::open(tmp.path(), child_options(FsyncPolicy::kNever), sink);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ((*dir)->recovery().last_sequence, last_acked);
  EXPECT_GT((*dir)->recovery().torn_bytes_cut, 0u);
  EXPECT_EQ(sink.state, testing::model_after(seed, last_acked));
}

}  // namespace
}  // namespace gphkv::server::durability
