#include "loadgen/workload.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <gtest/gtest.h>

#include "loadgen/workload_preset.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::loadgen {
namespace {

std::shared_ptr<const Workload> Make(WorkloadOptions o = {}) {
  auto w = Workload::Create(o);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

TEST(SizeDistribution, NamedDefaultsParseAndHaveTheDocumentedMeans) {
  auto read = ParseSizeDistribution("taobench-read");
  auto write = ParseSizeDistribution("taobench-write");
  auto obj = ParseSizeDistribution("tao-object");
  auto assoc = ParseSizeDistribution("tao-association");
  ASSERT_TRUE(read.ok() && write.ok() && obj.ok() && assoc.ok());
  // docs/loadgen.md quotes these means; keep the two in step.
  EXPECT_NEAR((*read)->Mean(), 19.5, 0.5);
  EXPECT_NEAR((*write)->Mean(), 5.3, 0.2);
  EXPECT_NEAR((*assoc)->Mean(), 83, 0.5);
  EXPECT_NEAR((*obj)->Mean(), 329, 15);  // sigma/(1-k) = 329 unclamped; the clamp trims a little
  EXPECT_EQ((*read)->Max(), 500u);
  EXPECT_EQ((*obj)->Max(), 65536u);
}

TEST(SizeDistribution, SpecsParseAndBadOnesAreRefused) {
  auto fixed = ParseSizeDistribution("16");
  ASSERT_TRUE(fixed.ok());
  for (double u : {0.0, 0.3, 0.999}) EXPECT_EQ((*fixed)->Quantile(u), 16u);
  auto ranges = ParseSizeDistribution("1-4:1,100:1");
  ASSERT_TRUE(ranges.ok());
  EXPECT_EQ((*ranges)->Quantile(0.0), 1u);
  EXPECT_EQ((*ranges)->Quantile(0.49), 4u);
  EXPECT_EQ((*ranges)->Quantile(0.51), 100u);
  for (const char* bad : {"", "x", "4-1", "3:-1", "gpareto:1", "gpareto:-1:0.3", "0:0", "gpareto:10:0.1:9:3"}) {
    EXPECT_FALSE(ParseSizeDistribution(bad).ok()) << bad;
  }
}

TEST(Workload, DefaultCalibrationHitsTheTaoBenchmarkSkew) {
  auto w = Make();
  EXPECT_NEAR(w->expected_hot_share(), 0.82, 1e-6);
  EXPECT_GT(w->exponent(), 0.5);
  EXPECT_LT(w->exponent(), 1.5);
  WorkloadOptions o;
  o.zipf_exponent = 1.1;  // the knob overrides calibration
  EXPECT_DOUBLE_EQ(Make(o)->exponent(), 1.1);
}

TEST(Workload, SameSeedSameStreamOtherThreadOtherStream) {
  auto w = Make();
  OpStream a(w, 0), b(w, 0), c(w, 1);
  Op x, y, z;
  int differ = 0;
  for (int i = 0; i < 5000; ++i) {
    a.Next(&x);
    b.Next(&y);
    c.Next(&z);
    ASSERT_EQ(x.type, y.type);
    ASSERT_EQ(x.keys, y.keys);
    ASSERT_EQ(x.value_sizes, y.value_sizes);
    differ += x.keys != z.keys;
  }
  EXPECT_GT(differ, 4900);
  WorkloadOptions o;
  o.seed = 2;
  OpStream d(Make(o), 0);
  d.Next(&z);
  OpStream e(w, 0);
  e.Next(&x);
  EXPECT_NE(x.keys, z.keys);
}

TEST(Workload, MixAndBatchSizesFollowTheOptions) {
  WorkloadOptions o;
  o.write_fraction = 0.02;  // larger than the default so 200k calls measure it well
  o.delete_fraction = 0.25;
  auto w = Make(o);
  OpStream s(w, 0);
  Op op;
  const int calls = 200'000;
  int writes = 0, deletes = 0;
  double get_keys = 0, gets = 0;
  for (int i = 0; i < calls; ++i) {
    s.Next(&op);
    ASSERT_FALSE(op.keys.empty());
    if (op.type == OpType::kGet) {
      ++gets;
      get_keys += op.keys.size();
    } else {
      ++writes;
      deletes += op.type == OpType::kDelete;
    }
    if (op.type == OpType::kPut) {
      ASSERT_EQ(op.value_sizes.size(), op.keys.size());
      for (size_t k = 0; k < op.keys.size(); ++k) ASSERT_EQ(op.value_sizes[k], w->ValueSizeOf(op.keys[k]));
    }
  }
  EXPECT_NEAR(static_cast<double>(writes) / calls, 0.02, 0.002);
  EXPECT_NEAR(static_cast<double>(deletes) / writes, 0.25, 0.03);
  EXPECT_NEAR(get_keys / gets, w->read_batch().Mean(), 0.5);
}

TEST(Workload, LoadCoversEveryItemOnceInBoundedBatches) {
  WorkloadOptions o;
  o.keys = 10'000;
  auto w = Make(o);
  LoadStream load(w, 0, o.keys, 300, 16 << 10);
  Op op;
  std::unordered_map<uint64_t, int> seen;
  while (load.Next(&op)) {
    ASSERT_LE(op.keys.size(), 300u);
    uint64_t bytes = 0;
    for (size_t i = 0; i < op.keys.size(); ++i) {
      ++seen[op.keys[i]];
      bytes += op.value_sizes[i];
    }
    ASSERT_LT(bytes - op.value_sizes.back(), uint64_t{16} << 10);  // the byte cap closes a batch
  }
  EXPECT_EQ(seen.size(), o.keys);
  for (const auto& [k, n] : seen) ASSERT_EQ(n, 1);
}

// TAOBench's read transactions (workload O's read_txn_sizes, exact): the
// quantile function gives the published median, p90 and p99, and sampling
// it reproduces them and the mean, on a fresh seed.
TEST(SizeDistribution, TaoBenchReadTransactionsHaveTheStatedMoments) {
  auto txn = ParseSizeDistribution("taobench-read-txn");
  ASSERT_TRUE(txn.ok());
  EXPECT_NEAR((*txn)->Mean(), 19.18, 0.005);
  EXPECT_EQ((*txn)->Quantile(0.0), 2u);  // a transaction has 2 operations at least
  EXPECT_EQ((*txn)->Quantile(0.5), 4u);
  EXPECT_EQ((*txn)->Quantile(0.9), 49u);
  EXPECT_EQ((*txn)->Quantile(0.99), 241u);
  EXPECT_EQ((*txn)->Max(), 500u);

  const uint64_t seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  Rng rng(seed);
  std::vector<uint32_t> sizes(2'000'000);
  double sum = 0;
  for (uint32_t& n : sizes) {
    n = (*txn)->Quantile(rng.Uniform());
    sum += n;
  }
  std::sort(sizes.begin(), sizes.end());
  auto at = [&](double q) { return sizes[static_cast<size_t>(q * sizes.size())]; };
  // The standard error of the mean is 0.03 (sd 46.4); the CDF crosses 0.9
  // between 48 and 49 and 0.99 between 240 and 241 by less than sampling
  // noise, hence the ranges.
  EXPECT_NEAR(sum / sizes.size(), 19.18, 0.2);
  EXPECT_EQ(at(0.5), 4u);
  EXPECT_GE(at(0.9), 48u);
  EXPECT_LE(at(0.9), 50u);
  EXPECT_GE(at(0.99), 236u);
  EXPECT_LE(at(0.99), 246u);
  EXPECT_EQ(sizes.front(), 2u);
  EXPECT_LE(sizes.back(), 500u);
  EXPECT_GE(sizes.back(), 450u);
}

// The JSON report records a distribution by its spec: workload O's mixtures
// must come back from it unchanged (their weights print exactly).
TEST(SizeDistribution, WorkloadOMixturesRebuildFromTheirSpecs) {
  for (const char* name : {"taobench-o-read", "taobench-o-write", "taobench-read-txn", "taobench-read"}) {
    auto d = ParseSizeDistribution(name);
    ASSERT_TRUE(d.ok()) << name;
    auto again = ParseSizeDistribution((*d)->Spec());
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ((*again)->Spec(), (*d)->Spec()) << name;
    for (int i = 0; i < 10'000; ++i) {
      const double u = (i + 0.5) / 10'000;
      ASSERT_EQ((*again)->Quantile(u), (*d)->Quantile(u)) << name << " at " << u;
    }
  }
  // Workload O's reads: 8387 single keys to 242 transactions.
  auto o = ParseSizeDistribution("taobench-o-read");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ((*o)->Quantile(8387.0 / 8629 - 1e-9), 1u);
  EXPECT_GE((*o)->Quantile(8387.0 / 8629 + 1e-9), 2u);
  EXPECT_NEAR((*o)->Mean(), (8387 + 242 * 19.1814) / 8629, 1e-3);
}

TEST(WorkloadPreset, UnknownNamesAreRefusedAndDefaultIsTheDefaultOptions) {
  EXPECT_FALSE(WorkloadPreset("taobench-x").ok());
  auto d = WorkloadPreset("default");
  ASSERT_TRUE(d.ok());
  const WorkloadOptions plain;
  EXPECT_EQ(d->read_batch, plain.read_batch);
  EXPECT_EQ(d->popularity, plain.popularity);
  EXPECT_EQ(d->write_fraction, plain.write_fraction);
}

// Workload O's mix, counted over a million calls on a fresh seed: 96.97%
// single-key gets, 2.80% read transactions, 0.23% writes (no deletes),
// TAOBench's 158-byte rows, and reads split evenly between objects and
// associations.
TEST(WorkloadPreset, TaoBenchOGivesWorkloadOsMix) {
  const uint64_t seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  auto o = WorkloadPreset("taobench-o");
  ASSERT_TRUE(o.ok());
  o->seed = seed;
  auto w = Make(*o);
  EXPECT_EQ(w->shards(), 50u);
  EXPECT_EQ(w->exponent(), 0.0);
  OpStream s(w, static_cast<uint32_t>(seed % 64));
  Op op;
  const int calls = 1'000'000;
  int single_gets = 0, txn_gets = 0, writes = 0, deletes = 0;
  double txn_keys = 0, read_keys = 0, association_reads = 0;
  for (int i = 0; i < calls; ++i) {
    s.Next(&op);
    if (op.type == OpType::kGet) {
      (op.keys.size() == 1 ? single_gets : txn_gets)++;
      if (op.keys.size() > 1) txn_keys += op.keys.size();
      for (uint64_t k : op.keys) association_reads += KeySpace::KeyIsAssociation(k);
      read_keys += op.keys.size();
    } else {
      ++writes;
      deletes += op.type == OpType::kDelete;
      for (uint32_t v : op.value_sizes) ASSERT_EQ(v, 158u);
    }
  }
  const double total = 8387 + 19 + 242 + 1;
  auto near = [&](int count, double p) {
    EXPECT_NEAR(count, calls * p, 5 * std::sqrt(calls * p * (1 - p))) << "expected share " << p;
  };
  near(single_gets, 8387 / total);
  near(txn_gets, 242 / total);
  near(writes, 20 / total);
  EXPECT_NEAR(100.0 * single_gets / calls, 96.97, 0.1);
  EXPECT_NEAR(100.0 * txn_gets / calls, 2.80, 0.1);
  EXPECT_NEAR(100.0 * writes / calls, 0.23, 0.03);
  EXPECT_EQ(deletes, 0);
  EXPECT_NEAR(txn_keys / txn_gets, 19.18, 1.5);  // ~28k transactions, sd 46.4: se 0.28
  // Half the items are associations, scattered over the shards: the hottest
  // shard's 20k keys split evenly to within a percent or so.
  EXPECT_NEAR(association_reads / read_keys, 0.5, 0.03);
}

// A preset is a starting point: options set afterwards (the command line's
// flags) replace its values and keep the rest.
TEST(WorkloadPreset, ExplicitOptionsOverrideThePreset) {
  auto o = WorkloadPreset("taobench-o");
  ASSERT_TRUE(o.ok());
  o->read_batch = "100";
  o->popularity = "zipf";
  auto w = Make(*o);
  OpStream s(w, 0);
  Op op;
  for (int i = 0; i < 10'000; ++i) {
    s.Next(&op);
    if (op.type == OpType::kGet) ASSERT_EQ(op.keys.size(), 100u);
  }
  EXPECT_GT(w->exponent(), 0.5);  // calibrated Zipf again
  EXPECT_EQ(w->shards(), 0u);
  EXPECT_NEAR(w->expected_hot_share(), 0.82, 1e-6);
  EXPECT_EQ(w->options().object_value, "158");  // untouched: still the preset's
}

TEST(Workload, TheKeyRingKeepsThePopularityAndRepeatsAfterItsSize) {
  const uint64_t seed = testing::TestSeed();
  for (const uint64_t pool : {uint64_t{0}, uint64_t{1} << 18}) {
    WorkloadOptions o;
    o.seed = seed;
    o.write_fraction = 0;
    o.read_batch = "1";
    o.key_pool = pool;
    auto w = Make(o);
    // The hottest 20% of the items, by rank.
    std::unordered_map<uint64_t, bool> hot;
    const uint64_t items = w->key_space().items();
    for (uint64_t rank = 0; rank < items / 5; ++rank)
      hot[w->key_space().KeyAt(w->key_space().IndexOfRank(rank))] = true;
    OpStream s(w, 3);
    Op op;
    std::vector<uint64_t> drawn;
    const uint64_t n = pool == 0 ? 300'000 : pool + 1000;
    for (uint64_t i = 0; i < n; ++i) {
      s.Next(&op);
      drawn.push_back(op.keys[0]);
    }
    uint64_t in_hot = 0;
    for (uint64_t i = 0; i < std::min<uint64_t>(n, 250'000); ++i) in_hot += hot.count(drawn[i]);
    EXPECT_NEAR(static_cast<double>(in_hot) / std::min<uint64_t>(n, 250'000), w->expected_hot_share(), 0.01)
        << "pool " << pool << " seed " << seed;
    if (pool > 0) {
      for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(drawn[pool + i], drawn[i]) << "the ring repeats after its size";
    }
  }
}

TEST(Workload, UnknownPopularityIsRefused) {
  WorkloadOptions o;
  o.popularity = "uniform";
  EXPECT_FALSE(Workload::Create(o).ok());
  o.popularity = "shards";
  o.shard_weights = "1,2,x";
  EXPECT_FALSE(Workload::Create(o).ok());
}

}  // namespace
}  // namespace gphkv::loadgen
