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

#define SEEDED_RNG(rng)                                                  \
  const uint64_t seed = engine::testing::test_seed();                    \
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);      \
  std::mt19937_64 rng(seed)

TEST(HostValueHeap, RandomBatchesAndReleasesMatchAModel) {
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  // 16 chunks of 256 KiB: batches meet the limit often.
  testing::run_random_ops(*heap, 64 * 1024, 16 * heap->chunk_bytes(), rng);
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
  struct Case {
    uint64_t limit;
    uint32_t first, second;
    int batch;
  };
  for (const Case& c : {Case{72 << 20, 60000, 12000, 16}, Case{72 << 20, 12000, 60000, 1},
                        Case{16 << 20, 100, 5000, 64}, Case{16 << 20, 5000, 100, 64},
                        Case{64 << 20, 1000, 1 << 20, 1}}) {
    SCOPED_TRACE(::testing::Message() << c.first << " B -> " << c.second << " B under " << c.limit);
    auto heap = make_heap(1 << 20);
    const double share = testing::refill_share(*heap, c.limit, c.first, c.second, c.batch, rng);
    EXPECT_GE(share, 0.90) << "moved " << heap->moved_bytes() << " bytes";
    EXPECT_LE(heap->reserved_bytes(), c.limit);
  }
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
  HeapModel model;
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(testing::put_values(*heap, model, {random_bytes(rng, static_cast<uint32_t>(rng() % 2000))}).ok());
  }
  // Release three in four at random: no chunk is left wholly free.
  for (auto it = model.begin(); it != model.end();) {
    if (rng() % 4 != 0) {
      heap->release(it->first);
      it = model.erase(it);
    } else {
      ++it;
    }
  }
  const uint64_t before = heap->reserved_bytes();
  auto released = heap->trim();
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(heap->reserved_bytes(), before - *released);
  EXPECT_GT(heap->moved_bytes(), 0u);
  // About a quarter stays live: the chunks left hold little more than that.
  EXPECT_LE(heap->reserved_bytes(), heap->used_bytes() * 5 / 4 + heap->chunk_bytes())
      << "used " << heap->used_bytes();
  testing::expect_heap_matches(*heap, model, rng);
  // A second trim finds nothing more worth moving.
  const uint64_t moved = heap->moved_bytes();
  released = heap->trim();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 0u);
  EXPECT_EQ(heap->moved_bytes(), moved);
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

}  // namespace
}  // namespace gphkv::server
