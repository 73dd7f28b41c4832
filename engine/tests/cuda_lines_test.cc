// The CUDA layout's lines (engine/cuda/device_table.cuh, "Lines"): after
// inserts that overflow into Refinement, erases, more inserts, and images
// from the CPU backend (which knows no lines), every key outside its home line
// has that line's spill bit set, and every key is found. Skips, with the
// reason, where there is no device.
#include <cstdlib>
#include <random>
#include <unordered_map>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"

#if defined(GPHKV_HAVE_CUDA)
#include "engine/cuda/cuda_table.h"
#include "engine/tests/cuda_line_checks.h"
#endif

namespace gphkv::engine::testing {
namespace {

#if defined(GPHKV_HAVE_CUDA)
using Model = std::unordered_map<uint64_t, uint64_t>;

class CudaLinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device here; run the GPU tests on the device machine (docs/gpu.md)";
    }
  }
};

// Two lines a bucket, small enough that Refinement runs often near the top.
TableOptions two_lines(uint32_t seed) {
  TableOptions o;
  o.slots_per_bucket = 16;
  o.cells_per_bucket = 4;
  o.num_buckets = 2048;  // 32768 slots
  o.seed = seed;
  return o;
}

// Inserts fresh random keys in batches until `target` keys are stored or a
// key finds no room; returns whether one found none.
bool fill(Table& t, std::mt19937_64& rng, uint64_t target, Model* model) {
  std::vector<uint64_t> keys, values;
  std::vector<UpsertOutcome> out;
  while (model->size() < target) {
    keys.resize(std::min<uint64_t>(2048, target - model->size()));
    values.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      keys[i] = rng();
      values[i] = rng();
    }
    out.assign(keys.size(), UpsertOutcome::kNoRoom);
    EXPECT_TRUE(t.insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
    bool refused = false;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (out[i] == UpsertOutcome::kNoRoom) {
        refused = true;
      } else {
        (*model)[keys[i]] = values[i];
      }
    }
    if (refused) return true;
  }
  return false;
}

void expect_lines_hold(const cuda::CudaTable& t, const Model& model, double max_outside) {
  LineCensus census;
  EXPECT_EQ(check_lines(t, &census), "");
  EXPECT_EQ(census.keys, model.size() - model.count(gph::kEmptyKey));
  EXPECT_LE(static_cast<double>(census.outside), max_outside * static_cast<double>(census.keys))
      << census.outside << " of " << census.keys << " keys outside their home line, " << census.spill_bits
      << " spill bits set over " << census.lines << " lines";
}

TEST_F(CudaLinesTest, InsertsRefinementAndErasesKeepTheRule) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  auto made = cuda::CudaTable::create(two_lines(static_cast<uint32_t>(rng())), 0);
  ASSERT_TRUE(made.ok()) << made.status();
  cuda::CudaTable& t = **made;
  const uint64_t slots = t.geometry().num_slots();
  Model model;
  fill(t, rng, slots * 80 / 100, &model);
  // Keys placed blind to lines would sit outside theirs half the time.
  expect_lines_hold(t, model, 0.2);
  EXPECT_EQ(check_lookups(t, model), "");
  EXPECT_GT(t.refinement_stats().moves, 0u) << "the fill never reached Extended Move";

  // Erase a third, then fill to the first refusal: Direct Insert into lines
  // with room again, Extended Moves out of and into spilled buckets.
  std::vector<uint64_t> gone;
  for (const auto& [k, v] : model) {
    if (rng() % 3 == 0) gone.push_back(k);
  }
  std::vector<uint8_t> erased(gone.size());
  ASSERT_TRUE(t.erase(gone, absl::MakeSpan(erased)).ok());
  for (uint64_t k : gone) model.erase(k);
  expect_lines_hold(t, model, 0.2);
  fill(t, rng, slots, &model);
  EXPECT_GE(model.size(), slots * 80 / 100);
  expect_lines_hold(t, model, 0.25);
  EXPECT_EQ(check_lookups(t, model), "");
  EXPECT_EQ(check_contents(t, model), "");

  // Absent keys stay absent, whatever their line's spill bit says.
  std::vector<uint64_t> absent;
  while (absent.size() < 20000) {
    const uint64_t k = rng();
    if (model.count(k) == 0) absent.push_back(k);
  }
  std::vector<uint64_t> values(absent.size());
  std::vector<uint8_t> found(absent.size(), 1);
  ASSERT_TRUE(t.find(absent, absl::MakeSpan(values), absl::MakeSpan(found)).ok());
  for (size_t i = 0; i < absent.size(); ++i) ASSERT_EQ(found[i], 0) << "absent key " << absent[i];
}

TEST_F(CudaLinesTest, ImagesWithoutLinesAreMarkedOnLoad) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const TableOptions o = two_lines(static_cast<uint32_t>(rng()));
  auto cpu = make_cpu_table(o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  Model model;
  fill(**cpu, rng, (*cpu)->geometry().num_slots() * 80 / 100, &model);
  auto img = (*cpu)->image();
  ASSERT_TRUE(img.ok()) << img.status();

  auto made = cuda::CudaTable::create(o, 0);
  ASSERT_TRUE(made.ok()) << made.status();
  cuda::CudaTable& t = **made;
  ASSERT_TRUE(t.load_image(*img).ok());
  // The CPU backend fills a bucket from its first slot: many keys sit outside
  // their home line, and only the spill bits make them findable.
  LineCensus census;
  EXPECT_EQ(check_lines(t, &census), "");
  EXPECT_GT(census.outside, census.keys / 5) << "the image did not exercise the marking";
  EXPECT_EQ(check_lookups(t, model), "");

  // The GPU's own image, loaded back, keeps its placement and its bits.
  auto gpu_img = t.image();
  ASSERT_TRUE(gpu_img.ok()) << gpu_img.status();
  auto again = cuda::CudaTable::create(o, 0);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->load_image(*gpu_img).ok());
  EXPECT_EQ(check_lines(**again, &census), "");
  EXPECT_EQ(check_lookups(**again, model), "");
}
#endif

}  // namespace
}  // namespace gphkv::engine::testing
