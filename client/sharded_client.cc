#include "gphkv/client/sharded_client.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "client/sharded_call_status.h"
#include "gphkv/client/shard_list.h"
#include "gphkv/client/shard_router.h"

namespace gphkv {

struct ShardedClient::ShardSet {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Client>> clients;  // clients[i] serves names[i]
  ShardRouter router;
};

namespace {

using ShardSet = ShardedClient::ShardSet;
using Flags = std::vector<bool>;

// What the other shards did with their keys, for failure messages.
constexpr absl::string_view kGetVerb = "answered";
constexpr absl::string_view kWriteVerb = "applied";

// A call's keys grouped by shard: part p goes to shard[p] with keys[p], in
// request order; part_of[i] is the part of the call's key i.
template <class Key>
struct Split {
  std::vector<uint32_t> part_of;
  std::vector<uint32_t> shard;
  std::vector<std::vector<Key>> keys;
  // Byte keys: a copy of the call's keys, which `keys` views. The parts
  // outlive the caller's keys (an async call returns at once, and a failure's
  // message names keys after every shard answered); a vector keeps its
  // buffer when moved, where a short std::string would not.
  std::vector<char> storage;
};

// The shard of every key when they all have one (an empty call: the first
// shard, whose client refuses it, named), else -1.
template <class Key>
int64_t single_shard(const ShardSet& set, absl::Span<const Key> keys) {
  if (keys.empty() || set.names.size() == 1) return 0;
  const size_t first = set.router.shard_of(keys[0]);
  for (size_t i = 1; i < keys.size(); ++i) {
    if (set.router.shard_of(keys[i]) != first) return -1;
  }
  return static_cast<int64_t>(first);
}

template <class Key>
Split<Key> split_keys(const ShardSet& set, absl::Span<const Key> keys) {
  Split<Key> s;
  std::vector<Key> copies;
  if constexpr (std::is_same_v<Key, std::string_view>) {
    size_t total = 0;
    for (std::string_view k : keys) total += k.size();
    s.storage.resize(total);
    copies.reserve(keys.size());
    size_t at = 0;
    for (std::string_view k : keys) {
      if (!k.empty()) std::memcpy(s.storage.data() + at, k.data(), k.size());
      copies.emplace_back(s.storage.data() + at, k.size());
      at += k.size();
    }
    keys = copies;
  }
  s.part_of.resize(keys.size());
  std::vector<int32_t> part_of_shard(set.names.size(), -1);
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t shard = set.router.shard_of(keys[i]);
    if (part_of_shard[shard] < 0) {
      part_of_shard[shard] = static_cast<int32_t>(s.shard.size());
      s.shard.push_back(static_cast<uint32_t>(shard));
      s.keys.emplace_back();
    }
    const auto part = static_cast<uint32_t>(part_of_shard[shard]);
    s.part_of[i] = part;
    s.keys[part].push_back(keys[i]);
  }
  return s;
}

// A key as a failure's message names it: a uint64 key in decimal, a byte
// key quoted, with C escapes for what is not printable.
std::string key_name(uint64_t key) { return absl::StrCat(key); }
std::string key_name(std::string_view key) {
  return absl::StrCat("\"", absl::CHexEscape(absl::string_view(key.data(), key.size())), "\"");
}

// The status of a call of `keys` keys that all went to one shard, which failed.
absl::Status one_shard_failure(const std::string& shard, const absl::Status& status, size_t keys,
                               absl::string_view verb) {
  ShardedCallFailure f;
  f.failed.push_back({shard, status, std::vector<uint32_t>(keys)});
  for (uint32_t i = 0; i < keys; ++i) f.failed[0].keys[i] = i;
  return detail::ShardedCallStatus(f, keys, {}, verb);
}

// `done` for the one shard that holds every key of a call: names the shard
// in a failure. Keeps the shard set alive while the call runs.
template <class R>
std::function<void(absl::StatusOr<R>)> name_shard_on_failure(std::shared_ptr<const ShardSet> set, size_t shard,
                                                             size_t keys, absl::string_view verb,
                                                             std::function<void(absl::StatusOr<R>)> done) {
  return [set = std::move(set), shard, keys, verb, done = std::move(done)](absl::StatusOr<R> r) {
    if (!r.ok()) r = one_shard_failure(set->names[shard], r.status(), keys, verb);
    done(std::move(r));
  };
}

template <class Key>
GetResult merge(const Split<Key>& split, std::vector<absl::StatusOr<GetResult>>& parts) {
  const size_t n = split.part_of.size();
  v1::GetResponse merged;
  uint64_t bytes = 0;
  for (const auto& p : parts) bytes += p->value_bytes();
  merged.mutable_found()->Reserve(static_cast<int>(n));
  merged.mutable_value_lengths()->Reserve(static_cast<int>(n));
  merged.mutable_values()->reserve(bytes);
  std::vector<uint32_t> next(parts.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t part = split.part_of[i];
    const GetResult& r = *parts[part];
    const uint32_t at = next[part]++;
    const std::string_view v = r.value(at);
    merged.add_found(r.found(at));
    merged.add_value_lengths(static_cast<uint32_t>(v.size()));
    merged.mutable_values()->append(v.data(), v.size());
  }
  return GetResult(std::move(merged));
}

template <class Key>
Flags merge(const Split<Key>& split, std::vector<absl::StatusOr<Flags>>& parts) {
  Flags merged(split.part_of.size());
  std::vector<uint32_t> next(parts.size(), 0);
  for (size_t i = 0; i < merged.size(); ++i) {
    const uint32_t part = split.part_of[i];
    const Flags& f = *parts[part];
    const uint32_t at = next[part]++;
    merged[i] = f[at];
  }
  return merged;
}

// A call in flight on several shards: collects each part's answer; the last
// one merges them, or reports the failed parts, and runs `done`.
template <class R, class Key>
class FanOut {
 public:
  FanOut(std::shared_ptr<const ShardSet> set, Split<Key> split, absl::string_view verb,
         std::function<void(absl::StatusOr<R>)> done)
      : set_(std::move(set)),
        split_(std::move(split)),
        verb_(verb),
        done_(std::move(done)),
        answers_(split_.shard.size()),
        left_(split_.shard.size()) {}

  const Split<Key>& split() const { return split_; }
  Client& client(size_t part) const { return *set_->clients[split_.shard[part]]; }

  // Part `part`'s answer; each part answers once, on any thread. An answer
  // of the wrong length is the shard's failure, not a merge past its end.
  void answer(size_t part, absl::StatusOr<R> r) {
    if (r.ok() && r->size() != split_.keys[part].size()) {
      r = absl::InternalError(
          absl::StrCat("the shard answered ", r->size(), " results for ", split_.keys[part].size(), " keys"));
    }
    answers_[part] = std::move(r);
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  }

 private:
  void finish() {
    bool all_ok = true;
    for (const auto& a : answers_) all_ok &= a.ok();
    if (all_ok) {
      done_(merge(split_, answers_));
      return;
    }
    // The account: failed parts in the order of their first key, and the
    // keys of the parts that succeeded (indices, and values for the message).
    ShardedCallFailure f;
    std::vector<std::string> applied_keys;  // the first few, named
    std::vector<int32_t> failed_index(answers_.size(), -1);
    std::vector<uint32_t> next(answers_.size(), 0);
    const auto n = static_cast<uint32_t>(split_.part_of.size());
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t part = split_.part_of[i];
      const Key& key = split_.keys[part][next[part]++];
      if (answers_[part].ok()) {
        f.applied.push_back(i);
        if (applied_keys.size() < detail::kKeysNamed) applied_keys.push_back(key_name(key));
        continue;
      }
      if (failed_index[part] < 0) {
        failed_index[part] = static_cast<int32_t>(f.failed.size());
        f.failed.push_back({set_->names[split_.shard[part]], answers_[part].status(), {}});
      }
      f.failed[failed_index[part]].keys.push_back(i);
    }
    done_(detail::ShardedCallStatus(f, n, applied_keys, verb_));
  }

  const std::shared_ptr<const ShardSet> set_;
  const Split<Key> split_;
  const absl::string_view verb_;
  const std::function<void(absl::StatusOr<R>)> done_;
  std::vector<absl::StatusOr<R>> answers_;
  std::atomic<size_t> left_;
};

// Sends every part of a call: `send(fan_out, part, on_answer)`.
template <class R, class Key, class Send>
void fan_out(std::shared_ptr<const ShardSet> set, Split<Key> split, absl::string_view verb,
             std::function<void(absl::StatusOr<R>)> done, Send&& send) {
  auto call = std::make_shared<FanOut<R, Key>>(std::move(set), std::move(split), verb, std::move(done));
  for (size_t part = 0; part < call->split().shard.size(); ++part) {
    send(*call, part, [call, part](absl::StatusOr<R> r) { call->answer(part, std::move(r)); });
  }
}

// A sync call: `one(client)` on the shard that holds every key (the
// Client's own sync call, on this thread), else `start(done)`, the async
// call across shards, waited for.
template <class R, class Key, class One, class Start>
absl::StatusOr<R> sync_call(const ShardSet& set, absl::Span<const Key> keys, absl::string_view verb, One&& one,
                            Start&& start) {
  if (const int64_t shard = single_shard(set, keys); shard >= 0) {
    absl::StatusOr<R> r = one(*set.clients[shard]);
    if (!r.ok()) return one_shard_failure(set.names[shard], r.status(), keys.size(), verb);
    return r;
  }
  std::promise<absl::StatusOr<R>> answer;
  std::future<absl::StatusOr<R>> got = answer.get_future();
  start(std::function<void(absl::StatusOr<R>)>([&answer](absl::StatusOr<R> r) { answer.set_value(std::move(r)); }));
  return got.get();
}

// Clients for the shards of `list`; those `reuse` has already are shared.
std::shared_ptr<const ShardSet> make_shard_set(const ShardList& list, const ClientOptions& options,
                                               const std::shared_ptr<const ShardSet>& reuse = nullptr) {
  auto set = std::make_shared<ShardSet>(ShardSet{list.shards, {}, ShardRouter(list.shards)});
  ClientOptions o = options;
  o.tls = ShardTlsOptions(list, options.tls);
  for (const std::string& name : list.shards) {
    std::shared_ptr<Client> client;
    if (reuse) {
      for (size_t i = 0; i < reuse->names.size() && !client; ++i) {
        if (reuse->names[i] == name) client = reuse->clients[i];
      }
    }
    set->clients.push_back(client ? std::move(client) : std::shared_ptr<Client>(Client::Connect(name, o)));
  }
  return set;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedClient>> ShardedClient::Connect(const std::string& servers,
                                                                      ClientOptions options) {
  auto list = ResolveShardList(servers);
  if (!list.ok()) return list.status();
  auto set = make_shard_set(*list, options);
  return std::unique_ptr<ShardedClient>(new ShardedClient(servers, std::move(options), std::move(set)));
}

ShardedClient::ShardedClient(std::string servers, ClientOptions options, std::shared_ptr<const ShardSet> shards)
    : servers_(std::move(servers)), options_(std::move(options)), shards_(std::move(shards)) {}

ShardedClient::~ShardedClient() {
  // A call holds the shard set (and so its clients) until its callback has
  // returned, a little after the application's `done` ran. Were the last
  // reference dropped there, a Client would be destroyed on its own gRPC
  // thread, and its destructor waits for that thread's streams to finish: a
  // deadlock (seen in ClientOrder's tests, a client per thread over two
  // shards). So the set goes here, on the destroying thread, once no call
  // holds it: at once when the application waited for its answers; a call
  // still in flight is waited for (it ends by its deadline at the latest).
  auto release_here = [](std::shared_ptr<const ShardSet>& set) {
    while (set && set.use_count() > 1) std::this_thread::sleep_for(std::chrono::microseconds(100));
    set.reset();
  };
  std::shared_ptr<const ShardSet> current = std::atomic_exchange(&shards_, std::shared_ptr<const ShardSet>());
  release_here(current);
  std::lock_guard<std::mutex> lock(refresh_mu_);
  for (auto& r : retired_) release_here(r);
}

std::shared_ptr<const ShardedClient::ShardSet> ShardedClient::shards() const {
  // Every call reads it; only Refresh writes it: no lock on the calls' path.
  return std::atomic_load(&shards_);
}

std::vector<std::string> ShardedClient::shard_names() const { return shards()->names; }

std::string ShardedClient::shard_of(uint64_t key) const {
  auto set = shards();
  return set->names[set->router.shard_of(key)];
}

std::string ShardedClient::shard_of(std::string_view key) const {
  auto set = shards();
  return set->names[set->router.shard_of(key)];
}

absl::Status ShardedClient::Refresh() {
  auto list = ResolveShardList(servers_);
  if (!list.ok()) return list.status();
  std::lock_guard<std::mutex> lock(refresh_mu_);
  const auto current = shards();
  if (list->shards == current->names) return absl::OkStatus();
  auto set = make_shard_set(*list, options_, current);
  // A replaced set may still carry calls (they hold it); it is freed here,
  // by a later Refresh, once none does, never on a call's gRPC thread (a
  // Client must not be destroyed from its own callbacks).
  retired_.push_back(std::atomic_exchange(&shards_, std::move(set)));
  std::vector<std::shared_ptr<const ShardSet>> still_used;
  for (auto& r : retired_) {
    if (r.use_count() > 1) still_used.push_back(std::move(r));
  }
  retired_ = std::move(still_used);
  return absl::OkStatus();
}

absl::StatusOr<GetResult> ShardedClient::Get(absl::Span<const uint64_t> keys, bool exists_only) {
  return get(keys, exists_only);
}
absl::StatusOr<GetResult> ShardedClient::Get(absl::Span<const std::string_view> keys, bool exists_only) {
  return get(keys, exists_only);
}
absl::StatusOr<std::vector<bool>> ShardedClient::Put(absl::Span<const uint64_t> keys,
                                                     absl::Span<const std::string_view> values) {
  return put(keys, values);
}
absl::StatusOr<std::vector<bool>> ShardedClient::Put(absl::Span<const std::string_view> keys,
                                                     absl::Span<const std::string_view> values) {
  return put(keys, values);
}
absl::StatusOr<std::vector<bool>> ShardedClient::Delete(absl::Span<const uint64_t> keys) { return remove(keys); }
absl::StatusOr<std::vector<bool>> ShardedClient::Delete(absl::Span<const std::string_view> keys) {
  return remove(keys);
}
absl::StatusOr<v1::PutResponse> ShardedClient::Write(uint64_t key, std::string_view value, v1::WriteMode mode) {
  auto set = shards();
  return set->clients[set->router.shard_of(key)]->Write(key, value, mode);
}
absl::StatusOr<v1::PutResponse> ShardedClient::Write(std::string_view key, std::string_view value, v1::WriteMode mode) {
  auto set = shards();
  return set->clients[set->router.shard_of(key)]->Write(key, value, mode);
}
absl::StatusOr<v1::PutResponse> ShardedClient::Write(std::string_view key, std::string_view value,
                                                     const WriteOptions& options) {
  auto set = shards();
  return set->clients[set->router.shard_of(key)]->Write(key, value, options);
}
absl::StatusOr<v1::GetResponse> ShardedClient::GetItems(absl::Span<const std::string_view> keys) {
  return items_by_shard(keys, [](Client& c, absl::Span<const std::string_view> k) { return c.GetItems(k); });
}
absl::StatusOr<v1::GetResponse> ShardedClient::Touch(absl::Span<const std::string_view> keys, int64_t exptime) {
  return items_by_shard(keys,
                        [exptime](Client& c, absl::Span<const std::string_view> k) { return c.Touch(k, exptime); });
}

absl::StatusOr<v1::GetResponse> ShardedClient::items_by_shard(
    absl::Span<const std::string_view> keys,
    const std::function<absl::StatusOr<v1::GetResponse>(Client&, absl::Span<const std::string_view>)>& ask) {
  auto set = shards();
  std::vector<std::vector<size_t>> at(set->clients.size());
  for (size_t i = 0; i < keys.size(); ++i) at[set->router.shard_of(keys[i])].push_back(i);
  const int n = static_cast<int>(keys.size());
  v1::GetResponse out;
  out.mutable_found()->Resize(n, false);
  out.mutable_value_lengths()->Resize(n, 0);
  out.mutable_flags()->Resize(n, 0);
  out.mutable_exptime()->Resize(n, 0);
  out.mutable_cas()->Resize(n, 0);
  std::vector<std::string_view> values(keys.size());
  std::vector<v1::GetResponse> answers(set->clients.size());
  for (size_t s = 0; s < at.size(); ++s) {
    if (at[s].empty()) continue;
    std::vector<std::string_view> shard_keys;
    for (size_t i : at[s]) shard_keys.push_back(keys[i]);
    absl::StatusOr<v1::GetResponse> r = ask(*set->clients[s], shard_keys);
    if (!r.ok()) return r.status();
    answers[s] = *std::move(r);
    const v1::GetResponse& a = answers[s];
    size_t offset = 0;
    for (size_t j = 0; j < at[s].size() && static_cast<int>(j) < a.found_size(); ++j) {
      const int i = static_cast<int>(at[s][j]);
      const int k = static_cast<int>(j);
      out.set_found(i, a.found(k));
      out.set_value_lengths(i, a.value_lengths(k));
      if (k < a.cas_size()) {
        out.set_flags(i, a.flags(k));
        out.set_exptime(i, a.exptime(k));
        out.set_cas(i, a.cas(k));
      }
      values[static_cast<size_t>(i)] = std::string_view(a.values()).substr(offset, a.value_lengths(k));
      offset += a.value_lengths(k);
    }
  }
  for (const std::string_view v : values) out.mutable_values()->append(v);
  return out;
}

void ShardedClient::GetAsync(absl::Span<const uint64_t> keys, bool exists_only,
                             std::function<void(absl::StatusOr<GetResult>)> done) {
  get_async(keys, exists_only, std::move(done));
}
void ShardedClient::GetAsync(absl::Span<const std::string_view> keys, bool exists_only,
                             std::function<void(absl::StatusOr<GetResult>)> done) {
  get_async(keys, exists_only, std::move(done));
}
void ShardedClient::PutAsync(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values,
                             std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  put_async(keys, values, std::move(done));
}
void ShardedClient::PutAsync(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                             std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  put_async(keys, values, std::move(done));
}
void ShardedClient::DeleteAsync(absl::Span<const uint64_t> keys,
                                std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  delete_async(keys, std::move(done));
}
void ShardedClient::DeleteAsync(absl::Span<const std::string_view> keys,
                                std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  delete_async(keys, std::move(done));
}

template <class Key>
absl::StatusOr<GetResult> ShardedClient::get(absl::Span<const Key> keys, bool exists_only) {
  return sync_call<GetResult>(
      *shards(), keys, kGetVerb, [&](Client& c) { return c.Get(keys, exists_only); },
      [&](auto done) { get_async(keys, exists_only, std::move(done)); });
}

template <class Key>
absl::StatusOr<std::vector<bool>> ShardedClient::put(absl::Span<const Key> keys,
                                                     absl::Span<const std::string_view> values) {
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Put: ", keys.size(), " keys but ", values.size(), " values"));
  }
  return sync_call<Flags>(
      *shards(), keys, kWriteVerb, [&](Client& c) { return c.Put(keys, values); },
      [&](auto done) { put_async(keys, values, std::move(done)); });
}

template <class Key>
absl::StatusOr<std::vector<bool>> ShardedClient::remove(absl::Span<const Key> keys) {
  return sync_call<Flags>(
      *shards(), keys, kWriteVerb, [&](Client& c) { return c.Delete(keys); },
      [&](auto done) { delete_async(keys, std::move(done)); });
}

template <class Key>
void ShardedClient::get_async(absl::Span<const Key> keys, bool exists_only,
                              std::function<void(absl::StatusOr<GetResult>)> done) {
  auto set = shards();
  if (const int64_t shard = single_shard(*set, keys); shard >= 0) {
    Client& client = *set->clients[shard];
    client.GetAsync(keys, exists_only,
                    name_shard_on_failure(std::move(set), shard, keys.size(), kGetVerb, std::move(done)));
    return;
  }
  Split<Key> split = split_keys(*set, keys);
  fan_out<GetResult>(std::move(set), std::move(split), kGetVerb, std::move(done),
                     [exists_only](FanOut<GetResult, Key>& call, size_t part, auto on_answer) {
                       call.client(part).GetAsync(call.split().keys[part], exists_only, std::move(on_answer));
                     });
}

template <class Key>
void ShardedClient::put_async(absl::Span<const Key> keys, absl::Span<const std::string_view> values,
                              std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  if (keys.size() != values.size()) {
    done(absl::InvalidArgumentError(absl::StrCat("PutAsync: ", keys.size(), " keys but ", values.size(), " values")));
    return;
  }
  auto set = shards();
  if (const int64_t shard = single_shard(*set, keys); shard >= 0) {
    Client& client = *set->clients[shard];
    client.PutAsync(keys, values,
                    name_shard_on_failure(std::move(set), shard, keys.size(), kWriteVerb, std::move(done)));
    return;
  }
  Split<Key> split = split_keys(*set, keys);
  // Each part's values, in its keys' order (Client copies them into its
  // request before PutAsync returns).
  std::vector<std::vector<std::string_view>> part_values(split.shard.size());
  for (size_t i = 0; i < values.size(); ++i) part_values[split.part_of[i]].push_back(values[i]);
  fan_out<Flags>(std::move(set), std::move(split), kWriteVerb, std::move(done),
                 [&part_values](FanOut<Flags, Key>& call, size_t part, auto on_answer) {
                   call.client(part).PutAsync(call.split().keys[part], part_values[part], std::move(on_answer));
                 });
}

template <class Key>
void ShardedClient::delete_async(absl::Span<const Key> keys,
                                 std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  auto set = shards();
  if (const int64_t shard = single_shard(*set, keys); shard >= 0) {
    Client& client = *set->clients[shard];
    client.DeleteAsync(keys, name_shard_on_failure(std::move(set), shard, keys.size(), kWriteVerb, std::move(done)));
    return;
  }
  Split<Key> split = split_keys(*set, keys);
  fan_out<Flags>(std::move(set), std::move(split), kWriteVerb, std::move(done),
                 [](FanOut<Flags, Key>& call, size_t part, auto on_answer) {
                   call.client(part).DeleteAsync(call.split().keys[part], std::move(on_answer));
                 });
}

template <class T>
std::vector<ShardAnswer<T>> ShardedClient::ask_each(const std::function<T(Client&)>& ask) {
  auto set = shards();
  std::vector<std::future<T>> pending;
  for (const auto& client : set->clients) {
    pending.push_back(std::async(std::launch::async, [&ask, client] { return ask(*client); }));
  }
  std::vector<ShardAnswer<T>> answers;
  for (size_t i = 0; i < pending.size(); ++i) answers.push_back({set->names[i], pending[i].get()});
  return answers;
}

std::vector<ShardAnswer<absl::StatusOr<v1::StatsResponse>>> ShardedClient::Stats() {
  return ask_each<absl::StatusOr<v1::StatsResponse>>([](Client& c) { return c.Stats(); });
}

std::vector<ShardAnswer<absl::StatusOr<v1::ShrinkResponse>>> ShardedClient::Shrink() {
  return ask_each<absl::StatusOr<v1::ShrinkResponse>>([](Client& c) { return c.Shrink(); });
}

std::vector<ShardAnswer<absl::Status>> ShardedClient::Health() {
  return ask_each<absl::Status>([](Client& c) { return c.Health(); });
}

uint64_t ShardedClient::coalesced_messages() const {
  uint64_t n = 0;
  for (const auto& c : shards()->clients) n += c->coalesced_messages();
  return n;
}

uint64_t ShardedClient::coalesced_requests() const {
  uint64_t n = 0;
  for (const auto& c : shards()->clients) n += c->coalesced_requests();
  return n;
}

}  // namespace gphkv
