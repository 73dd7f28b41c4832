// The read check (loadgen/read_check.h) on scripted sends and answers, the
// stamps it reads (value_pool.h), and the one-writer-per-key streams it
// relies on (workload.h).
#include "loadgen/read_check.h"

#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "loadgen/value_pool.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {
namespace {

std::shared_ptr<const Workload> MakeWorkload(const std::string& value_sizes = "tao-object") {
  WorkloadOptions o;
  o.keys = 1000;
  o.key_pool = 0;
  o.object_value = value_sizes;
  o.association_value = value_sizes == "tao-object" ? "tao-association" : value_sizes;
  auto w = Workload::Create(o);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

// One thread's checker with the ops it sends and the answers a store gives.
class Script {
 public:
  explicit Script(ReadCheckMode mode, std::shared_ptr<const Workload> w = MakeWorkload(), uint32_t threads = 1,
                  bool loaded = true, bool misses_allowed = false, bool fills_allowed = false)
      : w_(std::move(w)),
        pool_(70000),
        checker_(Options(mode, threads, loaded, misses_allowed, fills_allowed), w_.get()) {}

  uint64_t Key(size_t i) const { return w_->key_space().KeyAt(i); }

  // Sends a write of `keys`; returns its version.
  uint64_t Write(OpType type, std::vector<uint64_t> keys) {
    Op op;
    op.type = type;
    op.keys = std::move(keys);
    for (uint64_t k : op.keys) {
      if (type == OpType::kPut) op.value_sizes.push_back(w_->ValueSizeOf(k));
    }
    op.version = ++version_;
    sent_[op.version] = op;
    checker_.OnSend(op, &unused_);
    return op.version;
  }
  void Answer(uint64_t write, bool ok) {
    OpResult r;
    r.ok = ok;
    checker_.OnAnswer(sent_.at(write), r, unused_);
  }
  // Sends a get of `key`; returns its handle.
  uint64_t Get(uint64_t key) {
    Op op;
    op.type = OpType::kGet;
    op.keys = {key};
    op.version = ++version_;
    sent_[op.version] = op;
    checker_.OnSend(op, &expects_[op.version]);
    return op.version;
  }
  // Answers a get with the value written by `written` (a version; 0: the
  // load's), or with the key missing (nullopt).
  void Saw(uint64_t get, std::optional<uint64_t> written) {
    const Op& op = sent_.at(get);
    OpResult r;
    r.ok = true;
    if (written) r.seen.push_back(ValueOf(op.keys[0], *written));
    checker_.OnAnswer(op, r, expects_.at(get));
  }
  void SawSeen(uint64_t get, const ValueSeen& seen) {
    OpResult r;
    r.ok = true;
    r.seen.push_back(seen);
    checker_.OnAnswer(sent_.at(get), r, expects_.at(get));
  }
  ValueSeen ValueOf(uint64_t key, uint64_t written) const {
    std::string v;
    pool_.AppendValue(key, w_->ValueSizeOf(key), written, &v);
    return pool_.Inspect(key, v);
  }
  size_t Checked(uint64_t get) const { return expects_.at(get).size(); }
  const ReadCheckStats& stats() const { return checker_.stats(); }

 private:
  static ReadCheckOptions Options(ReadCheckMode mode, uint32_t threads, bool loaded, bool misses_allowed,
                                  bool fills_allowed) {
    ReadCheckOptions o;
    o.mode = mode;
    o.threads = threads;
    o.loaded = loaded;
    o.misses_allowed = misses_allowed;
    o.fills_allowed = fills_allowed;
    return o;
  }
  std::shared_ptr<const Workload> w_;
  ValuePool pool_;
  ReadChecker checker_;
  uint64_t version_ = 0;
  std::map<uint64_t, Op> sent_;
  std::map<uint64_t, std::vector<ReadChecker::Expect>> expects_;
  std::vector<ReadChecker::Expect> unused_;
};

TEST(ValuePool, AValueCarriesItsWritesVersionAndItsKeysBytes) {
  const ValuePool pool(1000);
  std::string v;
  pool.AppendValue(42, 100, 0x0102030405060708ULL, &v);
  ASSERT_EQ(v.size(), 100u);
  const ValueSeen seen = pool.Inspect(42, v);
  EXPECT_EQ(seen.stamp, 0x0102030405060708ULL);
  EXPECT_EQ(seen.size, 100u);
  EXPECT_TRUE(seen.intact);
  EXPECT_FALSE(pool.Inspect(43, v).intact) << "another key's bytes";
  // A 3-byte value keeps the version's low 3 bytes.
  std::string shortv;
  pool.AppendValue(42, 3, 0x0102030405060708ULL, &shortv);
  EXPECT_EQ(pool.Inspect(42, shortv).stamp, 0x060708u);
  EXPECT_TRUE(pool.Inspect(42, shortv).intact);
}

TEST(ReadCheck, IssuedOrderAGetMustSeeThePutSentBeforeIt) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(7);
  const uint64_t put = s.Write(OpType::kPut, {k});
  s.Answer(put, true);
  const uint64_t g1 = s.Get(k), g2 = s.Get(k);
  EXPECT_EQ(s.Checked(g1), 1u);
  s.Saw(g1, put);
  EXPECT_EQ(s.stats().violations(), 0u);
  s.Saw(g2, 0);  // the load's value: older than the put
  EXPECT_EQ(s.stats().stale, 1u);
  EXPECT_EQ(s.stats().keys_checked, 2u);
}

TEST(ReadCheck, ALaterWriteThanTheOneRequiredIsFine) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(3);
  const uint64_t p1 = s.Write(OpType::kPut, {k});
  const uint64_t g = s.Get(k);
  const uint64_t p2 = s.Write(OpType::kPut, {k});  // sent after the get: it may still show
  s.Answer(p1, true);
  s.Answer(p2, true);
  s.Saw(g, p2);
  EXPECT_EQ(s.stats().violations(), 0u);
  const uint64_t g2 = s.Get(k);
  s.Saw(g2, p2 + 100);  // a version this thread never sent: not this run's write
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, AGetThatOvertookItsPutCountsOnceThePutSucceeds) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(11);
  const uint64_t put = s.Write(OpType::kPut, {k});
  const uint64_t g = s.Get(k);
  s.Saw(g, 0);  // answered before the put, with the old value
  EXPECT_EQ(s.stats().violations(), 0u) << "the put may yet fail";
  s.Answer(put, true);
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, AFailedPutIsForgivenAndItsKeyNotCheckedUntilTheNextWrite) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(12);
  const uint64_t put = s.Write(OpType::kPut, {k});
  const uint64_t g = s.Get(k);
  s.Saw(g, 0);
  s.Answer(put, false);
  EXPECT_EQ(s.stats().violations(), 0u);
  const uint64_t after = s.Get(k);
  EXPECT_EQ(s.Checked(after), 0u) << "it may or may not have taken effect";
  const uint64_t again = s.Write(OpType::kPut, {k});
  s.Answer(again, true);
  const uint64_t g3 = s.Get(k);
  s.Saw(g3, put);
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, CompletedOrderRequiresOnlyWritesAnsweredBeforeTheGet) {
  Script s(ReadCheckMode::kCompleted);
  const uint64_t k = s.Key(5);
  const uint64_t put = s.Write(OpType::kPut, {k});
  const uint64_t g = s.Get(k);
  s.Answer(put, true);
  s.Saw(g, 0);  // sent before the put was answered: the old value is fine
  EXPECT_EQ(s.stats().violations(), 0u);
  const uint64_t g2 = s.Get(k);
  s.Saw(g2, 0);
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, CompletedOrderOverlappingWritesMayLandInEitherOrder) {
  Script s(ReadCheckMode::kCompleted);
  const uint64_t k = s.Key(6);
  const uint64_t p1 = s.Write(OpType::kPut, {k});
  const uint64_t p2 = s.Write(OpType::kPut, {k});
  s.Answer(p1, true);
  s.Answer(p2, true);
  const uint64_t g = s.Get(k);
  s.Saw(g, p1);  // p2 may have been applied first
  EXPECT_EQ(s.stats().violations(), 0u);
  const uint64_t g2 = s.Get(k);
  s.Saw(g2, 0);
  EXPECT_EQ(s.stats().stale, 1u);
  // Once alone in flight, a write is required exactly.
  const uint64_t p3 = s.Write(OpType::kPut, {k});
  s.Answer(p3, true);
  const uint64_t g3 = s.Get(k);
  s.Saw(g3, p2);
  EXPECT_EQ(s.stats().stale, 2u);
}

TEST(ReadCheck, AMissingKeyIsAViolationUnlessADeleteMayHaveRun) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(9);
  const uint64_t g = s.Get(k);
  s.Saw(g, std::nullopt);  // loaded, never deleted
  EXPECT_EQ(s.stats().missing, 1u);
  const uint64_t put = s.Write(OpType::kPut, {k});
  s.Answer(put, true);
  const uint64_t g2 = s.Get(k);
  const uint64_t del = s.Write(OpType::kDelete, {k});  // sent after the get, before its answer
  s.Saw(g2, std::nullopt);
  EXPECT_EQ(s.stats().missing, 1u);
  s.Answer(del, true);
  const uint64_t g3 = s.Get(k);
  s.Saw(g3, std::nullopt);
  EXPECT_EQ(s.stats().missing, 1u);
  const uint64_t g4 = s.Get(k);
  s.Saw(g4, put);  // the value the delete removed
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, ACacheMayMissButNotServeOldValues) {
  Script s(ReadCheckMode::kCompleted, MakeWorkload(), 1, true, /*misses_allowed=*/true);
  const uint64_t k = s.Key(10);
  const uint64_t put = s.Write(OpType::kPut, {k});
  s.Answer(put, true);
  const uint64_t g = s.Get(k), g2 = s.Get(k);
  s.Saw(g, std::nullopt);
  EXPECT_EQ(s.stats().violations(), 0u);
  s.Saw(g2, 0);
  EXPECT_EQ(s.stats().stale, 1u);
}

// Cache-aside (cache_aside.h): another thread's fill may store the key's
// load-phase value (version 0) over this thread's writes; any other older
// version is still stale, and a fill-stamped value of the wrong bytes corrupt.
TEST(ReadCheck, CacheAsideAcceptsAFillsValueButNotAnOlderWrite) {
  for (ReadCheckMode mode : {ReadCheckMode::kCompleted, ReadCheckMode::kIssued}) {
    SCOPED_TRACE(ReadCheckModeName(mode));
    Script s(mode, MakeWorkload(), 1, true, /*misses_allowed=*/true, /*fills_allowed=*/true);
    const uint64_t k = s.Key(10);
    const uint64_t put1 = s.Write(OpType::kPut, {k});
    s.Answer(put1, true);
    const uint64_t put2 = s.Write(OpType::kPut, {k});
    s.Answer(put2, true);
    const uint64_t filled = s.Get(k), missed = s.Get(k), older = s.Get(k), newest = s.Get(k), torn = s.Get(k);
    s.Saw(filled, 0);
    s.Saw(missed, std::nullopt);
    s.Saw(newest, put2);
    EXPECT_EQ(s.stats().violations(), 0u);
    s.Saw(older, put1);
    EXPECT_EQ(s.stats().stale, 1u);
    ValueSeen bad = s.ValueOf(k, 0);
    bad.intact = false;
    s.SawSeen(torn, bad);
    EXPECT_EQ(s.stats().corrupt, 1u);
  }
}

TEST(ReadCheck, AnotherKeysValueIsCorrupt) {
  Script s(ReadCheckMode::kIssued);
  const uint64_t k = s.Key(20);
  const uint64_t g = s.Get(k);
  ValueSeen other = s.ValueOf(s.Key(21), 0);
  other.key = k;  // found under k, but its size and bytes are key 21's
  s.SawSeen(g, other);
  EXPECT_EQ(s.stats().corrupt, 1u);
  const uint64_t g2 = s.Get(k);
  ValueSeen torn = s.ValueOf(k, 0);
  torn.intact = false;
  s.SawSeen(g2, torn);
  EXPECT_EQ(s.stats().corrupt, 2u);
}

TEST(ReadCheck, WithoutALoadOnlyKeysWrittenInTheRunAreChecked) {
  Script s(ReadCheckMode::kIssued, MakeWorkload(), 1, /*loaded=*/false);
  const uint64_t k = s.Key(30);
  EXPECT_EQ(s.Checked(s.Get(k)), 0u);
  s.Answer(s.Write(OpType::kPut, {k}), true);
  EXPECT_EQ(s.Checked(s.Get(k)), 1u);
}

TEST(ReadCheck, ShortValuesCompareTheStampsLowBytes) {
  Script s(ReadCheckMode::kIssued, MakeWorkload("2"));  // every value 2 bytes
  const uint64_t k = s.Key(40);
  for (int i = 0; i < 300; ++i) s.Answer(s.Write(OpType::kPut, {s.Key(41)}), true);  // versions past 256
  const uint64_t put = s.Write(OpType::kPut, {k});
  s.Answer(put, true);
  const uint64_t g = s.Get(k);
  s.Saw(g, put);
  EXPECT_EQ(s.stats().violations(), 0u);
  const uint64_t g2 = s.Get(k);
  s.Saw(g2, put - 1);
  EXPECT_EQ(s.stats().stale, 1u);
}

TEST(ReadCheck, OnlyTheThreadsOwnKeysAreChecked) {
  Script s(ReadCheckMode::kIssued, MakeWorkload(), /*threads=*/4);
  size_t mine = 0, others = 0;
  for (size_t i = 0; i < 200; ++i) {
    const uint64_t k = s.Key(i);
    const size_t checked = s.Checked(s.Get(k));
    (Workload::WriterOf(k, 4) == 0 ? mine : others) += 1;
    EXPECT_EQ(checked, Workload::WriterOf(k, 4) == 0 ? 1u : 0u) << k;
  }
  EXPECT_GT(mine, 20u);
  EXPECT_GT(others, 100u);
}

TEST(OpStream, EachThreadWritesOnlyItsOwnKeysAndReadsAll) {
  WorkloadOptions o;
  o.keys = 5000;
  o.key_pool = 1 << 12;
  o.write_fraction = 0.3;
  auto w = Workload::Create(o);
  ASSERT_TRUE(w.ok());
  constexpr uint32_t kThreads = 4;
  for (uint32_t t = 0; t < kThreads; ++t) {
    OpStream stream(*w, t, kThreads);
    Op op;
    uint64_t written = 0, read_of_others = 0, last = 0;
    for (int i = 0; i < 3000; ++i) {
      stream.Next(&op);
      EXPECT_GT(op.version, last);
      last = op.version;
      for (uint64_t k : op.keys) {
        if (op.type == OpType::kGet) {
          read_of_others += Workload::WriterOf(k, kThreads) != t;
        } else {
          ASSERT_EQ(Workload::WriterOf(k, kThreads), t) << OpTypeName(op.type) << " " << k;
          ++written;
        }
      }
    }
    EXPECT_GT(written, 500u);
    EXPECT_GT(read_of_others, 10000u);
  }
}

}  // namespace
}  // namespace gphkv::loadgen
