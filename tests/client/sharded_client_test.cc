// gphkv::ShardedClient over in-process servers on loopback: every answer
// against a model (one thread: exact), keys stored on the shard the router
// names and nowhere else, and the semantics across shards when a shard is
// down or refuses its part (the failed shard named, the applied keys listed
// and really applied). Random operations come from a fresh seed, printed for
// replay (GPHKV_TEST_SEED).
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gphkv/client/shard_router.h"
#include "gphkv/client/sharded_client.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using loadgen::testing::TestSeed;
using ::testing::HasSubstr;

struct Shards {
  std::vector<std::unique_ptr<server::Server>> servers;
  std::string address(size_t i) const { return absl::StrCat("127.0.0.1:", servers[i]->port()); }
  std::string list() const {
    std::vector<std::string> a;
    for (size_t i = 0; i < servers.size(); ++i) a.push_back(address(i));
    return absl::StrJoin(a, ",");
  }
};

// n servers; `adjust(i, options)` may change server i's options.
Shards start_shards(int n, const std::function<void(int, server::ServerOptions*)>& adjust = nullptr) {
  Shards s;
  for (int i = 0; i < n; ++i) {
    server::ServerOptions o = testing::test_options();
    if (adjust) adjust(i, &o);
    s.servers.push_back(testing::start_server(o));
  }
  return s;
}

std::unique_ptr<ShardedClient> connect(const std::string& list, ClientOptions o = {}) {
  auto c = ShardedClient::Connect(list, o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return std::vector<std::string_view>(v.begin(), v.end());
}

// Keys that `router` puts on shard `shard`, and keys it puts elsewhere.
std::vector<uint64_t> keys_on(const ShardRouter& router, size_t shard, size_t n, bool on = true) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < n; ++k) {
    if ((router.shard_of(k) == shard) == on) keys.push_back(k);
  }
  return keys;
}

class ShardedModel : public ::testing::TestWithParam<bool> {};  // coalescing on/off

TEST_P(ShardedModel, EveryAnswerMatchesAModelAndEveryKeyLivesOnItsShard) {
  testing::keep_grpc_initialized();
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  Shards shards = start_shards(3);
  ClientOptions o;
  o.coalesce.enabled = GetParam();
  auto client = connect(shards.list(), o);
  std::mt19937_64 rng(seed);
  std::map<uint64_t, std::string> model;
  for (int op = 0; op < 400; ++op) {
    // Up to 40 keys from 300, so calls span shards and repeat keys.
    std::vector<uint64_t> keys(1 + rng() % 40);
    for (auto& k : keys) k = rng() % 300 * 0x9E3779B97F4A7C15ULL;  // spread over the 64 bits
    const int what = static_cast<int>(rng() % 10);
    if (what < 4) {
      std::vector<std::string> values;
      for (uint64_t k : keys) values.push_back(absl::StrCat(k, "@", op, std::string(rng() % 300, 'v')));
      auto r = client->Put(keys, views(values));
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->size(), keys.size());
      for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ((*r)[i], !model.count(keys[i])) << "put " << keys[i];
      for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = values[i];  // the last occurrence wins
    } else if (what < 6) {
      auto r = client->Delete(keys);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->size(), keys.size());
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ((*r)[i], model.erase(keys[i]) == 1) << "delete " << keys[i];  // the first occurrence says so
      }
    } else {
      const bool exists_only = what == 9;
      auto r = client->Get(keys, exists_only);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->size(), keys.size());
      for (size_t i = 0; i < keys.size(); ++i) {
        auto it = model.find(keys[i]);
        ASSERT_EQ(r->found(i), it != model.end()) << "get " << keys[i];
        if (it != model.end()) EXPECT_EQ(r->value(i), exists_only ? "" : it->second) << "get " << keys[i];
      }
    }
  }
  // Each shard holds exactly the model's keys the router gives it.
  const std::vector<std::string> names = client->shard_names();
  ASSERT_EQ(names.size(), 3u);
  const ShardRouter router(names);
  std::vector<uint64_t> all;
  for (uint64_t k = 0; k < 300; ++k) all.push_back(k * 0x9E3779B97F4A7C15ULL);
  for (size_t s = 0; s < names.size(); ++s) {
    auto alone = Client::Connect(names[s]);
    auto r = alone->Get(all);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(r->found(i), model.count(all[i]) && router.shard_of(all[i]) == s)
          << "key " << all[i] << " on " << names[s];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CoalescingOnAndOff, ShardedModel, ::testing::Bool());

TEST(ShardedClient, AsyncCallsOfManyThreadsReadTheirWrites) {
  testing::keep_grpc_initialized();
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  Shards shards = start_shards(3);
  auto client = connect(shards.list());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int round = 0; round < 30; ++round) {
        std::vector<uint64_t> keys(1 + rng() % 20);
        for (auto& k : keys) k = (rng() % 1000) * 8 + t;  // this thread's keys only
        std::vector<std::string> values;
        for (uint64_t k : keys) values.push_back(absl::StrCat(k, "/", round));
        // The put and the get go out back to back, async: the get must see the put.
        std::promise<bool> put_ok, get_ok;
        client->PutAsync(keys, views(values), [&](absl::StatusOr<std::vector<bool>> r) { put_ok.set_value(r.ok()); });
        client->GetAsync(keys, false, [&](absl::StatusOr<GetResult> r) {
          bool ok = r.ok() && r->size() == keys.size();
          std::map<uint64_t, std::string> last;
          for (size_t i = 0; i < keys.size(); ++i) last[keys[i]] = values[i];
          for (size_t i = 0; ok && i < keys.size(); ++i) ok = r->found(i) && r->value(i) == last[keys[i]];
          get_ok.set_value(ok);
        });
        if (!put_ok.get_future().get() || !get_ok.get_future().get()) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ShardedClient, ADownShardFailsTheCallNamingItAndListsWhatTheOthersApplied) {
  testing::keep_grpc_initialized();
  Shards shards = start_shards(3);
  ClientOptions o;
  o.max_attempts = 1;
  o.timeout = std::chrono::milliseconds(3000);
  auto client = connect(shards.list(), o);
  const std::vector<std::string> names = client->shard_names();
  const ShardRouter router(names);
  shards.servers[1]->shutdown();
  const std::string down = shards.address(1);

  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < 30; ++k) keys.push_back(k * 7919);
  std::vector<std::string> values;
  for (uint64_t k : keys) values.push_back(absl::StrCat("v", k));
  auto r = client->Put(keys, views(values));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("shard " + down + " failed"));
  auto failure = ShardedCallFailureOf(r.status());
  ASSERT_TRUE(failure.has_value());
  ASSERT_EQ(failure->failed.size(), 1u);
  EXPECT_EQ(failure->failed[0].shard, down);
  EXPECT_EQ(failure->failed[0].status.code(), absl::StatusCode::kUnavailable);
  std::vector<uint32_t> on_down, elsewhere;
  for (uint32_t i = 0; i < keys.size(); ++i) (router.shard_of(keys[i]) == 1 ? on_down : elsewhere).push_back(i);
  ASSERT_FALSE(on_down.empty());
  ASSERT_FALSE(elsewhere.empty());
  EXPECT_EQ(failure->failed[0].keys, on_down);
  EXPECT_EQ(failure->applied, elsewhere);
  // What it says was applied was applied (no silent partial write).
  std::vector<uint64_t> applied;
  for (uint32_t i : elsewhere) applied.push_back(keys[i]);
  auto got = client->Get(applied);
  ASSERT_TRUE(got.ok()) << got.status() << ": the live shards must keep serving";
  for (size_t i = 0; i < applied.size(); ++i) {
    EXPECT_TRUE(got->found(i));
    EXPECT_EQ(got->value(i), absl::StrCat("v", applied[i]));
  }
  // A get that touches the down shard fails the same way; one that does not, succeeds.
  auto both = client->Get(keys);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(both.status().message(), HasSubstr(down));
  EXPECT_THAT(both.status().message(), HasSubstr("the other shards answered"));
  // A call all on the down shard names it too, async as well.
  const std::vector<uint64_t> only_down = keys_on(router, 1, 3);
  std::promise<absl::Status> deleted;
  client->DeleteAsync(only_down, [&](absl::StatusOr<std::vector<bool>> d) { deleted.set_value(d.status()); });
  const absl::Status d = deleted.get_future().get();
  EXPECT_EQ(d.code(), absl::StatusCode::kUnavailable) << d;
  auto df = ShardedCallFailureOf(d);
  ASSERT_TRUE(df.has_value());
  EXPECT_EQ(df->failed[0].shard, down);
  EXPECT_EQ(df->failed[0].keys, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(df->applied.empty());
  // Per-shard calls answer per shard.
  const auto health = client->Health();
  ASSERT_EQ(health.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(health[i].shard, names[i]);
    EXPECT_EQ(health[i].answer.ok(), names[i] != down) << names[i] << ": " << health[i].answer;
  }
  const auto stats = client->Stats();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(stats[i].answer.ok(), names[i] != down) << names[i];
}

TEST(ShardedClient, AShardThatRefusesItsPartFailsTheCallAndTheOthersPartsStay) {
  testing::keep_grpc_initialized();
  // Shard 0 takes values up to 16 bytes, the others 1 MiB.
  Shards shards = start_shards(3, [](int i, server::ServerOptions* o) {
    if (i == 0) o->limits.max_value_bytes = 16;
  });
  auto client = connect(shards.list());
  const ShardRouter router(client->shard_names());
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < 24; ++k) keys.push_back(k);
  const std::vector<std::string> values(keys.size(), std::string(100, 'x'));
  auto r = client->Put(keys, views(values));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  auto f = ShardedCallFailureOf(r.status());
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->failed.size(), 1u);
  EXPECT_EQ(f->failed[0].shard, shards.address(0));
  // The refusing shard changed nothing; the others applied theirs.
  auto got = client->Get(keys);
  ASSERT_TRUE(got.ok()) << got.status();
  std::set<uint32_t> applied(f->applied.begin(), f->applied.end());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(got->found(i), router.shard_of(keys[i]) != 0) << "key " << keys[i];
    EXPECT_EQ(applied.count(i) == 1, got->found(i)) << "key " << keys[i];
  }
}

TEST(ShardedClient, TwoFailedShardsAreBothNamedTheEarliestKeysStatusFirst) {
  testing::keep_grpc_initialized();
  Shards shards = start_shards(3, [](int i, server::ServerOptions* o) {
    if (i == 2) o->limits.max_value_bytes = 16;
  });
  ClientOptions o;
  o.max_attempts = 1;
  auto client = connect(shards.list(), o);
  const ShardRouter router(client->shard_names());
  shards.servers[0]->shutdown();
  // Key 0 of the call on shard 2 (refuses), then keys of shard 0 (down) and 1.
  std::vector<uint64_t> keys = keys_on(router, 2, 2);
  for (uint64_t k : keys_on(router, 0, 2)) keys.push_back(k);
  for (uint64_t k : keys_on(router, 1, 2)) keys.push_back(k);
  const std::vector<std::string> values(keys.size(), std::string(64, 'y'));
  auto r = client->Put(keys, views(values));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  auto f = ShardedCallFailureOf(r.status());
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->failed.size(), 2u);
  EXPECT_EQ(f->failed[0].shard, shards.address(2));
  EXPECT_EQ(f->failed[0].keys, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(f->failed[1].shard, shards.address(0));
  EXPECT_EQ(f->failed[1].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(f->failed[1].keys, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(f->applied, (std::vector<uint32_t>{4, 5}));
  EXPECT_THAT(r.status().message(), HasSubstr("; also shard " + shards.address(0)));
}

TEST(ShardedClient, LocalRefusalsSendNothingAndCarryNoAccount) {
  testing::keep_grpc_initialized();
  Shards shards = start_shards(2);
  auto client = connect(shards.list());
  const std::vector<uint64_t> keys = {1, 2, 3};
  auto r = client->Put(keys, std::vector<std::string_view>{"a", "b"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ShardedCallFailureOf(r.status()).has_value());
  EXPECT_FALSE(ShardedCallFailureOf(absl::OkStatus()).has_value());
  for (const auto& s : client->Stats()) EXPECT_EQ(s.answer->keys(), 0u) << s.shard;
  // An empty call goes to the first shard's client, which refuses it, named.
  auto empty = client->Get(absl::Span<const uint64_t>());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(empty.status().message()),
              HasSubstr("shard " + client->shard_names()[0] + " failed 0 of 0 keys: INVALID_ARGUMENT"));
}

TEST(ShardedClient, ADnsNameOfOneAddressIsOneShard) {
  testing::keep_grpc_initialized();
  Shards shards = start_shards(1);
  auto client = connect(absl::StrCat("dns:///localhost:", shards.servers[0]->port()));
  ASSERT_NE(client, nullptr);
  const std::vector<uint64_t> keys = {5, 6, 7};
  ASSERT_TRUE(client->Put(keys, std::vector<std::string_view>{"a", "b", "c"}).ok());
  auto r = client->Get(keys);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->value(2), "c");
  // Resolving again finds the same shard: it keeps its client and its keys.
  const std::vector<std::string> before = client->shard_names();
  EXPECT_TRUE(client->Refresh().ok());
  EXPECT_EQ(client->shard_names(), before);
  auto again = client->Get(keys);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->value(0), "a");
}

// Item fields across shards (issue 27): Write with flags and expiry on each
// key's shard, GetItems and Touch of keys on every shard merged in key order
// (values, flags, expiry, CAS), against a model; a cas with a stale version
// is ABORTED and changes nothing.
TEST(ShardedClient, ItemFieldsAcrossShardsMatchAModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  std::mt19937_64 rng(seed);
  Shards shards = start_shards(3);
  auto client = connect(shards.list());
  ASSERT_NE(client, nullptr);
  std::vector<std::string> keys;
  std::map<std::string, std::pair<std::string, uint32_t>> model;  // value, flags
  for (int i = 0; i < 30; ++i) keys.push_back(absl::StrCat("sharded:item:", i));
  for (size_t i = 0; i < keys.size(); i += 2) {  // every other key stored
    WriteOptions w;
    w.flags = static_cast<uint32_t>(rng());
    w.exptime = 1000;
    const std::string value = absl::StrCat("v", rng() % 1000);
    ASSERT_TRUE(client->Write(std::string_view(keys[i]), value, w).ok());
    model[keys[i]] = {value, w.flags};
  }
  // `expiring`: the stored items hold the expiry they were written with, not 0.
  auto check = [&](const v1::GetResponse& r, bool expiring) {
    ASSERT_EQ(r.found_size(), static_cast<int>(keys.size()));
    ASSERT_EQ(r.cas_size(), static_cast<int>(keys.size()));
    size_t offset = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const int k = static_cast<int>(i);
      auto it = model.find(keys[i]);
      ASSERT_EQ(r.found(k), it != model.end()) << keys[i];
      if (it == model.end()) {
        EXPECT_EQ(r.cas(k), 0u);
        continue;
      }
      EXPECT_EQ(r.values().substr(offset, r.value_lengths(k)), it->second.first) << keys[i];
      offset += r.value_lengths(k);
      EXPECT_EQ(r.flags(k), it->second.second) << keys[i];
      EXPECT_EQ(r.exptime(k) != 0, expiring) << keys[i];
      EXPECT_NE(r.cas(k), 0u) << keys[i];
    }
  };
  auto got = client->GetItems(views(keys));
  ASSERT_TRUE(got.ok()) << got.status();
  check(*got, true);
  // Touch to "never": every found key's expiry becomes 0, the rest unchanged.
  auto touched = client->Touch(views(keys), 0);
  ASSERT_TRUE(touched.ok()) << touched.status();
  check(*touched, true);
  auto after = client->GetItems(views(keys));
  ASSERT_TRUE(after.ok());
  for (size_t i = 0; i < keys.size(); i += 2) {
    EXPECT_EQ(after->exptime(static_cast<int>(i)), 0u) << keys[i];
    EXPECT_EQ(after->cas(static_cast<int>(i)), got->cas(static_cast<int>(i))) << keys[i];
  }
  WriteOptions stale;
  stale.mode = v1::WRITE_MODE_CAS;
  stale.cas = got->cas(0) + 1;
  EXPECT_EQ(client->Write(std::string_view(keys[0]), "x", stale).status().code(), absl::StatusCode::kAborted);
  auto again = client->GetItems(views(keys));
  ASSERT_TRUE(again.ok());
  check(*again, false);
}

}  // namespace
}  // namespace gphkv
