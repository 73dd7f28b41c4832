// HostValueHeap against a model (the bytes each handle must hold), on random
// data with a fresh seed (GPHKV_TEST_SEED replays one): random batches and
// releases under a limit, adversarial lengths, the fill / delete
// half / refill with another size, compaction and trim. The device heap runs
// the same checks (device_value_heap_test.cc).
#include "server/host_value_heap.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"
#include "tests/server/value_heap_checks.h"

namespace gphkv::server {
namespace {

using testing::HeapModel;
using testing::random_bytes;

std::unique_ptr<HostValueHeap> make_heap(uint32_t max_value) {
  auto h = HostValueHeap::create(max_value);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? std::move(*h) : nullptr;
}

#define SEEDED_RNG(rng)                                             \
  const uint64_t seed = engine::testing::test_seed();               \
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed); \
  std::mt19937_64 rng(seed)

TEST(HostValueHeap, RandomBatchesAndReleasesMatchAModel) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  // 16 chunks of 256 KiB: batches meet the limit often.
  testing::run_random_ops(*heap, 64 * 1024, 16 * heap->chunk_bytes(), rng);
}

TEST(HostValueHeap, BulkWritesOfPackedSlotsMatchAModel) {
  SEEDED_RNG(rng);
  auto heap = make_heap(1 << 20);
  testing::check_bulk_writes(*heap, 1 << 20, rng);
}

TEST(HostValueHeap, AdversarialLengthsAreRefusedAndChangeNothing) {
  SEEDED_RNG(rng);
  auto heap = make_heap(1 << 20);
  testing::check_adversarial_lengths(*heap, 1 << 20, rng);
  EXPECT_EQ(HostValueHeap::create(value_handle::kMaxLength + 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(HostValueHeap::create(value_handle::kMaxLength).ok());
}

// The numbers: --memory=96MiB held about 1200 values of 60 KB; after
// deleting half, batches of 16 values of 12 KB were refused. Now the freed
// bytes serve them, and the other way round (compaction), and for other pairs.
TEST(HostValueHeap, FreedMemoryServesValuesOfAnotherSize) {
  SEEDED_RNG(rng);
  testing::expect_refills([] { return make_heap(1 << 20); },
                          {{72 << 20, 60000, 12000, 16},
                           {72 << 20, 12000, 60000, 1},
                           {16 << 20, 100, 5000, 64},
                           {16 << 20, 5000, 100, 64},
                           {64 << 20, 1000, 1 << 20, 1}},
                          rng);
}

TEST(HostValueHeap, AccountingIsExact) {
  SEEDED_RNG(rng);
  auto heap = make_heap(4096);
  HeapModel model;
  uint64_t used = 0;
  for (int i = 0; i < 5000; ++i) {
    const uint32_t len = static_cast<uint32_t>(rng() % 4097);
    ASSERT_TRUE(testing::put_values(*heap, model, {random_bytes(rng, len)}).ok());
    used += ExtentValueHeap::extent_bytes(len);
    EXPECT_EQ(ExtentValueHeap::extent_bytes(len), len == 0 ? 8u : (len + 7) / 8 * 8);
  }
  EXPECT_EQ(heap->used_bytes(), used);
  EXPECT_EQ(heap->reserved_bytes(), heap->mapped_chunks() * heap->chunk_bytes());
  EXPECT_EQ(heap->reserved_bytes() - heap->used_bytes(), heap->free_bytes());
  EXPECT_GE(heap->max_live_extent_bytes(), 4096u);
  EXPECT_LE(heap->max_live_extent_bytes(), 4096u * 9 / 8);
  testing::expect_heap_matches(*heap, model, rng);
}

TEST(HostValueHeap, TrimMovesValuesOutOfSparseChunksAndGivesThemBack) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  testing::check_trim(*heap, rng);
}

TEST(HostValueHeap, TrimInBoundedStepsWhileValuesComeAndGo) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  testing::check_trim_in_steps(*heap, rng);
}

TEST(HostValueHeap, ARefusedBatchLeavesNoChunkMapped) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  heap->set_limit(3 * heap->chunk_bytes());
  HeapModel model;
  ASSERT_TRUE(testing::put_values(*heap, model, {random_bytes(rng, 100)}).ok());
  // 19 values of 40000 bytes fit the free bytes of 3 chunks on paper, but a
  // chunk holds 6 of them: two chunks are mapped, then the batch is refused.
  std::vector<std::string> values;
  for (int i = 0; i < 19; ++i) values.push_back(random_bytes(rng, 40000));
  const uint64_t reserved = heap->reserved_bytes();
  EXPECT_EQ(testing::put_values(*heap, model, values).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(heap->reserved_bytes(), reserved);
  EXPECT_EQ(heap->mapped_chunks(), 1u);
  values.pop_back();
  EXPECT_TRUE(testing::put_values(*heap, model, values).ok());
  EXPECT_EQ(heap->mapped_chunks(), 3u);
  testing::expect_heap_matches(*heap, model, rng);
}

// A bulk load's slots: runs of values share one extent, so a fresh heap
// fills its chunks front to back; mixed with single slots and releases (the
// holes they leave), under a limit that refuses some runs whole.
TEST(HostValueHeap, PackedSlotsFillChunksBackToBackAndMatchAModel) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  HeapModel model;
  // Into an empty heap: every chunk but the last full to within one value.
  for (int run = 0; run < 20; ++run) {
    std::vector<std::string> values;
    for (int i = 0; i < 3000; ++i) values.push_back(random_bytes(rng, rng() % 10 == 0 ? rng() % 4000 : rng() % 40));
    ASSERT_TRUE(testing::put_values(*heap, model, values, /*packed=*/true).ok());
  }
  EXPECT_GT(heap->mapped_chunks(), 2u);
  EXPECT_GE(heap->used_bytes() + (heap->mapped_chunks() - 1) * 4000, (heap->mapped_chunks() - 1) * heap->chunk_bytes());
  testing::expect_heap_matches(*heap, model, rng);
  // Holes, single slots, then packed runs again under a limit.
  testing::release_share(*heap, model, rng, 0.3);
  heap->set_limit(heap->reserved_bytes() + 2 * heap->chunk_bytes());
  int refused = 0;
  for (int run = 0; run < 60; ++run) {
    std::vector<std::string> values;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 2000); i < n; ++i)
      values.push_back(random_bytes(rng, rng() % 200));
    const uint64_t reserved = heap->reserved_bytes(), live = heap->live_values();
    const absl::Status s = testing::put_values(*heap, model, values, /*packed=*/run % 3 != 0);
    if (!s.ok()) {
      ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
      EXPECT_EQ(heap->reserved_bytes(), reserved);
      EXPECT_EQ(heap->live_values(), live);
      ++refused;
      testing::release_share(*heap, model, rng, 0.2);
    }
  }
  EXPECT_GT(refused, 0) << "the limit should refuse some runs";
  EXPECT_LE(heap->reserved_bytes(), heap->limit());
  testing::expect_heap_matches(*heap, model, rng);
}

}  // namespace
}  // namespace gphkv::server
