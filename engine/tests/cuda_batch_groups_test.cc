// Repeats found by grouping (engine/cuda/batch_groups.h), the insert and erase
// paths' other way to a stable sort: every position must learn whether it is
// its key's first occurrence and, if so, where its key's last is; the table's
// inserts and erases must answer as with the sort. Against a host model, on
// fresh random batches and on adversarial ones: one key repeated throughout,
// 0 and the empty-slot sentinel, keys that all start at one slot of the set.
// Skips, with the reason, where there is no device.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"

#if defined(GPHKV_HAVE_CUDA)
#include <cuda_runtime.h>

#include "engine/cuda/batch_groups.h"
#include "engine/cuda/cuda_table.h"
#endif

namespace gphkv::engine::testing {
namespace {

#if defined(GPHKV_HAVE_CUDA)
using cuda::CudaTable;
using cuda::kNotLead;
using Model = std::unordered_map<uint64_t, uint64_t>;

class CudaBatchGroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device here; run the GPU tests on the device machine (docs/gpu.md)";
    }
  }
};

// Device buffers freed on every path.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// group_batch on `keys`; "" when lead and index are the model's.
std::string check_groups(const std::vector<uint64_t>& keys) {
  const uint64_t n = keys.size();
  const uint64_t capacity = cuda::batch_group_capacity(n);
  DeviceBuffer d_keys(n * 8), owner(capacity * 4), last(capacity * 4), lead(n * 4), index(n * 4);
  if (cudaMemcpy(d_keys.p, keys.data(), n * 8, cudaMemcpyHostToDevice) != cudaSuccess) return "copy in failed";
  const cuda::GroupedBatch g{owner.as<uint32_t>(), last.as<uint32_t>(), lead.as<uint32_t>(), index.as<uint32_t>(),
                             capacity};
  if (cuda::group_batch(d_keys.as<uint64_t>(), n, g, nullptr) != cudaSuccess) return "group_batch failed";
  std::vector<uint32_t> got_lead(n), got_index(n);
  if (cudaMemcpy(got_lead.data(), lead.p, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(got_index.data(), index.p, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
    return "copy out failed";
  }
  std::unordered_map<uint64_t, uint32_t> first, last_of;
  for (uint32_t p = 0; p < n; ++p) {
    first.emplace(keys[p], p);
    last_of[keys[p]] = p;
  }
  for (uint32_t p = 0; p < n; ++p) {
    const uint32_t want = first.at(keys[p]) == p ? last_of.at(keys[p]) : kNotLead;
    if (got_lead[p] != want || got_index[p] != p) {
      return "position " + std::to_string(p) + " (key " + std::to_string(keys[p]) + "): lead " +
             std::to_string(got_lead[p]) + ", want " + std::to_string(want) + "; index " + std::to_string(got_index[p]);
    }
  }
  return "";
}

TEST_F(CudaBatchGroupsTest, EveryKeyLearnsItsFirstAndLastOccurrence) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (const uint64_t n : {1ull, 2ull, 1000ull, 100000ull}) {
    for (const uint64_t distinct : {n, n / 4 + 1, uint64_t{3}}) {  // unique, repeats, nearly all repeats
      SCOPED_TRACE(::testing::Message() << n << " keys over " << distinct);
      std::vector<uint64_t> pool(distinct), keys(n);
      for (uint64_t& k : pool) k = rng();
      for (uint64_t& k : keys) k = pool[rng() % distinct];
      EXPECT_EQ(check_groups(keys), "");
    }
  }
}

TEST_F(CudaBatchGroupsTest, AdversarialBatches) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  {
    SCOPED_TRACE("one key throughout");
    EXPECT_EQ(check_groups(std::vector<uint64_t>(50000, rng())), "");
  }
  {
    SCOPED_TRACE("0 and the sentinel among others");
    std::vector<uint64_t> keys;
    for (int i = 0; i < 3000; ++i) {
      const uint64_t dice = rng() % 4;
      keys.push_back(dice == 0 ? 0 : dice == 1 ? UINT64_MAX : rng() % 64);
    }
    EXPECT_EQ(check_groups(keys), "");
  }
  {
    // 600 distinct keys (a capacity of 2048 slots) that all hash to slot 7,
    // each twice: every claim probes past the others.
    SCOPED_TRACE("keys that all start at one slot");
    const uint64_t mask = cuda::batch_group_capacity(1200) - 1;
    std::vector<uint64_t> colliding;
    for (uint64_t k = rng(); colliding.size() < 600; ++k) {
      if ((cuda::batch_group_hash(k) & mask) == 7) colliding.push_back(k);
    }
    std::vector<uint64_t> keys = colliding;
    keys.insert(keys.end(), colliding.begin(), colliding.end());
    std::shuffle(keys.begin(), keys.end(), rng);
    EXPECT_EQ(check_groups(keys), "");
  }
}

// The default's choice: grouping while the set takes at most half the L2.
TEST(CudaBatchGroups, GroupingIsChosenWhileTheSetStaysInL2) {  // host arithmetic: no device needed
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_TRUE(cuda::batch_groups_fit(1000, 50 * kMiB));
  EXPECT_TRUE(cuda::batch_groups_fit(1000000, 50 * kMiB));    // 2^21 slots, 16 MiB
  EXPECT_FALSE(cuda::batch_groups_fit(1100000, 50 * kMiB));   // 2^22 slots, 32 MiB
  EXPECT_FALSE(cuda::batch_groups_fit(10000000, 60 * kMiB));  // 2^25 slots, 256 MiB
  EXPECT_FALSE(cuda::batch_groups_fit(1000, 0));
}

// Inserts and erases through a CudaTable with the repeats found by sorting and
// by grouping: the same batches must give the model's outcomes, erase flags and
// contents either way (below the load where Refinement could refuse a key).
TEST_F(CudaBatchGroupsTest, InsertsAndErasesAnswerAsWithTheSort) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  for (const cuda::RepeatFinder finder : {cuda::RepeatFinder::kSort, cuda::RepeatFinder::kGroup}) {
    SCOPED_TRACE(finder == cuda::RepeatFinder::kSort ? "sorted" : "grouped");
    TableOptions o;
    o.num_buckets = 4096;
    o.seed = static_cast<uint32_t>(seed);
    auto made = CudaTable::create(o, 0);
    ASSERT_TRUE(made.ok()) << made.status();
    CudaTable& t = **made;
    t.set_insert_variants(cuda::InsertVariants{finder});
    ASSERT_EQ(t.groups_repeats(4000), finder == cuda::RepeatFinder::kGroup);
    std::mt19937_64 rng(seed ^ 0x9b0c);  // the same batches for both
    Model model;
    std::vector<uint64_t> pool;
    for (int i = 0; i < 20000; ++i) pool.push_back(i % 50 == 0 ? (i % 100 == 0 ? 0 : UINT64_MAX) : rng());
    for (int round = 0; round < 12; ++round) {
      std::vector<uint64_t> keys(4000), values(4000);
      for (size_t i = 0; i < keys.size(); ++i) {
        keys[i] = pool[rng() % pool.size()];
        values[i] = rng();
      }
      std::vector<UpsertOutcome> want, out(keys.size(), UpsertOutcome::kNoRoom);
      Model after = model;
      for (size_t i = 0; i < keys.size(); ++i) {
        want.push_back(after.count(keys[i]) ? UpsertOutcome::kAssigned : UpsertOutcome::kInserted);
        after[keys[i]] = values[i];
      }
      ASSERT_TRUE(t.insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
      ASSERT_EQ(out, want) << "round " << round;
      model = std::move(after);

      std::vector<uint64_t> gone(1500);
      for (uint64_t& k : gone) k = pool[rng() % pool.size()];
      std::vector<uint8_t> erased(gone.size(), 2), want_erased;
      for (const uint64_t k : gone) want_erased.push_back(model.erase(k) ? 1 : 0);
      ASSERT_TRUE(t.erase(gone, absl::MakeSpan(erased)).ok());
      ASSERT_EQ(erased, want_erased) << "round " << round;
    }
    EXPECT_EQ(check_contents(t, model), "");
    EXPECT_EQ(check_lookups(t, model), "");
  }
}
#endif

}  // namespace
}  // namespace gphkv::engine::testing
