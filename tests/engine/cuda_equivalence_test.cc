// The CUDA backend against the CPU reference: the same random operation
// sequences on both, compared outcome by outcome, lookup by lookup, and image
// against image. Skips, with the reason, where there is no device.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gphkv/engine/stream_ordered_table.h"
#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"

#if defined(GPHKV_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gphkv::engine::testing {
namespace {

class CudaEquivalenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device here (or built without nvcc); run the GPU tests on the "
                      "device machine (docs/gpu.md)";
    }
  }
};

// GPHKV_TEST_SCALE (default 1) shortens the sequences, for runs under
// compute-sanitizer, which slows every kernel many times over.
uint64_t scaled(uint64_t ops) {
  static const double scale = [] {
    const char* env = std::getenv("GPHKV_TEST_SCALE");
    return env ? std::atof(env) : 1.0;
  }();
  return std::max<uint64_t>(1000, static_cast<uint64_t>(ops * scale));
}

struct Pair {
  std::unique_ptr<Table> cpu, gpu;
};

Pair make_pair_of_tables(const TableOptions& o) {
  Pair p;
  auto cpu = make_cpu_table(o);
  auto gpu = make_cuda_table(o);
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(gpu.ok()) << gpu.status();
  if (cpu.ok()) p.cpu = std::move(*cpu);
  if (gpu.ok()) p.gpu = std::move(*gpu);
  return p;
}

// The keys of every bucket as a sorted list: slot order inside a bucket is
// free (parallel inserts race for slots), bucket membership is not.
std::vector<std::vector<uint64_t>> bucket_sets(const TableImage& img) {
  const uint32_t M = img.geometry.slots_per_bucket;
  std::vector<std::vector<uint64_t>> sets(img.geometry.num_buckets);
  for (uint64_t s = 0; s < img.keys.size(); ++s) {
    if (img.keys[s] != gph::kEmptyKey) sets[s / M].push_back(img.keys[s]);
  }
  for (auto& b : sets) std::sort(b.begin(), b.end());
  return sets;
}

std::map<uint64_t, uint64_t> contents(const Table& t) {
  auto pairs = t.export_pairs();
  EXPECT_TRUE(pairs.ok()) << pairs.status();
  std::map<uint64_t, uint64_t> m;
  if (pairs.ok()) {
    for (const KeyValue& kv : *pairs) m[kv.key] = kv.value;
  }
  return m;
}

// Runs `ops` keys' worth of random batches (insert 50%, find 30%, erase 20%,
// duplicates and the sentinel included) on both tables, checking outcomes
// and lookups key by key. Returns the model of what both should hold.
std::unordered_map<uint64_t, uint64_t> run_sequence(Pair& p, std::mt19937_64& rng, size_t pool_size, uint64_t ops,
                                                    int insert_pct) {
  std::vector<uint64_t> pool = {0, 1, gph::kEmptyKey, gph::kEmptyKey - 1, 1ull << 63};
  while (pool.size() < pool_size) pool.push_back(rng());
  std::unordered_map<uint64_t, uint64_t> model;
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1), size_of(1, 30000);
  std::uniform_int_distribution<int> kind(0, 99);
  std::vector<uint64_t> keys, values, got_cpu, got_gpu;
  std::vector<uint8_t> f_cpu, f_gpu;
  std::vector<UpsertOutcome> o_cpu, o_gpu;
  for (uint64_t done = 0; done < ops;) {
    const size_t n = kind(rng) < 50 ? size_of(rng) : size_of(rng) % 100 + 1;
    keys.resize(n);
    for (auto& k : keys) k = pool[pick(rng)];
    const int op = kind(rng);
    if (op < insert_pct) {
      values.resize(n);
      for (auto& v : values) v = rng();
      o_cpu.assign(n, UpsertOutcome::kNoRoom);
      o_gpu.assign(n, UpsertOutcome::kNoRoom);
      EXPECT_TRUE(p.cpu->insert_or_assign(keys, values, absl::MakeSpan(o_cpu)).ok());
      auto st = p.gpu->insert_or_assign(keys, values, absl::MakeSpan(o_gpu));
      EXPECT_TRUE(st.ok()) << st;
      for (size_t i = 0; i < n; ++i) {
        if (o_cpu[i] != o_gpu[i]) {
          ADD_FAILURE() << "insert outcome of key " << keys[i] << " at " << i << ": cpu " << int(o_cpu[i]) << " cuda "
                        << int(o_gpu[i]);
          return model;
        }
        if (o_cpu[i] != UpsertOutcome::kNoRoom) model[keys[i]] = values[i];
      }
    } else if (op < insert_pct + (100 - insert_pct) * 3 / 5) {
      got_cpu.assign(n, 7);
      got_gpu.assign(n, 7);
      f_cpu.assign(n, 2);
      f_gpu.assign(n, 2);
      EXPECT_TRUE(p.cpu->find(keys, absl::MakeSpan(got_cpu), absl::MakeSpan(f_cpu)).ok());
      auto st = p.gpu->find(keys, absl::MakeSpan(got_gpu), absl::MakeSpan(f_gpu));
      EXPECT_TRUE(st.ok()) << st;
      for (size_t i = 0; i < n; ++i) {
        if (f_cpu[i] != f_gpu[i] || got_cpu[i] != got_gpu[i]) {
          ADD_FAILURE() << "find of key " << keys[i] << ": cpu (" << int(f_cpu[i]) << ", " << got_cpu[i] << ") cuda ("
                        << int(f_gpu[i]) << ", " << got_gpu[i] << ")";
          return model;
        }
      }
    } else {
      f_cpu.assign(n, 2);
      f_gpu.assign(n, 2);
      EXPECT_TRUE(p.cpu->erase(keys, absl::MakeSpan(f_cpu)).ok());
      auto st = p.gpu->erase(keys, absl::MakeSpan(f_gpu));
      EXPECT_TRUE(st.ok()) << st;
      for (size_t i = 0; i < n; ++i) {
        if (f_cpu[i] != f_gpu[i]) {
          ADD_FAILURE() << "erase of key " << keys[i] << " at " << i << ": cpu " << int(f_cpu[i]) << " cuda "
                        << int(f_gpu[i]);
          return model;
        }
        if (f_cpu[i]) model.erase(keys[i]);
      }
    }
    if (p.cpu->size() != p.gpu->size()) {
      ADD_FAILURE() << "sizes differ: cpu " << p.cpu->size() << " cuda " << p.gpu->size();
      return model;
    }
    done += n;
  }
  return model;
}

// At 10% load Refinement is rare on either backend; in a run where neither
// ran it, the images must agree bucket for bucket (same cells, same key set in
// every bucket). Where one did (hash clusters can fill a bucket even at low
// load), the invariants and the contents must still agree, and equal cell
// bytes still imply equal buckets.
TEST_F(CudaEquivalenceTest, WithoutRefinementImagesAgreeBucketForBucket) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  int compared = 0;
  for (double cpb : {1.0, 4.0, 1.0, 4.0}) {
    TableOptions o;
    o.num_buckets = buckets_for_capacity(scaled(40000), 0.1, o.slots_per_bucket);
    o.cells_per_bucket = cpb;
    o.seed = static_cast<uint32_t>(rng());
    Pair p = make_pair_of_tables(o);
    ASSERT_TRUE(p.cpu && p.gpu);
    const auto model = run_sequence(p, rng, scaled(40000), scaled(600000), 50);
    ASSERT_FALSE(HasFailure());
    auto a = p.cpu->image();
    auto b = p.gpu->image();
    ASSERT_TRUE(a.ok() && b.ok());
    const bool refined = std::any_of(a->cells.begin(), a->cells.end(), [](uint8_t c) { return c != 0; }) ||
                         std::any_of(b->cells.begin(), b->cells.end(), [](uint8_t c) { return c != 0; });
    if (!refined || a->cells == b->cells) {
      EXPECT_EQ(a->cells, b->cells);
      EXPECT_EQ(bucket_sets(*a), bucket_sets(*b));
      compared += !refined;
    }
    EXPECT_EQ(a->has_empty_key, b->has_empty_key);
    EXPECT_EQ(a->empty_key_value, b->empty_key_value);
    EXPECT_EQ(check_invariants(*b, model.size()), "");
    EXPECT_EQ(check_contents(*p.gpu, model), "");
    EXPECT_EQ(contents(*p.cpu), contents(*p.gpu));
  }
  std::printf("%d of 4 runs without Refinement compared bucket for bucket\n", compared);
  EXPECT_GT(compared, 0) << "no run stayed free of Refinement at 10% load";
}

// Near the reachable load factor Refinement runs in parallel on the GPU, in
// batch order on the CPU: cell bytes may differ, the invariants and the
// key->value contents may not.
TEST_F(CudaEquivalenceTest, WithRefinementInvariantsAndContentsAgree) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed ^ 0x5eed);
  // The pool fills the table to `full` at most: past where buckets overflow,
  // under the reachable load factor of the shape (0.71 at 1 cell per bucket,
  // 0.85 at 4), so neither backend answers kNoRoom.
  const struct { double cpb, full; } shapes[] = {{1.0, 0.6}, {4.0, 0.75}};
  for (auto [cpb, full] : shapes) {
    TableOptions o;
    o.num_buckets = buckets_for_capacity(scaled(60000), full, o.slots_per_bucket);
    o.cells_per_bucket = cpb;
    o.seed = static_cast<uint32_t>(rng());
    Pair p = make_pair_of_tables(o);
    ASSERT_TRUE(p.cpu && p.gpu);
    const auto model = run_sequence(p, rng, scaled(60000), scaled(800000), 80);
    ASSERT_FALSE(HasFailure());
    auto img = p.gpu->image();
    ASSERT_TRUE(img.ok());
    int moved = 0;
    for (uint8_t c : img->cells) moved += c != 0;
    std::printf("cells/bucket %.0f: load %.3f, %d cells moved by Extended Move on the GPU\n", cpb, p.gpu->load_factor(),
                moved);
    EXPECT_GT(moved, 0) << "the test meant to exercise Refinement";
    EXPECT_EQ(check_invariants(*img, model.size()), "");
    EXPECT_EQ(check_contents(*p.gpu, model), "");
    EXPECT_EQ(contents(*p.cpu), contents(*p.gpu));
  }
}

// One batch that overfills many buckets at once: many Refinement transactions
// run concurrently, contending for locks.
TEST_F(CudaEquivalenceTest, OneLargeBatchToHighLoad) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed ^ 0xb16);
  TableOptions o;
  o.num_buckets = (1 << 18) / o.slots_per_bucket;  // 2^18 slots
  o.seed = static_cast<uint32_t>(rng());
  Pair p = make_pair_of_tables(o);
  ASSERT_TRUE(p.cpu && p.gpu);
  const size_t n = static_cast<size_t>(0.8 * (1 << 18));
  std::vector<uint64_t> keys(n), values(n);
  for (auto& k : keys) k = rng();
  for (auto& v : values) v = rng();
  std::vector<UpsertOutcome> oc(n), og(n);
  ASSERT_TRUE(p.cpu->insert_or_assign(keys, values, absl::MakeSpan(oc)).ok());
  auto st = p.gpu->insert_or_assign(keys, values, absl::MakeSpan(og));
  ASSERT_TRUE(st.ok()) << st;
  std::unordered_map<uint64_t, uint64_t> model;
  std::unordered_set<uint64_t> refused;
  for (size_t i = 0; i < n; ++i) {
    if (og[i] == UpsertOutcome::kNoRoom) refused.insert(keys[i]);
    if (og[i] == UpsertOutcome::kInserted) model[keys[i]] = values[i];
  }
  // 0.8 is under the default shape's reachable load factor (0.84-0.86), but
  // parallel Refinement's choices depend on the schedule, and a table this
  // small spreads: a refusal stays rare (docs/gph.md: 0-2 keys of 10^8 at
  // 0.8). Under racecheck's serialized schedule one key of 2^18 * 0.8 was
  // refused once (seed 9205189064258756710). The owner grows the table then.
  EXPECT_LE(refused.size(), n / 10000) << "kNoRoom far below the reachable load factor";
  if (!refused.empty()) std::printf("%zu of %zu keys refused (kNoRoom) at load 0.8\n", refused.size(), n);
  auto img = p.gpu->image();
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(check_invariants(*img, model.size()), "");
  EXPECT_EQ(check_contents(*p.gpu, model), "");
  if (refused.empty()) EXPECT_EQ(contents(*p.cpu), contents(*p.gpu));
  // Lookups of every key, and of as many absent ones, agree with the CPU,
  // except that a key the GPU refused is absent there.
  for (size_t i = 0; i < n; ++i) keys.push_back(rng());
  std::vector<uint64_t> vc(keys.size()), vg(keys.size());
  std::vector<uint8_t> fc(keys.size()), fg(keys.size());
  ASSERT_TRUE(p.cpu->find(keys, absl::MakeSpan(vc), absl::MakeSpan(fc)).ok());
  ASSERT_TRUE(p.gpu->find(keys, absl::MakeSpan(vg), absl::MakeSpan(fg)).ok());
  size_t bad = 0;
  for (size_t i = 0; i < keys.size() && bad < 5; ++i) {
    const bool was_refused = refused.count(keys[i]) != 0;
    const bool ok = was_refused ? fg[i] == 0 : (fc[i] == fg[i] && (fc[i] == 0 || vc[i] == vg[i]));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << "key " << keys[i] << (was_refused ? " (refused by the GPU)" : "") << ": cpu found=" << int(fc[i])
                    << " value=" << vc[i] << ", gpu found=" << int(fg[i]) << " value=" << vg[i];
    }
  }
}

// The key list of a table larger than one export chunk (4 Mi slots): every
// chunk's keys, the out-of-band key (the sentinel) once, nothing stale.
TEST_F(CudaEquivalenceTest, KeyListSpansSeveralExportChunks) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed ^ 0x6e7);
  TableOptions o;
  o.num_buckets = (5u << 20) / o.slots_per_bucket;  // 5 Mi slots: two chunks, the second partial
  o.seed = static_cast<uint32_t>(rng());
  Pair p = make_pair_of_tables(o);
  ASSERT_TRUE(p.cpu && p.gpu);
  std::vector<uint64_t> keys(scaled(200000)), values(keys.size());
  for (auto& k : keys) k = rng();
  keys[0] = gph::kEmptyKey;
  keys[1] = 0;
  for (auto& v : values) v = rng();
  std::vector<UpsertOutcome> oc(keys.size()), og(keys.size());
  ASSERT_TRUE(p.cpu->insert_or_assign(keys, values, absl::MakeSpan(oc)).ok());
  ASSERT_TRUE(p.gpu->insert_or_assign(keys, values, absl::MakeSpan(og)).ok());
  std::unordered_map<uint64_t, uint64_t> model;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(og[i], UpsertOutcome::kInserted) << "key " << keys[i] << " at load 0.04";
    model[keys[i]] = values[i];
  }
  EXPECT_EQ(check_keys(*p.gpu, model), "");
  EXPECT_EQ(check_keys(*p.cpu, model), "");
  // After erasing half, the list follows.
  std::vector<uint64_t> gone(keys.begin(), keys.begin() + keys.size() / 2);
  std::vector<uint8_t> erased(gone.size());
  ASSERT_TRUE(p.gpu->erase(gone, absl::MakeSpan(erased)).ok());
  for (uint64_t k : gone) model.erase(k);
  EXPECT_EQ(check_keys(*p.gpu, model), "");
}

#if defined(GPHKV_HAVE_CUDA)
#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

// The device-pointer, stream-ordered API on a caller's stream, through the
// public interface (gphkv/engine/stream_ordered_table.h).
TEST_F(CudaEquivalenceTest, AsyncApiOnACallerStream) {
  std::mt19937_64 rng(test_seed() ^ 0xa5);
  TableOptions o;
  o.num_buckets = 65536 / o.slots_per_bucket;  // 65536 slots for 30000 keys
  auto made = make_cuda_table(o, 0);
  ASSERT_TRUE(made.ok()) << made.status();
  StreamOrderedTable* t = (*made)->stream_ordered();
  ASSERT_NE(t, nullptr) << "a CUDA table offers the stream-ordered operations";
  const size_t n = 30000;
  std::vector<uint64_t> keys(n), values(n);
  for (auto& k : keys) k = rng();
  for (auto& v : values) v = rng();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  uint64_t *dk, *dv, *dout;
  uint8_t *dfound, *derased;
  UpsertOutcome* doc;
  CUDA_OK(cudaMalloc(&dk, n * 8));
  CUDA_OK(cudaMalloc(&dv, n * 8));
  CUDA_OK(cudaMalloc(&dout, n * 8));
  CUDA_OK(cudaMalloc(&dfound, n));
  CUDA_OK(cudaMalloc(&derased, n));
  CUDA_OK(cudaMalloc(&doc, n));
  CUDA_OK(cudaMemcpyAsync(dk, keys.data(), n * 8, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(dv, values.data(), n * 8, cudaMemcpyHostToDevice, s));
  ASSERT_TRUE(t->insert_or_assign_async(dk, dv, n, doc, s).ok());
  ASSERT_TRUE(t->find_async(dk, n, dout, dfound, s).ok());
  std::vector<uint64_t> got(n);
  std::vector<uint8_t> found(n);
  std::vector<UpsertOutcome> oc(n);
  CUDA_OK(cudaMemcpyAsync(got.data(), dout, n * 8, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaMemcpyAsync(found.data(), dfound, n, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaMemcpyAsync(oc.data(), doc, n, cudaMemcpyDeviceToHost, s));
  ASSERT_TRUE(t->erase_async(dk, n / 2, derased, s).ok());
  ASSERT_TRUE(t->synchronize(s).ok());
  EXPECT_EQ(t->size(), n - n / 2);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(oc[i], UpsertOutcome::kInserted);
    ASSERT_EQ(found[i], 1);
    ASSERT_EQ(got[i], values[i]);
  }
  for (void* p : {(void*)dk, (void*)dv, (void*)dout, (void*)dfound, (void*)derased, (void*)doc}) CUDA_OK(cudaFree(p));
  CUDA_OK(cudaStreamDestroy(s));
}

// CUDA's errors come back as a Status with CUDA's text, and the failed
// construction leaks nothing: a normal table still fits afterwards.
TEST_F(CudaEquivalenceTest, DeviceErrorsBecomeStatus) {
  TableOptions huge;
  huge.num_buckets = UINT32_MAX;  // 2^32 buckets of 64 slots: 2 TiB of keys
  huge.slots_per_bucket = 64;
  huge.cells_per_bucket = 0.5;
  for (int i = 0; i < 3; ++i) {
    auto t = make_cuda_table(huge, 0);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
    EXPECT_NE(t.status().message().find("cudaErrorMemoryAllocation"), std::string::npos) << t.status();
  }
  auto bad = make_cuda_table(TableOptions{}, 1 << 20);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // A refused allocation leaves CUDA's last error set after its caller got it;
  // the operations that follow must not report it as theirs.
  auto small = make_cuda_table(TableOptions{}, 0);
  ASSERT_TRUE(small.ok()) << small.status();
  auto refuse = [] {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, size_t{1} << 50), cudaErrorMemoryAllocation);
  };
  const std::vector<uint64_t> keys = {1, 2, 3}, values = {4, 5, 6};
  std::vector<UpsertOutcome> outcomes(3);
  std::vector<uint64_t> got(3);
  std::vector<uint8_t> found(3), erased(3);
  refuse();
  EXPECT_TRUE((*small)->insert_or_assign(keys, values, absl::MakeSpan(outcomes)).ok());
  refuse();
  EXPECT_TRUE((*small)->find(keys, absl::MakeSpan(got), absl::MakeSpan(found)).ok());
  EXPECT_EQ(got, values);
  refuse();
  EXPECT_TRUE((*small)->erase(keys, absl::MakeSpan(erased)).ok());
  refuse();
  EXPECT_TRUE((*small)->clear().ok());
  small->reset();
  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  TableOptions big;
  big.num_buckets = free_bytes / 2 / (16 * big.slots_per_bucket);  // half of what is free (16 B a slot)
  auto t = make_cuda_table(big, 0);
  EXPECT_TRUE(t.ok()) << t.status();
}
#endif

}  // namespace
}  // namespace gphkv::engine::testing
