// The store against a model: runs of calls with duplicates within and
// across calls, growth through many rebuilds, the --memory cap, and memory
// freed by deletes serving values of another size.
#include "server/store.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"
#include "tests/server/owned_calls.h"
#include "tests/server/store_fixtures.h"
#include "tests/server/value_heap_checks.h"

namespace gphkv::server {
namespace {

std::string value_at(const v1::GetResponse& r, int i) {
  size_t off = 0;
  for (int j = 0; j < i; ++j) off += r.value_lengths(j);
  return r.values().substr(off, r.value_lengths(i));
}

TEST(Store, RunsMatchAModelThroughGrowth) {
  auto store = small_store();
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(7);
  const uint64_t key_space = 20000;  // far past the 64-key first table: many rebuilds
  for (int round = 0; round < 300; ++round) {
    const OpKind kind = static_cast<OpKind>(rng() % 3 == 0 ? (rng() % 3) : 1);
    std::vector<std::unique_ptr<OwnedCall>> calls;
    const int ncalls = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < ncalls; ++c) {
      std::vector<uint64_t> keys;
      const int n = 1 + static_cast<int>(rng() % 200);
      for (int i = 0; i < n; ++i) keys.push_back(rng() % key_space);
      if (kind == OpKind::kPut) {
        std::vector<std::string> values;
        for (uint64_t k : keys)
          values.push_back(std::to_string(k) + ":" + std::to_string(round) + std::string(rng() % 50, 'v'));
        calls.push_back(make_put(keys, values));
      } else if (kind == OpKind::kGet) {
        calls.push_back(make_get(keys));
      } else {
        calls.push_back(make_del(keys));
      }
    }
    std::vector<Call*> run;
    for (auto& c : calls) run.push_back(&c->call);
    std::vector<absl::Status> statuses;
    if (kind == OpKind::kPut) store->apply_puts(run, &statuses);
    if (kind == OpKind::kGet) store->apply_gets(run, &statuses);
    if (kind == OpKind::kDelete) store->apply_deletes(run, &statuses);
    for (size_t ci = 0; ci < calls.size(); ++ci) {
      ASSERT_TRUE(statuses[ci].ok()) << statuses[ci];
      OwnedCall& c = *calls[ci];
      if (kind == OpKind::kPut) {
        // created[i]: not stored before this call (earlier calls of the run count).
        for (int i = 0; i < c.put.keys_size(); ++i) {
          EXPECT_EQ(c.put_out.created(i), model.count(c.put.keys(i)) == 0) << "key " << c.put.keys(i);
        }
        size_t off = 0;
        for (int i = 0; i < c.put.keys_size(); ++i) {
          model[c.put.keys(i)] = c.put.values().substr(off, c.put.value_lengths(i));
          off += c.put.value_lengths(i);
        }
      } else if (kind == OpKind::kGet) {
        for (int i = 0; i < c.get.keys_size(); ++i) {
          auto it = model.find(c.get.keys(i));
          ASSERT_EQ(c.get_out.found(i), it != model.end()) << "key " << c.get.keys(i);
          if (it != model.end()) EXPECT_EQ(value_at(c.get_out, i), it->second);
        }
      } else {
        for (int i = 0; i < c.del.keys_size(); ++i) {
          EXPECT_EQ(c.del_out.deleted(i), model.erase(c.del.keys(i)) == 1);
        }
      }
    }
    ASSERT_EQ(store->keys(), model.size());
  }
  EXPECT_GT(store->counters().rebuilds, 3u);
  EXPECT_LE(store->load_factor(), 0.85);
}

TEST(Store, ExistsModeReturnsFlagsWithoutValues) {
  auto store = small_store();
  auto put = make_put({1, 2}, {"one", "two"});
  std::vector<absl::Status> st;
  Call* p = &put->call;
  store->apply_puts({&p, 1}, &st);
  auto get = make_get({1, 3, 2}, /*exists_only=*/true);
  Call* g = &get->call;
  store->apply_gets({&g, 1}, &st);
  ASSERT_TRUE(st[0].ok());
  EXPECT_TRUE(get->get_out.found(0));
  EXPECT_FALSE(get->get_out.found(1));
  EXPECT_TRUE(get->get_out.found(2));
  EXPECT_EQ(get->get_out.values(), "");
  EXPECT_EQ(get->get_out.value_lengths(0), 0u);
}

TEST(Store, APutPastTheMemoryCapIsRefusedAndChangesNothing) {
  // 2 MiB: the first table plus a few 256 KiB chunks of values.
  auto store = small_store(2 << 20, 64);
  const std::string big(4000, 'b');
  uint64_t next = 0;
  absl::Status refused;
  std::vector<absl::Status> st;
  for (int round = 0; round < 200 && refused.ok(); ++round) {
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (int i = 0; i < 10; ++i) {
      keys.push_back(next++);
      values.push_back(big);
    }
    auto put = make_put(keys, values);
    Call* p = &put->call;
    store->apply_puts({&p, 1}, &st);
    refused = st[0];
  }
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(std::string(refused.message()).find("--memory"), std::string::npos) << refused;
  // The refused call's keys (the last ten) are all absent; earlier ones are intact.
  std::vector<uint64_t> all;
  for (uint64_t k = 0; k < next; ++k) all.push_back(k);
  auto get = make_get(all);
  Call* g = &get->call;
  store->apply_gets({&g, 1}, &st);
  ASSERT_TRUE(st[0].ok());
  for (uint64_t k = 0; k < next; ++k) {
    EXPECT_EQ(get->get_out.found(static_cast<int>(k)), k + 10 < next) << k;
  }
  EXPECT_EQ(store->keys(), next - 10);
  EXPECT_LE(store->table_bytes() + store->value_heap_bytes(), store->memory_limit_bytes());
  // Deleting frees room: the same put now succeeds.
  auto del = make_del({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Call* d = &del->call;
  store->apply_deletes({&d, 1}, &st);
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (uint64_t k = next - 10; k < next; ++k) {
    keys.push_back(k);
    values.push_back(big);
  }
  auto put = make_put(keys, values);
  Call* p = &put->call;
  store->apply_puts({&p, 1}, &st);
  EXPECT_TRUE(st[0].ok()) << st[0];
}

TEST(Store, AGetOverTheResponseLimitIsRefusedAndOthersAreAnswered) {
  StoreOptions o;
  o.initial_capacity = 64;
  o.max_value_bytes = 4096;
  o.max_response_bytes = 10000;
  o.table.cpu_threads = 2;
  auto store = std::move(*Store::create(o));
  auto put = make_put({1, 2, 3}, {std::string(4000, 'a'), std::string(4000, 'b'), std::string(4000, 'c')});
  std::vector<absl::Status> st;
  Call* p = &put->call;
  store->apply_puts({&p, 1}, &st);
  ASSERT_TRUE(st[0].ok());
  auto big = make_get({1, 2, 3});                           // 12000 bytes of values
  auto small = make_get({1, 2});                            // 8000
  auto exists = make_get({1, 2, 3}, /*exists_only=*/true);  // no values: fine
  std::vector<Call*> run{&big->call, &small->call, &exists->call};
  store->apply_gets(run, &st);
  EXPECT_EQ(st[0].code(), absl::StatusCode::kResourceExhausted) << st[0];
  EXPECT_NE(std::string(st[0].message()).find("10000"), std::string::npos);
  ASSERT_TRUE(st[1].ok());
  EXPECT_EQ(small->get_out.values().size(), 8000u);
  ASSERT_TRUE(st[2].ok());
  EXPECT_TRUE(exists->get_out.found(2));
}

TEST(Store, RefusesAnInitialCapacityPastTheCap) {
  StoreOptions o;
  o.initial_capacity = 10'000'000;
  o.memory_limit_bytes = 1 << 20;
  EXPECT_EQ(Store::create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

// Runs one kind of call through the store.
std::vector<absl::Status> apply(Store& store, OpKind kind, std::vector<std::unique_ptr<OwnedCall>>& calls) {
  std::vector<Call*> run;
  for (auto& c : calls) run.push_back(&c->call);
  std::vector<absl::Status> statuses;
  if (kind == OpKind::kPut) store.apply_puts(run, &statuses);
  if (kind == OpKind::kGet) store.apply_gets(run, &statuses);
  if (kind == OpKind::kDelete) store.apply_deletes(run, &statuses);
  return statuses;
}

// Puts keys next..next+n-1 (value "<key>:<tag>") in one call; true if admitted.
bool put_range(Store& store, std::map<uint64_t, std::string>& model, uint64_t next, int n, const std::string& tag) {
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) {
    keys.push_back(next + i);
    values.push_back(std::to_string(next + i) + ":" + tag);
  }
  std::vector<std::unique_ptr<OwnedCall>> calls;
  calls.push_back(make_put(keys, values));
  auto st = apply(store, OpKind::kPut, calls);
  EXPECT_TRUE(st[0].ok()) << st[0];
  if (!st[0].ok()) return false;
  for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
  return true;
}

// Gets `keys` and checks every answer against the model.
void expect_gets(Store& store, const std::map<uint64_t, std::string>& model, const std::vector<uint64_t>& keys) {
  std::vector<std::unique_ptr<OwnedCall>> calls;
  calls.push_back(make_get(keys));
  auto st = apply(store, OpKind::kGet, calls);
  ASSERT_TRUE(st[0].ok()) << st[0];
  const v1::GetResponse& r = calls[0]->get_out;
  size_t off = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = model.find(keys[i]);
    ASSERT_EQ(r.found(static_cast<int>(i)), it != model.end()) << "key " << keys[i];
    const uint32_t len = r.value_lengths(static_cast<int>(i));
    if (it != model.end()) EXPECT_EQ(r.values().substr(off, len), it->second) << "key " << keys[i];
    off += len;
  }
}

// Fills a store sized for `capacity` keys in calls of 1000 until a put
// crosses max_load_factor and a background rebuild starts.
uint64_t fill_until_rebuilding(Store& store, std::map<uint64_t, std::string>& model, uint64_t capacity) {
  uint64_t next = 0;
  while (!store.rebuilding() && next < 4 * capacity) {
    if (!put_range(store, model, next, 1000, "fill")) break;
    next += 1000;
  }
  return next;
}

TEST(Store, GetsWhileARebuildRunsAnswerFromTheOverlay) {
  const uint64_t capacity = 300000;  // a bulk build long enough to catch in flight
  auto store = small_store(uint64_t{256} << 20, capacity);
  std::map<uint64_t, std::string> model;
  uint64_t next = fill_until_rebuilding(*store, model, capacity);
  ASSERT_TRUE(store->rebuilding()) << "crossing max_load_factor must start a background rebuild";
  const uint64_t rebuilds_before = store->counters().rebuilds;
  std::mt19937_64 rng(11);
  int served_while_rebuilding = 0;
  for (int round = 0; round < 2000 && store->rebuilding(); ++round) {
    // Writes that land in the overlay: new keys, overwrites, deletes.
    if (round % 3 == 0) {
      ASSERT_TRUE(put_range(*store, model, next, 50, "during"));
      next += 50;
    } else if (round % 3 == 1) {
      std::vector<uint64_t> keys;
      std::vector<std::string> values;
      for (int i = 0; i < 20; ++i) {
        keys.push_back(rng() % next);
        values.push_back("over:" + std::to_string(round) + ":" + std::to_string(i));
      }
      std::vector<std::unique_ptr<OwnedCall>> calls;
      calls.push_back(make_put(keys, values));
      auto st = apply(*store, OpKind::kPut, calls);
      ASSERT_TRUE(st[0].ok()) << st[0];
      for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
    } else {
      std::vector<uint64_t> keys;
      for (int i = 0; i < 20; ++i) keys.push_back(rng() % next);
      std::vector<std::unique_ptr<OwnedCall>> calls;
      calls.push_back(make_del(keys));
      auto st = apply(*store, OpKind::kDelete, calls);
      ASSERT_TRUE(st[0].ok()) << st[0];
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ(calls[0]->del_out.deleted(static_cast<int>(i)), model.erase(keys[i]) == 1) << keys[i];
      }
    }
    // Gets: recent keys (in the overlay), random old ones (in the old table), absent ones.
    std::vector<uint64_t> keys;
    for (int i = 0; i < 100; ++i) keys.push_back(next - 1 - rng() % std::min<uint64_t>(next, 500));
    for (int i = 0; i < 100; ++i) keys.push_back(rng() % (next + 1000));
    expect_gets(*store, model, keys);
    if (HasFatalFailure()) return;
    // Answered before the swap: the get ran with the rebuild still in flight.
    if (store->rebuilding()) ++served_while_rebuilding;
    ASSERT_EQ(store->keys(), model.size());
  }
  EXPECT_GT(served_while_rebuilding, 0) << "the rebuild finished before any get ran during it";
  ASSERT_TRUE(store->finish_rebuild().ok());
  EXPECT_FALSE(store->rebuilding());
  EXPECT_EQ(store->counters().rebuilds, rebuilds_before + 1);
  EXPECT_EQ(store->counters().rebuilds_by_cause.at("load_factor"), store->counters().rebuilds);
  EXPECT_GT(store->counters().rebuild_writes_during, 0u);
  // After the swap every key reads as the model says.
  std::vector<uint64_t> all;
  for (uint64_t k = 0; k < next + 100; ++k) all.push_back(k);
  expect_gets(*store, model, all);
  EXPECT_EQ(store->keys(), model.size());
}

TEST(Store, APutRefusedAtTheCapWhileARebuildRunsChangesNothing) {
  const uint64_t capacity = 300000;
  // About 24 MiB for the two tables of the rebuild and 5 MiB of small values:
  // 40 MiB leaves no room for 10000 values of 4000 bytes.
  auto store = small_store(uint64_t{40} << 20, capacity);
  // Overwrites of stored keys and new keys, with values past the cap; made
  // before the fill so that the put follows the rebuild's start at once.
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (int i = 0; i < 10000; ++i) {
    keys.push_back(i % 2 == 0 ? static_cast<uint64_t>(i) : (uint64_t{1} << 40) + i);
    values.push_back(std::string(4000, 'x'));
  }
  std::vector<std::unique_ptr<OwnedCall>> calls;
  calls.push_back(make_put(keys, values));
  std::map<uint64_t, std::string> model;
  const uint64_t next = fill_until_rebuilding(*store, model, capacity);
  ASSERT_TRUE(store->rebuilding());
  const uint64_t keys_before = store->keys();
  const uint64_t heap_before = store->value_heap_bytes();
  auto st = apply(*store, OpKind::kPut, calls);
  EXPECT_EQ(st[0].code(), absl::StatusCode::kResourceExhausted) << st[0];
  EXPECT_NE(std::string(st[0].message()).find("--memory"), std::string::npos) << st[0];
  // Nothing polled the rebuild after the put's first lookup: still in flight
  // means the whole put ran against the old table and the overlay.
  const bool refused_during_rebuild = store->rebuilding();
  EXPECT_EQ(store->keys(), keys_before);
  EXPECT_LE(store->table_bytes() + store->value_heap_bytes(), store->memory_limit_bytes());
  // A refused call may leave a chunk reserved, never a live value.
  EXPECT_GE(store->value_heap_bytes(), heap_before);
  // Nothing changed: the refused call's keys keep their old values or stay absent.
  std::vector<uint64_t> check(keys.begin(), keys.end());
  for (uint64_t k = 0; k < next; k += 7) check.push_back(k);
  expect_gets(*store, model, check);
  // A put that fits is still admitted while (or after) the rebuild runs.
  ASSERT_TRUE(put_range(*store, model, next + 20000, 100, "after"));
  expect_gets(*store, model, {next + 20000, next + 20099, 1, 2});
  ASSERT_TRUE(store->finish_rebuild().ok());
  expect_gets(*store, model, check);
  EXPECT_EQ(store->keys(), model.size());
  EXPECT_LE(store->table_bytes() + store->value_heap_bytes(), store->memory_limit_bytes());
  if (!refused_during_rebuild) GTEST_SKIP() << "the rebuild finished during the refused put (checked anyway)";
}

TEST(Store, EveryKeyIsValidIncludingTheSentinel) {
  auto store = small_store();
  const std::vector<uint64_t> keys{0, ~uint64_t{0}, ~uint64_t{0} - 1};
  auto put = make_put(keys, {"zero", "max", "max-1"});
  std::vector<absl::Status> st;
  Call* p = &put->call;
  store->apply_puts({&p, 1}, &st);
  ASSERT_TRUE(st[0].ok());
  auto get = make_get(keys);
  Call* g = &get->call;
  store->apply_gets({&g, 1}, &st);
  EXPECT_EQ(value_at(get->get_out, 1), "max");
  EXPECT_EQ(value_at(get->get_out, 2), "max-1");
}

// Puts one call of `n` fresh keys from *next, each with random bytes of
// `len`; on success adds them to the model. Returns the call's status.
absl::Status put_sized(Store& store, std::map<uint64_t, std::string>& model, uint64_t* next, int n, uint32_t len,
                       std::mt19937_64& rng) {
  std::vector<uint64_t> keys;
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) {
    keys.push_back((*next)++);
    values.push_back(testing::random_bytes(rng, len));
  }
  std::vector<std::unique_ptr<OwnedCall>> calls;
  calls.push_back(make_put(keys, values));
  absl::Status st = apply(store, OpKind::kPut, calls)[0];
  if (st.ok()) {
    for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];
  }
  return st;
}

// Deletes each model key with probability `share`; returns the value bytes deleted.
uint64_t delete_share(Store& store, std::map<uint64_t, std::string>& model, double share, std::mt19937_64& rng) {
  std::vector<uint64_t> keys;
  uint64_t bytes = 0;
  for (const auto& [k, v] : model) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < share) {
      keys.push_back(k);
      bytes += v.size();
    }
  }
  std::vector<std::unique_ptr<OwnedCall>> calls;
  calls.push_back(make_del(keys));
  EXPECT_TRUE(apply(store, OpKind::kDelete, calls)[0].ok());
  for (uint64_t k : keys) model.erase(k);
  return bytes;
}

std::vector<uint64_t> keys_up_to(uint64_t next) {
  std::vector<uint64_t> all;
  for (uint64_t k = 0; k < next; ++k) all.push_back(k);
  return all;
}

// Issue 13, scaled down from --memory=96MiB: values of 60 KB fill the cap
// (RESOURCE_EXHAUSTED, every acknowledged value intact); once half are
// deleted, 60 KB puts succeed again and puts of 16 values of 12 KB take at
// least 90% of the freed bytes back; Shrink gives freed value memory back.
TEST(Store, MemoryFreedByDeletesServesOtherSizesAndShrinkGivesItBack) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  StoreOptions o;
  o.initial_capacity = 4096;
  o.memory_limit_bytes = uint64_t{48} << 20;
  o.table.cpu_threads = 2;
  auto created = Store::create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  Store& store = **created;
  std::map<uint64_t, std::string> model;
  uint64_t next = 0;
  absl::Status st;
  while (st.ok()) st = put_sized(store, model, &next, 1, 60000, rng);
  ASSERT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  ASSERT_GT(model.size(), 600u);
  EXPECT_LE(store.table_bytes() + store.value_heap_bytes(), store.memory_limit_bytes());
  expect_gets(store, model, keys_up_to(next));

  const uint64_t freed = delete_share(store, model, 0.5, rng);
  EXPECT_TRUE(put_sized(store, model, &next, 1, 60000, rng).ok());
  uint64_t refilled = 60000;
  for (st = absl::OkStatus(); st.ok();) {
    st = put_sized(store, model, &next, 16, 12000, rng);
    if (st.ok()) refilled += 16 * 12000;
  }
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_GE(refilled, freed * 9 / 10) << "freed " << freed << " bytes, took back " << refilled;
  EXPECT_LE(store.table_bytes() + store.value_heap_bytes(), store.memory_limit_bytes());
  expect_gets(store, model, keys_up_to(next));
  if (HasFatalFailure()) return;

  // Shrink after deleting nine in ten: the value heap gives the chunks back.
  delete_share(store, model, 0.9, rng);
  const uint64_t heap_before = store.value_heap_bytes();
  v1::ShrinkResponse answer;
  Call shrink;
  shrink.op = ShrinkOp{&answer};
  Call* run = &shrink;
  std::vector<absl::Status> statuses;
  store.begin_shrink();
  while (store.shrinking()) ASSERT_TRUE(store.shrink_step().ok());
  store.apply_shrinks({&run, 1}, &statuses);
  ASSERT_TRUE(statuses[0].ok()) << statuses[0];
  ASSERT_TRUE(store.finish_rebuild().ok());
  EXPECT_LT(store.value_heap_bytes(), heap_before / 4) << "before " << heap_before;
  expect_gets(store, model, keys_up_to(next));
  // The memory given back serves new values again.
  EXPECT_TRUE(put_sized(store, model, &next, 16, 12000, rng).ok());
  expect_gets(store, model, keys_up_to(next));
}

}  // namespace
}  // namespace gphkv::server
