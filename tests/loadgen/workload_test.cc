#include "loadgen/workload.h"

#include <cmath>
#include <unordered_map>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gphkv::loadgen
