// The device bulk build (engine/cuda/bulk_build.h) against a model and
// against the CPU builder on the same input, key by key, from host spans,
// device arrays and a live table. Skips,
// with the reason, where there is no device.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"

#if defined(GPHKV_HAVE_CUDA)
#include <cuda_runtime.h>

#include "engine/cuda/cuda_table.h"
#include "engine/tests/cuda_line_checks.h"
#endif

namespace gphkv::engine::testing {
namespace {

using Model = std::unordered_map<uint64_t, uint64_t>;

// GPHKV_TEST_SCALE (default 1) shortens the inputs for runs under
// compute-sanitizer, which slows every kernel many times over.
size_t scaled(size_t n) {
  static const double scale = [] {
    const char* env = std::getenv("GPHKV_TEST_SCALE");
    return env ? std::atof(env) : 1.0;
  }();
  return n == 0 ? 0 : std::max<size_t>(std::min<size_t>(n, 2000), static_cast<size_t>(n * scale));
}

#if defined(GPHKV_HAVE_CUDA)
using cuda::BulkBuildConfig;
using cuda::CudaTable;

class CudaBulkBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device here; run the GPU tests on the device machine (docs/gpu.md)";
    }
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // Copies host data to the device (freed at the end of the test).
  template <class T>
  T* to_device(const std::vector<T>& v) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, v.size() * sizeof(T))), cudaSuccess);
    // On the build's stream: a non-blocking stream is not ordered after the
    // legacy stream's copies.
    if (!v.empty()) {
      EXPECT_EQ(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream_), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    }
    owned_.emplace_back(p, [](void* q) { cudaFree(q); });
    return static_cast<T*>(p);
  }

  // The device build from device arrays.
  absl::StatusOr<std::unique_ptr<CudaTable>> build(const TableOptions& o, const std::vector<KeyValue>& base,
                                                   const std::vector<WriteOp>& burst, BuildStats* stats,
                                                   const BulkBuildConfig& config = {}) {
    auto t = CudaTable::create(o, 0);
    if (!t.ok()) return t.status();
    auto st = (*t)->bulk_load(to_device(base), base.size(), to_device(burst), burst.size(), stream_, stats, config);
    if (!st.ok()) return st;
    return t;
  }

  cudaStream_t stream_ = nullptr;
  std::vector<std::unique_ptr<void, void (*)(void*)>> owned_;
};

std::map<uint64_t, uint64_t> contents(const Table& t) {
  auto pairs = t.export_pairs();
  EXPECT_TRUE(pairs.ok()) << pairs.status();
  std::map<uint64_t, uint64_t> m;
  if (pairs.ok()) {
    for (const KeyValue& kv : *pairs) EXPECT_TRUE(m.emplace(kv.key, kv.value).second) << kv.key;
  }
  return m;
}

// HashGraph's placement, by lines (engine/cuda/device_table.cuh): each line's
// keys fill it contiguously from its first slot.
std::string check_contiguous(const TableImage& img) {
  const uint32_t M = img.geometry.slots_per_bucket;
  const uint32_t run = M % cuda::kLinePairs == 0 ? cuda::kLinePairs : M;
  for (uint64_t b = 0; b < img.geometry.num_buckets; ++b) {
    bool vacant = false;
    for (uint32_t s = 0; s < M; ++s) {
      if (s % run == 0) vacant = false;
      const bool empty = img.keys[b * M + s] == gph::kEmptyKey;
      if (!empty && vacant) return "bucket " + std::to_string(b) + " has a key after a vacant slot of its line";
      vacant = vacant || empty;
    }
  }
  return "";
}

// Everything a built table must satisfy: GPH's invariants, contiguous buckets,
// the model's contents and lookups, and the CPU builder's contents on the
// same input (key by key).
void expect_built(CudaTable& t, const Model& model, const std::vector<KeyValue>& base,
                  const std::vector<WriteOp>& burst) {
  auto img = t.image();
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(check_invariants(*img, model.size()), "");
  EXPECT_EQ(check_contiguous(*img), "");
  LineCensus lines;
  EXPECT_EQ(check_lines(t, &lines), "");
  // The placement keeps a key in its home line while the line has room: at
  // the loads built here a few keys in a hundred spill, against half of them
  // for a placement blind to lines.
  if (lines.keys > 1000 && cuda::lines_per_bucket(t.geometry()) > 1) {
    EXPECT_LT(lines.outside, lines.keys / 5) << lines.outside << " of " << lines.keys << " keys outside their line";
  }
  EXPECT_EQ(t.size(), model.size());
  EXPECT_EQ(check_contents(t, model), "");
  EXPECT_EQ(check_lookups(t, model), "");
  auto cpu = bulk_build(Backend::kCpu, t.options(), base, burst);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const auto want = contents(**cpu), got = contents(t);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    ASSERT_NE(it, got.end()) << "key " << k << " is in the CPU build, not in the GPU build";
    ASSERT_EQ(it->second, v) << "key " << k;
  }
}

// Base pairs with distinct keys, then a burst of puts and erases over old and
// new keys, repeats included (a key put, erased and put again).
void make_input(std::mt19937_64& rng, size_t base_n, size_t burst_n, size_t key_space, std::vector<KeyValue>* base,
                std::vector<WriteOp>* burst, Model* model) {
  auto key = [&] { return key_space == 0 ? rng() : rng() % key_space; };
  for (size_t i = 0; i < base_n; ++i) {
    const uint64_t k = key();
    const uint64_t v = rng();
    if (model->emplace(k, v).second) base->push_back({k, v});
  }
  for (size_t i = 0; i < burst_n; ++i) {
    const int kind = static_cast<int>(rng() % 10);
    const uint64_t k = !base->empty() && kind < 5 ? (*base)[rng() % base->size()].key : key();
    const bool erase = rng() % 10 < 3;
    const uint64_t v = rng();
    burst->push_back({k, v, erase});
    if (erase)
      model->erase(k);
    else
      (*model)[k] = v;
  }
}

TEST_F(CudaBulkBuildTest, RandomBasePlusBurstMatchesModelAndCpu) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  struct Case {
    size_t base, burst, key_space;
    double load;
  };
  for (const Case& c : {Case{0, 0, 0, 0.8}, Case{1000, 0, 0, 0.8}, Case{0, 1000, 0, 0.8}, Case{5000, 5000, 0, 0.8},
                        Case{300000, 100000, 0, 0.8}, Case{200000, 200000, 150000, 0.8},  // many repeats
                        Case{100000, 20000, 0, 0.5}}) {
    std::vector<KeyValue> base;
    std::vector<WriteOp> burst;
    Model model;
    make_input(rng, scaled(c.base), scaled(c.burst), scaled(c.key_space), &base, &burst, &model);
    TableOptions o;
    o.num_buckets = buckets_for_capacity(std::max<size_t>(model.size(), 1), c.load, o.slots_per_bucket);
    o.seed = static_cast<uint32_t>(rng());
    BuildStats stats;
    auto t = build(o, base, burst, &stats);
    ASSERT_TRUE(t.ok()) << t.status() << " base " << c.base << " burst " << c.burst;
    EXPECT_EQ(stats.keys, model.size());
    EXPECT_EQ(stats.input_pairs, base.size() + burst.size());
    expect_built(**t, model, base, burst);
  }
}

// The rule that turns pair records on by free memory: on at 10^8 records on
// an idle H100, off at 10^9 with what is left there beside the table and the
// input, and never for less than the records and the placement need. Host
// arithmetic: runs without a device.
TEST(PairRecordsFit, ByFreeMemory) {
  constexpr uint64_t kGB = 1000000000ull;
  const uint64_t n8 = 100000000ull, b8 = buckets_for_capacity(n8, 0.8, 16);
  const uint64_t n9 = 1000000000ull, b9 = buckets_for_capacity(n9, 0.8, 16);
  EXPECT_TRUE(cuda::pair_records_fit(n8, b8, 75 * kGB));
  EXPECT_FALSE(cuda::pair_records_fit(n9, b9, 40 * kGB));
  EXPECT_TRUE(cuda::pair_records_fit(n9, b9, 60 * kGB));
  EXPECT_FALSE(cuda::pair_records_fit(n8, b8, 48 * n8));  // the records and the placement alone
  EXPECT_TRUE(cuda::pair_records_fit(0, 1, 2 * kGB));
}

// BulkBuildConfig::pair_records changes where the placement reads a record
// from, nothing else: the table holds what the default build's holds, and
// passes every check of a built table.
TEST_F(CudaBulkBuildTest, PairRecordsBuildTheSameTable) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (const size_t key_space : {size_t{0}, size_t{150000}}) {
    std::vector<KeyValue> base;
    std::vector<WriteOp> burst;
    Model model;
    make_input(rng, scaled(200000), scaled(200000), scaled(key_space), &base, &burst, &model);
    TableOptions o;
    o.num_buckets = buckets_for_capacity(std::max<size_t>(model.size(), 1), 0.8, o.slots_per_bucket);
    o.seed = static_cast<uint32_t>(rng());
    BuildStats plain_stats, pair_stats;
    BulkBuildConfig separate, pairs;
    separate.pair_records = false;
    separate.pair_records_when_free = false;
    pairs.pair_records = true;
    auto plain = build(o, base, burst, &plain_stats, separate);
    auto paired = build(o, base, burst, &pair_stats, pairs);
    ASSERT_TRUE(plain.ok()) << plain.status();
    ASSERT_TRUE(paired.ok()) << paired.status();
    EXPECT_EQ(pair_stats.keys, model.size());
    expect_built(**paired, model, base, burst);
    // The same contents; not the same slots: the parallel rounds admit cells
    // in the order their atomics land, so two builds of one input may choose
    // different (Φ, Δ) for a few cells (a device run saw it).
    EXPECT_EQ(contents(**plain), contents(**paired));
  }
}

TEST_F(CudaBulkBuildTest, SentinelZeroAndRepeatsFollowTheLastWrite) {
  std::vector<KeyValue> base = {{gph::kEmptyKey, 1}, {0, 2}, {5, 3}, {9, 4}};
  std::vector<WriteOp> burst = {
      {gph::kEmptyKey, 0, true},
      {gph::kEmptyKey, 9, false},  // erased, then put again
      {0, 0, true},                // erased for good
      {5, 4, false},
      {5, 6, false},  // last put wins
      {7, 1, true},
      {7, 8, false},  // erase of an absent key, then put
      {11, 1, false},
      {11, 0, true},  // put, then erased
      {9, 5, true},
      {9, 6, false},
      {9, 7, true},  // ends erased
  };
  TableOptions o;
  o.num_buckets = 64;
  auto t = build(o, base, burst, nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  expect_built(**t, Model{{gph::kEmptyKey, 9}, {5, 6}, {7, 8}}, base, burst);

  // The sentinel only in the base, and erased by a burst that ends with it.
  std::vector<WriteOp> erase_it = {{1, 1, false}, {gph::kEmptyKey, 3, true}};
  auto u = build(o, base, erase_it, nullptr);
  ASSERT_TRUE(u.ok()) << u.status();
  expect_built(**u, Model{{0, 2}, {5, 3}, {9, 4}, {1, 1}}, base, erase_it);
}

TEST_F(CudaBulkBuildTest, KeysSharingCellsAreSpreadByTheirCellBytes) {
  // Many keys in a few cells: those cells must leave (Φ=0, Δ=0) to fit.
  TableOptions o;
  o.num_buckets = 4096 / o.slots_per_bucket;  // 4096 slots for 2160 keys
  o.seed = static_cast<uint32_t>(test_seed());
  auto g = make_geometry(o);
  ASSERT_TRUE(g.ok());
  std::vector<KeyValue> base;
  Model model;
  std::mt19937_64 rng(test_seed());
  const uint32_t crowded[] = {0, 1, g->num_cells / 2, g->num_cells - 1};
  std::map<uint32_t, int> per_cell;
  // 20 keys in each of 4 cells: a third of the 64 slots of a cell's R = 8
  // buckets, so each must find a (Φ, Δ) that spreads them.
  for (uint64_t k = 0; base.size() < 4 * 20; ++k) {
    const uint64_t key = k == 0 ? 0 : rng();
    const uint32_t c = gph::cell_of(*g, key);
    if (std::find(std::begin(crowded), std::end(crowded), c) == std::end(crowded) || per_cell[c] == 20) continue;
    ++per_cell[c];
    base.push_back({key, key ^ 0xabc});
    model[key] = key ^ 0xabc;
  }
  for (int i = 0; i < 2000; ++i) {  // and a roomy rest
    const uint64_t key = rng();
    if (model.emplace(key, i).second) base.push_back({key, static_cast<uint64_t>(i)});
  }
  BuildStats stats;
  auto t = build(o, base, {}, &stats);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(stats.cells_moved, 0u);
  expect_built(**t, model, base, {});
}

TEST_F(CudaBulkBuildTest, EmptyInputsGiveAnEmptyTable) {
  TableOptions o;
  o.num_buckets = 32;
  auto t = build(o, {}, {}, nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  expect_built(**t, Model{}, {}, {});
  std::vector<WriteOp> erases = {{1, 0, true}, {gph::kEmptyKey, 0, true}, {0, 0, true}};
  auto u = build(o, {}, erases, nullptr);
  ASSERT_TRUE(u.ok()) << u.status();
  expect_built(**u, Model{}, {}, erases);
}

TEST_F(CudaBulkBuildTest, TooSmallIsResourceExhausted) {
  std::vector<KeyValue> base;
  for (uint64_t k = 0; k < 2000; ++k) base.push_back({k, k});
  TableOptions o;
  o.num_buckets = 100;  // 800 slots (M = 8)
  auto t = build(o, base, {}, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
  EXPECT_NE(t.status().message().find("grow"), std::string::npos) << t.status();
  // Fewer keys than slots, but one cell holds more than its R buckets can.
  auto g = make_geometry(o);
  ASSERT_TRUE(g.ok());
  std::vector<KeyValue> one_cell;
  std::mt19937_64 rng(test_seed());
  while (one_cell.size() < g->virtual_buckets * g->slots_per_bucket + 1) {
    const uint64_t k = rng();
    if (gph::cell_of(*g, k) == 3) one_cell.push_back({k, 1});
  }
  auto u = build(o, one_cell, {}, nullptr);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), absl::StatusCode::kResourceExhausted) << u.status();
  // The CPU builder agrees on both.
  EXPECT_EQ(bulk_build(Backend::kCpu, o, one_cell, {}).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(CudaBulkBuildTest, HighLoadStillFits) {
  // Near the incremental path's reach (0.87): every cell settled, the serial pass included.
  std::mt19937_64 rng(test_seed());
  std::vector<KeyValue> base;
  std::vector<WriteOp> burst;
  Model model;
  const size_t slots = std::max<size_t>(scaled(1u << 20), 1u << 14);
  make_input(rng, slots * 81 / 100, 0, 0, &base, &burst, &model);  // load 0.81, as BulkBuildTest
  TableOptions o;
  o.num_buckets = static_cast<uint32_t>(slots / o.slots_per_bucket);
  BuildStats stats;
  auto t = build(o, base, burst, &stats);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GE((*t)->load_factor(), 0.80);
  std::printf("%zu keys at load %.3f: %u parallel rounds, %llu cells serial, %llu moved, %.1f ms\n", model.size(),
              (*t)->load_factor(), stats.parallel_rounds, static_cast<unsigned long long>(stats.cells_serial),
              static_cast<unsigned long long>(stats.cells_moved), stats.seconds * 1e3);
  expect_built(**t, model, base, burst);
}

TEST_F(CudaBulkBuildTest, BucketsOfTwelveSlots) {
  // M = 12 is not a power of two: the placement's slot-to-bucket division path.
  std::mt19937_64 rng(test_seed());
  std::vector<KeyValue> base;
  std::vector<WriteOp> burst;
  Model model;
  make_input(rng, scaled(60000), scaled(30000), 0, &base, &burst, &model);
  TableOptions o;
  o.slots_per_bucket = 12;
  o.num_buckets = buckets_for_capacity(model.size(), 0.8, 12);
  auto t = build(o, base, burst, nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  expect_built(**t, model, base, burst);
}

TEST_F(CudaBulkBuildTest, RebuildFromALiveTablePlusBurst) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  TableOptions o;
  o.num_buckets = buckets_for_capacity(scaled(100000), 0.8, o.slots_per_bucket);
  auto live = CudaTable::create(o, 0);
  ASSERT_TRUE(live.ok()) << live.status();
  Model model;
  std::vector<uint64_t> keys = {0, gph::kEmptyKey}, values = {10, 11};
  while (keys.size() < scaled(90000)) keys.push_back(rng()), values.push_back(rng());
  std::vector<UpsertOutcome> out(keys.size());
  ASSERT_TRUE((*live)->insert_or_assign(keys, values, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out[i] != UpsertOutcome::kNoRoom) model[keys[i]] = values[i];
  }
  std::vector<KeyValue> base;
  for (const auto& [k, v] : model) base.push_back({k, v});
  std::vector<WriteOp> burst;
  for (int i = 0; i < static_cast<int>(scaled(60000)); ++i) {
    const uint64_t k = i % 3 == 0 ? keys[rng() % keys.size()] : rng();
    const bool erase = i % 7 == 0;
    burst.push_back({k, static_cast<uint64_t>(i), erase});
    if (erase)
      model.erase(k);
    else
      model[k] = i;
  }
  TableOptions bigger = o;
  bigger.num_buckets = buckets_for_capacity(model.size(), 0.5, bigger.slots_per_bucket);
  auto t = CudaTable::create(bigger, 0);
  ASSERT_TRUE(t.ok()) << t.status();
  BuildStats stats;
  ASSERT_TRUE((*t)->bulk_load_from(**live, to_device(burst), burst.size(), stream_, &stats, BulkBuildConfig{}).ok());
  EXPECT_EQ(stats.input_pairs, base.size() + burst.size());
  expect_built(**t, model, base, burst);
  // The source is untouched.
  EXPECT_EQ((*live)->size(), base.size());
}

TEST_F(CudaBulkBuildTest, DeviceArraysAgreeWithTheHostSpanPath) {
  std::mt19937_64 rng(test_seed());
  std::vector<KeyValue> base;
  std::vector<WriteOp> burst;
  Model model;
  make_input(rng, scaled(100000), scaled(50000), 0, &base, &burst, &model);
  TableOptions o;
  o.num_buckets = buckets_for_capacity(model.size(), 0.8, o.slots_per_bucket);
  auto t = build(o, base, burst, nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  auto host = bulk_build(Backend::kCuda, o, base, burst);  // from host spans
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(contents(**t), contents(**host));
  expect_built(**t, model, base, burst);
}

#else
TEST(CudaBulkBuildTest, NeedsTheCudaBackend) {
  GTEST_SKIP() << "built without nvcc: the device bulk build is not compiled in";
}
#endif

}  // namespace
}  // namespace gphkv::engine::testing
