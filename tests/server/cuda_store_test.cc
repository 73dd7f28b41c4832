// The store on CUDA (device value heap, pipelined gets) against the CPU
// store, call by call: the same runs of puts, deletes and gets (duplicates,
// misses, 0 and the sentinel key, EXISTS mode, values of 0..4096 bytes),
// through growth by rebuilds (gets take the synchronous path while one
// runs) and the steps of a Shrink's value-heap trim. Skips without a CUDA
// device.
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/store.h"
#include "server/wire_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {
namespace {

using Owned = OwnedCall;

// Points o->call at o's request and response of `kind`.
void bind(Owned* o, OpKind kind) {
  switch (kind) {
    case OpKind::kGet: o->call.op = get_op(o->get, &o->get_out).value(); break;
    case OpKind::kPut: o->call.op = put_op(o->put, &o->put_out).value(); break;
    case OpKind::kDelete: o->call.op = delete_op(o->del, &o->del_out).value(); break;
    case OpKind::kShrink: break;
  }
}

std::unique_ptr<Store> make_store(engine::Backend backend, uint64_t memory, uint32_t max_value_bytes = 4096,
                                  uint64_t small_gets_keys = 0) {
  StoreOptions o;
  o.gpu_small_gets_keys = small_gets_keys;
  o.backend = backend;
  o.initial_capacity = 256;
  o.memory_limit_bytes = memory;
  o.max_value_bytes = max_value_bytes;
  o.table.cpu_threads = 2;
  o.time_get_stages = true;
  auto s = Store::create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// Binds `p`'s put request and applies it as one call: its status.
absl::Status put_one_call(Store* store, Owned* p) {
  bind(p, OpKind::kPut);
  std::vector<absl::Status> st;
  Call* pc = &p->call;
  store->apply_puts({&pc, 1}, &st);
  return st[0];
}

uint64_t random_key(std::mt19937_64& rng) {
  const int r = static_cast<int>(rng() % 50);
  if (r == 0) return 0;
  if (r == 1) return ~uint64_t{0};  // kEmptyKey: a valid key too
  return rng() % 20000;
}

std::string random_value(std::mt19937_64& rng) {
  const uint32_t len = rng() % 10 == 0 ? static_cast<uint32_t>(rng() % 4097) : static_cast<uint32_t>(rng() % 100);
  std::string s(len, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// A run of `calls` calls of one kind, as both stores' Calls.
std::vector<std::unique_ptr<Owned>> make_run(std::mt19937_64& rng, OpKind kind, int calls) {
  std::vector<std::unique_ptr<Owned>> run;
  for (int c = 0; c < calls; ++c) {
    auto o = std::make_unique<Owned>();
    const int n = static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) {
      const uint64_t k = random_key(rng);
      switch (kind) {
        case OpKind::kGet: o->get.add_keys(k); break;
        case OpKind::kPut: {
          o->put.add_keys(k);
          const std::string v = random_value(rng);
          o->put.add_value_lengths(static_cast<uint32_t>(v.size()));
          o->put.mutable_values()->append(v);
          break;
        }
        case OpKind::kDelete: o->del.add_keys(k); break;
      }
    }
    if (kind == OpKind::kGet && rng() % 5 == 0) o->get.set_value_mode(v1::VALUE_MODE_EXISTS);
    bind(o.get(), kind);
    run.push_back(std::move(o));
  }
  return run;
}

std::vector<std::unique_ptr<Owned>> copy_run(const std::vector<std::unique_ptr<Owned>>& run) {
  std::vector<std::unique_ptr<Owned>> out;
  for (const auto& r : run) {
    auto o = std::make_unique<Owned>();
    o->get = r->get;
    o->put = r->put;
    o->del = r->del;
    bind(o.get(), r->call.kind());
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<Call*> ptrs(const std::vector<std::unique_ptr<Owned>>& run) {
  std::vector<Call*> p;
  for (const auto& o : run) p.push_back(&o->call);
  return p;
}

void apply(Store& s, OpKind kind, const std::vector<Call*>& calls, std::vector<absl::Status>* st) {
  switch (kind) {
    case OpKind::kGet: s.apply_gets(calls, st); break;
    case OpKind::kPut: s.apply_puts(calls, st); break;
    case OpKind::kDelete: s.apply_deletes(calls, st); break;
  }
}

// small_gets_keys: batches of at most this many keys take the small path
// (server/cuda/device_gets.h); 0 none.
void pipelined_gets_match_the_cpu_store(uint64_t small_gets_keys) {
  auto cpu = make_store(engine::Backend::kCpu, 512 << 20);
  auto gpu = make_store(engine::Backend::kCuda, 512 << 20, 4096, small_gets_keys);
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(gpu, nullptr);
  ASSERT_STREQ(gpu->value_heap_kind(), "device");
  ASSERT_GE(gpu->pipeline_depth(), 2);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  int mismatches = 0;
  uint64_t trim_steps = 0;
  for (int round = 0; round < 120 && mismatches < 5; ++round) {
    // A Shrink's value-heap trim in steps, as the executor runs them between
    // batches: values move on the device while runs go on around the steps.
    if (round % 40 == 20) {
      gpu->begin_shrink();
      cpu->begin_shrink();
    }
    if (gpu->shrinking()) {
      ASSERT_TRUE(gpu->shrink_step().ok());
      ++trim_steps;
    }
    if (cpu->shrinking()) ASSERT_TRUE(cpu->shrink_step().ok());
    const int what = static_cast<int>(rng() % 10);
    if (what < 3) {
      const OpKind kind = what < 2 ? OpKind::kPut : OpKind::kDelete;
      auto a = make_run(rng, kind, 1 + static_cast<int>(rng() % 4));
      auto b = copy_run(a);
      std::vector<absl::Status> sa, sb;
      apply(*cpu, kind, ptrs(a), &sa);
      apply(*gpu, kind, ptrs(b), &sb);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(sa[i].code(), sb[i].code()) << sb[i];
        if (kind == OpKind::kPut) {
          EXPECT_EQ(a[i]->put_out.SerializeAsString(), b[i]->put_out.SerializeAsString());
        } else {
          EXPECT_EQ(a[i]->del_out.SerializeAsString(), b[i]->del_out.SerializeAsString());
        }
      }
      continue;
    }
    // Up to depth get runs in flight on the GPU store, finished in order.
    std::vector<std::vector<std::unique_ptr<Owned>>> cpu_runs, gpu_runs;
    const int runs = 1 + static_cast<int>(rng() % gpu->pipeline_depth());
    for (int r = 0; r < runs; ++r) {
      cpu_runs.push_back(make_run(rng, OpKind::kGet, 1 + static_cast<int>(rng() % 5)));
      gpu_runs.push_back(copy_run(cpu_runs.back()));
    }
    std::vector<std::vector<absl::Status>> gpu_st(runs);
    int submitted = 0;
    if (gpu->can_pipeline_gets()) {
      for (auto& run : gpu_runs) {
        ASSERT_TRUE(gpu->submit_gets(ptrs(run)).ok());
        ++submitted;
      }
      ASSERT_EQ(gpu->gets_in_flight(), static_cast<size_t>(runs));
      for (int r = 0; r < runs; ++r) {
        GetStageTimes times;
        auto answers = gpu->finish_gets(&times);
        answers->fill(0, answers->calls().size());
        gpu_st[r] = answers->statuses();
        const std::vector<Call*>& done = answers->calls();
        ASSERT_EQ(done, ptrs(gpu_runs[r]));  // oldest first
      }
    } else {
      for (int r = 0; r < runs; ++r) gpu->apply_gets(ptrs(gpu_runs[r]), &gpu_st[r]);
    }
    for (int r = 0; r < runs; ++r) {
      std::vector<absl::Status> cpu_st;
      cpu->apply_gets(ptrs(cpu_runs[r]), &cpu_st);
      for (size_t i = 0; i < cpu_runs[r].size(); ++i) {
        EXPECT_EQ(cpu_st[i].code(), gpu_st[r][i].code()) << gpu_st[r][i];
        if (cpu_runs[r][i]->get_out.SerializeAsString() != gpu_runs[r][i]->get_out.SerializeAsString()) {
          ++mismatches;
          ADD_FAILURE() << "round " << round << " run " << r << " call " << i << " (pipelined: " << (submitted > 0)
                        << "): GPU response differs from the CPU store's";
        }
      }
    }
  }
  EXPECT_EQ(cpu->keys(), gpu->keys());
  EXPECT_GT(gpu->counters().pipelined_get_runs, 0u);
  EXPECT_GT(trim_steps, 0u);
}

TEST(CudaStore, PipelinedGetsMatchTheCpuStoreCallByCall) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  pipelined_gets_match_the_cpu_store(0);
}

// Batches of up to 256 keys on the small path (no copies: the lookup reads
// the pinned keys, one kernel writes the answers into pinned memory), larger
// ones on the large: runs of 1-5 calls of 0-199 keys take both, mixed in one
// pipeline, with values moved by a shrink's trim between them.
TEST(CudaStore, SmallPathGetsMatchTheCpuStoreCallByCall) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  pipelined_gets_match_the_cpu_store(256);
}

// The same with the small path taking only batches of up to 64 keys.
TEST(CudaStore, SmallPathOf64KeysGetsMatchTheCpuStoreCallByCall) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  pipelined_gets_match_the_cpu_store(64);
}

TEST(CudaStore, AGetOverTheResponseLimitIsRefusedOnThePipelineAndOthersAreAnswered) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  StoreOptions o;
  o.backend = engine::Backend::kCuda;
  o.initial_capacity = 256;
  o.memory_limit_bytes = 64 << 20;
  o.max_value_bytes = 4096;
  o.max_response_bytes = 5000;
  auto store = std::move(*Store::create(o));
  Owned p;
  for (uint64_t k = 1; k <= 3; ++k) {
    p.put.add_keys(k);
    p.put.add_value_lengths(2000);
    p.put.mutable_values()->append(std::string(2000, static_cast<char>('a' + k)));
  }
  ASSERT_TRUE(put_one_call(store.get(), &p).ok());
  ASSERT_TRUE(store->can_pipeline_gets());
  Owned big, small;
  for (uint64_t k : {1, 2, 3}) big.get.add_keys(k);
  small.get.add_keys(2);
  small.get.add_keys(9);
  for (Owned* g : {&big, &small}) {
    bind(g, OpKind::kGet);
  }
  Call* calls[] = {&big.call, &small.call};
  ASSERT_TRUE(store->submit_gets(calls).ok());
  GetStageTimes times;
  auto answers = store->finish_gets(&times);
  answers->fill(0, answers->calls().size());
  const std::vector<absl::Status> st = answers->statuses();
  EXPECT_EQ(st[0].code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(st[1].ok());
  EXPECT_TRUE(small.get_out.found(0));
  EXPECT_FALSE(small.get_out.found(1));
  EXPECT_EQ(small.get_out.values(), std::string(2000, 'c'));
}

TEST(CudaStore, TheOldestRunIsDoneOnlyOnceTheDeviceFinishedIt) {
  // Without a pipeline (the CPU store) nothing is ever in flight.
  auto cpu = make_store(engine::Backend::kCpu, 64 << 20);
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(cpu->oldest_gets_done());
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto store = make_store(engine::Backend::kCuda, 64 << 20);
  ASSERT_NE(store, nullptr);
  Owned p;
  for (uint64_t k = 1; k <= 100; ++k) {
    p.put.add_keys(k);
    p.put.add_value_lengths(8);
    p.put.mutable_values()->append(std::string(8, static_cast<char>(k)));
  }
  ASSERT_TRUE(put_one_call(store.get(), &p).ok());
  ASSERT_TRUE(store->can_pipeline_gets());
  ASSERT_GE(store->pipeline_depth(), 2);
  EXPECT_FALSE(store->oldest_gets_done()) << "nothing is in flight";

  // Two runs in flight; each is reported done, oldest first, before it is
  // finished, and finishing it then returns that run's answers.
  Owned first, second;
  for (uint64_t k : {3, 5, 1000}) first.get.add_keys(k);
  for (uint64_t k : {7, 2000}) second.get.add_keys(k);
  bind(&first, OpKind::kGet);
  bind(&second, OpKind::kGet);
  Call* a = &first.call;
  Call* b = &second.call;
  ASSERT_TRUE(store->submit_gets({&a, 1}).ok());
  ASSERT_TRUE(store->submit_gets({&b, 1}).ok());
  for (Call* expected : {a, b}) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!store->oldest_gets_done() && Clock::now() < until) std::this_thread::yield();
    ASSERT_TRUE(store->oldest_gets_done()) << "the device did not finish a 3-key run in 10 s";
    GetStageTimes times;
    auto answers = store->finish_gets(&times);
    ASSERT_EQ(answers->calls().size(), 1u);
    EXPECT_EQ(answers->calls()[0], expected) << "runs are finished oldest first";
    answers->fill(0, 1);
    ASSERT_TRUE(answers->statuses()[0].ok());
  }
  EXPECT_FALSE(store->oldest_gets_done()) << "nothing is in flight any more";
  ASSERT_EQ(first.get_out.found_size(), 3);
  EXPECT_TRUE(first.get_out.found(0));
  EXPECT_TRUE(first.get_out.found(1));
  EXPECT_FALSE(first.get_out.found(2));
  EXPECT_EQ(first.get_out.values(), std::string(8, '\3') + std::string(8, '\5'));
  ASSERT_EQ(second.get_out.found_size(), 2);
  EXPECT_TRUE(second.get_out.found(0));
  EXPECT_FALSE(second.get_out.found(1));
  EXPECT_EQ(second.get_out.values(), std::string(8, '\7'));
}

TEST(CudaStore, ARunPastTheFusedScanTakesTheMultiKernelScan) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto gpu = make_store(engine::Backend::kCuda, 512 << 20);
  ASSERT_NE(gpu, nullptr);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr uint64_t kKeys = 80000;  // over kFusedScanMaxKeys (65536) in one run
  std::vector<std::string> model(kKeys);
  std::vector<bool> stored(kKeys, false);
  Owned p;
  for (uint64_t k = 0; k < kKeys; ++k) {
    if (rng() % 4 == 0) continue;  // a quarter stay misses
    stored[k] = true;
    model[k] = std::string(rng() % 24, static_cast<char>('a' + k % 26));
    p.put.add_keys(k);
    p.put.add_value_lengths(static_cast<uint32_t>(model[k].size()));
    p.put.mutable_values()->append(model[k]);
  }
  bind(&p, OpKind::kPut);
  std::vector<absl::Status> st;
  Call* pc = &p.call;
  gpu->apply_puts({&pc, 1}, &st);
  ASSERT_TRUE(st[0].ok()) << st[0];
  ASSERT_TRUE(gpu->finish_rebuild().ok());
  ASSERT_TRUE(gpu->can_pipeline_gets());
  Owned g;
  for (uint64_t k = 0; k < kKeys; ++k) g.get.add_keys(k);
  bind(&g, OpKind::kGet);
  Call* gc = &g.call;
  ASSERT_TRUE(gpu->submit_gets({&gc, 1}).ok());
  GetStageTimes times;
  auto answers = gpu->finish_gets(&times);
  answers->fill(0, answers->calls().size());
  st = answers->statuses();
  ASSERT_TRUE(st[0].ok()) << st[0];
  uint64_t off = 0;
  int bad = 0;
  for (uint64_t k = 0; k < kKeys && bad < 5; ++k) {
    if (g.get_out.found(k) != stored[k]) {
      ++bad;
      ADD_FAILURE() << "key " << k << " found=" << g.get_out.found(k);
      continue;
    }
    const uint32_t len = g.get_out.value_lengths(k);
    if (stored[k] && g.get_out.values().compare(off, len, model[k]) != 0) {
      ++bad;
      ADD_FAILURE() << "key " << k << " has the wrong value";
    }
    off += len;
  }
  EXPECT_EQ(off, g.get_out.values().size());
}

}  // namespace
// Mostly small values and a few of the largest class: a run of only the
// large ones outgrows the download that travels with it (sized from the mean
// stored value) and the rest is copied when the run finishes.
TEST(CudaStore, ValuesLargerThanTheSpeculativeDownloadComeBackWhole) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto gpu = make_store(engine::Backend::kCuda, 512 << 20);
  ASSERT_NE(gpu, nullptr);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> model;
  Owned p;
  for (uint64_t k = 0; k < 2064; ++k) {
    std::string v(k < 64 ? 4096 : 8, '\0');
    for (auto& c : v) c = static_cast<char>(rng());
    p.put.add_keys(k);
    p.put.add_value_lengths(static_cast<uint32_t>(v.size()));
    p.put.mutable_values()->append(v);
    model.push_back(std::move(v));
  }
  bind(&p, OpKind::kPut);
  std::vector<absl::Status> st;
  Call* pc = &p.call;
  gpu->apply_puts({&pc, 1}, &st);
  ASSERT_TRUE(st[0].ok()) << st[0];
  ASSERT_TRUE(gpu->finish_rebuild().ok());
  ASSERT_TRUE(gpu->can_pipeline_gets());
  // Two calls in one run: the 64 large values (256 KiB, over the 64 KiB
  // minimum download) in shuffled order, then small ones and misses.
  Owned g1, g2;
  std::vector<uint64_t> big(64);
  for (uint64_t k = 0; k < 64; ++k) big[k] = k;
  std::shuffle(big.begin(), big.end(), rng);
  for (uint64_t k : big) g1.get.add_keys(k);
  for (uint64_t k = 2000; k < 2100; ++k) g2.get.add_keys(k);
  for (Owned* g : {&g1, &g2}) {
    bind(g, OpKind::kGet);
  }
  Call* calls[] = {&g1.call, &g2.call};
  const uint64_t late_before = gpu->counters().late_get_downloads;
  ASSERT_TRUE(gpu->submit_gets(calls).ok());
  GetStageTimes times;
  auto answers = gpu->finish_gets(&times);
  answers->fill(0, answers->calls().size());
  st = answers->statuses();
  ASSERT_TRUE(st[0].ok()) << st[0];
  ASSERT_TRUE(st[1].ok()) << st[1];
  EXPECT_EQ(gpu->counters().late_get_downloads, late_before + 1);
  for (Owned* g : {&g1, &g2}) {
    uint64_t off = 0;
    for (int i = 0; i < g->get.keys_size(); ++i) {
      const uint64_t k = g->get.keys(i);
      ASSERT_EQ(g->get_out.found(i), k < model.size()) << "key " << k;
      const uint32_t len = g->get_out.value_lengths(i);
      if (k < model.size()) {
        ASSERT_EQ(g->get_out.values().substr(off, len), model[k]) << "key " << k;
      }
      off += len;
    }
    EXPECT_EQ(off, g->get_out.values().size());
  }
}

// Mixed sizes whose largest class is far above the mean: the gather's room is
// sized for what values likely take, and a run whose values outgrow it takes
// the slow path; every value still comes back whole.
TEST(CudaStore, ARunOfLargeValuesAmongManySmallOnesComesBackWhole) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto gpu = make_store(engine::Backend::kCuda, 512 << 20, 1 << 20);
  ASSERT_NE(gpu, nullptr);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr uint64_t kSmall = 20000, kBig = 24;  // 24 MiB of large values, past the 16 MiB room
  std::vector<std::string> model;
  for (uint64_t first = 0; first < kSmall + kBig; first += 1000) {
    Owned p;
    for (uint64_t k = first; k < std::min(first + 1000, kSmall + kBig); ++k) {
      std::string v(k < kSmall ? 8 : (1 << 20) - static_cast<int>(rng() % 64), '\0');
      for (auto& c : v) c = static_cast<char>(rng());
      p.put.add_keys(k);
      p.put.add_value_lengths(static_cast<uint32_t>(v.size()));
      p.put.mutable_values()->append(v);
      model.push_back(std::move(v));
    }
    bind(&p, OpKind::kPut);
    std::vector<absl::Status> st;
    Call* pc = &p.call;
    gpu->apply_puts({&pc, 1}, &st);
    ASSERT_TRUE(st[0].ok()) << st[0];
  }
  ASSERT_TRUE(gpu->finish_rebuild().ok());
  ASSERT_TRUE(gpu->can_pipeline_gets());
  Owned big, mixed;
  for (uint64_t k = kSmall; k < kSmall + kBig; ++k) big.get.add_keys(k);
  for (int i = 0; i < 300; ++i) mixed.get.add_keys(rng() % (kSmall + kBig + 10));
  bind(&big, OpKind::kGet);
  bind(&mixed, OpKind::kGet);
  Call* calls[] = {&mixed.call, &big.call};
  ASSERT_TRUE(gpu->submit_gets(calls).ok());
  GetStageTimes times;
  auto answers = gpu->finish_gets(&times);
  answers->fill(0, answers->calls().size());
  for (const absl::Status& s : answers->statuses()) ASSERT_TRUE(s.ok()) << s;
  for (Owned* g : {&mixed, &big}) {
    uint64_t off = 0;
    for (int i = 0; i < g->get.keys_size(); ++i) {
      const uint64_t k = g->get.keys(i);
      ASSERT_EQ(g->get_out.found(i), k < model.size()) << "key " << k;
      const uint32_t len = g->get_out.value_lengths(i);
      if (k < model.size()) ASSERT_EQ(g->get_out.values().substr(off, len), model[k]) << "key " << k;
      off += len;
    }
    EXPECT_EQ(off, g->get_out.values().size());
  }
}

}  // namespace gphkv::server
