// The client's ordering promise (client.h): a thread's requests take effect
// in the order it issued them, under every option the client has. Each
// thread works on keys no other thread touches, so a model of the thread's
// own requests, applied in the order it issued them, says exactly what every
// answer must be: a get sees the thread's last put (or nothing after its
// delete), a put's `created` and a delete's `deleted` say whether the key was
// there. Threads issue sync and async calls interleaved without waiting for
// the async ones, over coalescing on and off, 1, 2 and 4 streams, one shared
// client and a client per thread, one server and two shards. Random
// operations from a fresh seed (GPHKV_TEST_SEED replays one).
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gphkv/client/sharded_client.h"
#include "tests/loadgen/test_seed.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using loadgen::testing::TestSeed;

const bool kGrpcKept = (testing::keep_grpc_initialized(), true);

constexpr int kThreads = 6;
constexpr int kOpsPerThread = 300;
constexpr int kKeysPerThread = 6;

// Thread t's keys; thread 0 owns key 0 and thread 1 the largest key.
uint64_t key_of(int thread, int i) {
  if (thread == 0 && i == 0) return 0;
  if (thread == 1 && i == 0) return UINT64_MAX;
  return (uint64_t{1} << 40) * static_cast<uint64_t>(thread + 1) + static_cast<uint64_t>(i);
}

// What one thread's requests, applied in order, leave: key -> value.
using Model = std::map<uint64_t, std::string>;

// One answer's check, recorded where it arrived (any thread) and counted
// after the run.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  int violations = 0;
  std::vector<std::string> first;  // the first few, to print

  void issued() {
    std::lock_guard<std::mutex> lock(mu);
    ++pending;
  }
  void settle(std::string problem) {
    std::lock_guard<std::mutex> lock(mu);
    if (!problem.empty()) {
      ++violations;
      if (first.size() < 5) first.push_back(std::move(problem));
    }
    --pending;
    cv.notify_all();
  }
  void wait_all() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
};

// What a get of `keys` must answer, from the model at issue time.
struct ExpectedGet {
  std::vector<uint64_t> keys;
  std::vector<std::optional<std::string>> values;
  bool exists_only = false;

  std::string check(const absl::StatusOr<GetResult>& r, const std::string& what) const {
    if (!r.ok()) return absl::StrCat(what, ": ", r.status().ToString());
    if (r->size() != keys.size()) return absl::StrCat(what, ": ", r->size(), " answers for ", keys.size(), " keys");
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool want = values[i].has_value();
      if (r->found(i) != want) {
        return absl::StrCat(what, ": key ", keys[i],
                            want ? " missing, expected " + *values[i] : " found, expected none");
      }
      if (want && !exists_only && r->value(i) != *values[i]) {
        return absl::StrCat(what, ": key ", keys[i], " has ", std::string(r->value(i)), ", expected ", *values[i]);
      }
    }
    return "";
  }
};

std::string check_flags(const absl::StatusOr<std::vector<bool>>& r, const std::vector<bool>& want,
                        const std::string& what) {
  if (!r.ok()) return absl::StrCat(what, ": ", r.status().ToString());
  if (*r != want) {
    return absl::StrCat(what, ": flags ", absl::StrJoin(*r, ""), ", expected ", absl::StrJoin(want, ""));
  }
  return "";
}

enum class Op { kPutAsync, kGetAsync, kExistsAsync, kDeleteAsync, kPut, kGet, kDelete };

// One thread's run: kOpsPerThread random requests on its own keys, async ones
// not waited for, each answer checked against the model as it stood when the
// request was issued.
template <class C>
void run_thread(C& client, int thread, uint64_t seed, Outcome* out) {
  std::mt19937_64 rng(seed);
  Model model;
  auto pick_keys = [&](size_t most) {
    std::vector<int> order(kKeysPerThread);
    for (int i = 0; i < kKeysPerThread; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    const size_t n = 1 + rng() % most;
    std::vector<uint64_t> keys;
    for (size_t i = 0; i < n; ++i) keys.push_back(key_of(thread, order[i]));
    return keys;
  };
  auto expect_get = [&](const std::vector<uint64_t>& keys, bool exists_only) {
    ExpectedGet e{keys, {}, exists_only};
    for (uint64_t k : keys) {
      auto it = model.find(k);
      e.values.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    return e;
  };
  for (int i = 0; i < kOpsPerThread; ++i) {
    const Op op = static_cast<Op>(rng() % 7);
    const std::string what = absl::StrCat("thread ", thread, " request ", i);
    switch (op) {
      case Op::kPut:
      case Op::kPutAsync: {
        const auto keys = pick_keys(3);
        std::vector<std::string> values;
        std::vector<bool> created;
        for (uint64_t k : keys) {
          values.push_back(absl::StrCat("t", thread, "r", i, "k", k));
          created.push_back(model.count(k) == 0);
          model[k] = values.back();
        }
        const std::vector<std::string_view> views(values.begin(), values.end());
        if (op == Op::kPut) {
          if (auto p = check_flags(client.Put(keys, views), created, what + " (put)"); !p.empty()) {
            out->issued();
            out->settle(std::move(p));
          }
        } else {
          out->issued();
          client.PutAsync(keys, views, [out, created, what](absl::StatusOr<std::vector<bool>> r) {
            out->settle(check_flags(r, created, what + " (async put)"));
          });
        }
        break;
      }
      case Op::kDelete:
      case Op::kDeleteAsync: {
        const auto keys = pick_keys(2);
        std::vector<bool> deleted;
        for (uint64_t k : keys) deleted.push_back(model.erase(k) == 1);
        if (op == Op::kDelete) {
          if (auto p = check_flags(client.Delete(keys), deleted, what + " (delete)"); !p.empty()) {
            out->issued();
            out->settle(std::move(p));
          }
        } else {
          out->issued();
          client.DeleteAsync(keys, [out, deleted, what](absl::StatusOr<std::vector<bool>> r) {
            out->settle(check_flags(r, deleted, what + " (async delete)"));
          });
        }
        break;
      }
      case Op::kGet: {
        const ExpectedGet e = expect_get(pick_keys(4), false);
        if (auto p = e.check(client.Get(e.keys), what + " (get)"); !p.empty()) {
          out->issued();
          out->settle(std::move(p));
        }
        break;
      }
      case Op::kGetAsync:
      case Op::kExistsAsync: {
        const bool exists_only = op == Op::kExistsAsync;
        ExpectedGet e = expect_get(pick_keys(4), exists_only);
        out->issued();
        const std::vector<uint64_t> keys = e.keys;
        client.GetAsync(keys, exists_only, [out, e = std::move(e), what](absl::StatusOr<GetResult> r) {
          out->settle(e.check(r, what + " (async get)"));
        });
        break;
      }
    }
  }
}

struct Shape {
  bool coalesce;
  int streams;
  bool shared_client;
  int shards;
};

std::string describe(const Shape& s) {
  return absl::StrCat(s.coalesce ? absl::StrCat("Coalesced", s.streams, "Streams") : "Unary",
                      s.shared_client ? "SharedClient" : "ClientPerThread", s.shards, "Shards");
}
std::string shape_name(const ::testing::TestParamInfo<Shape>& info) { return describe(info.param); }
void PrintTo(const Shape& s, std::ostream* os) { *os << describe(s); }

class ClientOrder : public ::testing::TestWithParam<Shape> {};

// Runs kThreads threads over `make()`'s clients (one shared, or one each).
template <class C>
int run_threads(const std::function<std::unique_ptr<C>()>& make, bool shared, uint64_t seed, Outcome* out) {
  std::unique_ptr<C> one = shared ? make() : nullptr;
  std::vector<std::unique_ptr<C>> own(kThreads);
  if (!shared) {
    for (auto& c : own) c = make();
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { run_thread(shared ? *one : *own[t], t, seed + static_cast<uint64_t>(t), out); });
  }
  for (auto& th : threads) th.join();
  out->wait_all();  // before the clients go: their callbacks touch `out`
  return out->violations;
}

TEST_P(ClientOrder, EveryThreadReadsItsOwnWritesInOrder) {
  const Shape shape = GetParam();
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  std::vector<std::unique_ptr<server::Server>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < shape.shards; ++i) {
    servers.push_back(testing::start_server());
    ASSERT_NE(servers.back(), nullptr);
    addresses.push_back(absl::StrCat("127.0.0.1:", servers.back()->port()));
  }
  ClientOptions o;
  o.coalesce.enabled = shape.coalesce;
  o.coalesce.streams = shape.streams;
  Outcome out;
  if (shape.shards == 1) {
    run_threads<Client>([&] { return Client::Connect(addresses[0], o); }, shape.shared_client, seed, &out);
  } else {
    run_threads<ShardedClient>(
        [&] {
          auto c = ShardedClient::Connect(absl::StrJoin(addresses, ","), o);
          EXPECT_TRUE(c.ok()) << c.status();
          return c.ok() ? std::move(*c) : nullptr;
        },
        shape.shared_client, seed, &out);
  }
  EXPECT_EQ(out.violations, 0) << out.violations << " of " << kThreads * kOpsPerThread
                               << " requests broke their thread's order; the first:\n"
                               << absl::StrJoin(out.first, "\n");
}

std::vector<Shape> every_shape() {
  std::vector<Shape> shapes;
  for (int shards : {1, 2}) {
    for (bool shared : {true, false}) {
      shapes.push_back({false, 1, shared, shards});
      for (int streams : {1, 2, 4}) shapes.push_back({true, streams, shared, shards});
    }
  }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(EveryOption, ClientOrder, ::testing::ValuesIn(every_shape()), shape_name);

// A Pipeline stream applies its operations in the order they were sent:
// each thread sends on a stream of its own, without waiting, and checks every
// answer (matched by id) against the model at send time.
TEST(ClientOrderPipeline, EachStreamAppliesItsOperationsInTheOrderSent) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(absl::StrCat("GPHKV_TEST_SEED=", seed));
  auto server = testing::start_server();
  ASSERT_NE(server, nullptr);
  auto client = testing::connect(*server);
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      auto stream = client->OpenPipeline();
      Model model;
      // By id: what the answer must hold.
      std::map<uint64_t, std::pair<ExpectedGet, std::vector<bool>>> expected;
      for (int i = 0; i < kOpsPerThread; ++i) {
        const uint64_t key = key_of(t, static_cast<int>(rng() % kKeysPerThread));
        const std::vector<uint64_t> keys{key};
        const int kind = static_cast<int>(rng() % 3);
        absl::StatusOr<uint64_t> id;
        ExpectedGet get{keys, {}, false};
        std::vector<bool> flags;
        if (kind == 0) {
          const std::string v = absl::StrCat("p", t, "r", i);
          flags.push_back(model.count(key) == 0);
          model[key] = v;
          id = stream->SendPut(keys, std::vector<std::string_view>{v});
        } else if (kind == 1) {
          flags.push_back(model.erase(key) == 1);
          id = stream->SendDelete(keys);
        } else {
          auto it = model.find(key);
          get.values.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
          id = stream->SendGet(keys);
        }
        ASSERT_TRUE(id.ok()) << id.status();
        expected.emplace(*id, std::make_pair(std::move(get), std::move(flags)));
      }
      for (size_t n = 0; n < expected.size(); ++n) {
        auto r = stream->Receive();
        ASSERT_TRUE(r.ok()) << r.status();
        auto it = expected.find(r->id());
        ASSERT_NE(it, expected.end()) << "answer to an id never sent: " << r->id();
        const auto& [get, flags] = it->second;
        std::string problem;
        if (r->has_get()) {
          problem = get.check(GetResult(r->get()), absl::StrCat("thread ", t, " id ", r->id()));
        } else if (r->has_put()) {
          problem = check_flags(std::vector<bool>(r->put().created().begin(), r->put().created().end()), flags,
                                absl::StrCat("thread ", t, " put id ", r->id()));
        } else if (r->has_delete_()) {
          problem = check_flags(std::vector<bool>(r->delete_().deleted().begin(), r->delete_().deleted().end()), flags,
                                absl::StrCat("thread ", t, " delete id ", r->id()));
        } else {
          problem = absl::StrCat("thread ", t, " id ", r->id(), ": no answer body (", r->ShortDebugString(), ")");
        }
        if (!problem.empty() && violations.fetch_add(1) < 5) ADD_FAILURE() << problem;
      }
      EXPECT_TRUE(stream->Close().ok());
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0);
}

}  // namespace
}  // namespace gphkv
