// gphkv::ShardedClient: one client over many gphkv-server shards.
//
//   auto c = gphkv::ShardedClient::Connect("10.0.0.1:50051,10.0.0.2:50051");    // or "dns:///gphkv-shards:50051"
//   auto created = (*c)->Put(keys, values);   // the same calls as gphkv::Client
//   if (!created.ok()) {
//     if (auto f = gphkv::ShardedCallFailureOf(created.status())) { ... f->failed, f->applied ... }
//   }
//
// Each key belongs to one shard, chosen by rendezvous hashing over the shard
// names (shard_router.h); the shards come from a server list (shard_list.h).
// Each shard is reached through its own gphkv::Client, with the options
// given (coalescing, deadlines, retries, TLS).
//
// A call is split by shard: each shard's keys, in request order, go to it as
// one request, all shards' requests at once; the answers are merged back in
// request order. A call whose keys all live on one shard is that shard's
// call, nothing added.
//
// Across shards (docs/service.md, "Many shards"):
// - Each shard's part is applied as one call of that shard, with that
//   server's guarantees (order per key, read-your-writes, refusals change
//   nothing). Duplicate keys land on one shard, so their rules hold too.
// - Parts on different shards are independent: the call is not atomic. If
//   any shard's part fails, the call fails with the status of the failed
//   shard that holds the call's earliest failed key, its message naming
//   every failed shard and the keys the other shards applied (for a get:
//   answered). The status carries the whole account as a payload:
//   ShardedCallFailureOf(status) lists, by index into the call's keys, the
//   keys of each failed shard and the keys applied elsewhere. Nothing
//   applied goes unreported; a failed shard's part may itself have been
//   applied when its status says so (UNAVAILABLE on a broken connection:
//   "may have taken effect"), exactly as with gphkv::Client.
// - A thread's calls to one key take effect in the order it made them (they
//   all go to the key's shard, through that shard's client).
// Byte keys (docs/byte-keys.md) are routed by their bytes (ShardRouter), and
// a call of byte keys is split and merged the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/client/client.h"

namespace gphkv {

// What a call that failed on one or more shards did, from its status.
struct ShardedCallFailure {
  struct FailedShard {
    std::string shard;           // e.g. "10.0.0.2:50051"
    absl::Status status;         // that shard's answer
    std::vector<uint32_t> keys;  // indices into the call's keys routed to it
  };
  std::vector<FailedShard> failed;  // ordered by each shard's first key in the call
  // Indices into the call's keys whose shard's part succeeded (a put's or
  // delete's: applied; a get's: answered), in request order.
  std::vector<uint32_t> applied;
};

// The account a failed ShardedClient call carries; nullopt for any other
// status (OK, or a refusal made before anything was sent, such as a put
// with more keys than values).
std::optional<ShardedCallFailure> ShardedCallFailureOf(const absl::Status& status);

// One shard's answer to a per-shard call (Stats, Shrink, Health).
template <class T>
struct ShardAnswer {
  std::string shard;
  T answer;
};

class ShardedClient {
 public:
  // `servers`: a server list (shard_list.h). Connects lazily, as Client does;
  // fails only when the list is malformed or its DNS name does not resolve.
  static absl::StatusOr<std::unique_ptr<ShardedClient>> Connect(const std::string& servers, ClientOptions options = {});
  ~ShardedClient();

  // The shards, as ShardList gives them, and the one that holds `key`.
  std::vector<std::string> shard_names() const;
  std::string shard_of(uint64_t key) const;
  std::string shard_of(std::string_view key) const;

  // As gphkv::Client's, across shards (the header comment says how).
  absl::StatusOr<GetResult> Get(absl::Span<const uint64_t> keys, bool exists_only = false);
  absl::StatusOr<std::vector<bool>> Put(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  absl::StatusOr<std::vector<bool>> Delete(absl::Span<const uint64_t> keys);
  absl::StatusOr<GetResult> Get(absl::Span<const std::string_view> keys, bool exists_only = false);
  absl::StatusOr<std::vector<bool>> Put(absl::Span<const std::string_view> keys,
                                        absl::Span<const std::string_view> values);
  absl::StatusOr<std::vector<bool>> Delete(absl::Span<const std::string_view> keys);
  // Client::Write on the shard that holds `key`; its refusals (ALREADY_EXISTS,
  // NOT_FOUND, ...) come back as that shard gave them.
  absl::StatusOr<v1::PutResponse> Write(uint64_t key, std::string_view value, v1::WriteMode mode);
  absl::StatusOr<v1::PutResponse> Write(std::string_view key, std::string_view value, v1::WriteMode mode);
  absl::StatusOr<v1::PutResponse> Write(std::string_view key, std::string_view value, const WriteOptions& options);
  // Client::GetItems and Client::Touch, each shard asked for its keys in
  // turn, the answers merged into one response in key order; the first
  // shard's refusal is the call's (the shards asked before it were touched).
  absl::StatusOr<v1::GetResponse> GetItems(absl::Span<const std::string_view> keys);
  absl::StatusOr<v1::GetResponse> Touch(absl::Span<const std::string_view> keys, int64_t exptime);

  // `done` runs once, on a gRPC thread, when every shard has answered. The
  // ShardedClient must outlive the calls.
  void GetAsync(absl::Span<const uint64_t> keys, bool exists_only, std::function<void(absl::StatusOr<GetResult>)> done);
  void PutAsync(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values,
                std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  void DeleteAsync(absl::Span<const uint64_t> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  void GetAsync(absl::Span<const std::string_view> keys, bool exists_only,
                std::function<void(absl::StatusOr<GetResult>)> done);
  void PutAsync(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  void DeleteAsync(absl::Span<const std::string_view> keys,
                   std::function<void(absl::StatusOr<std::vector<bool>>)> done);

  // Asked of every shard at once; one answer per shard, in shard_names() order.
  std::vector<ShardAnswer<absl::StatusOr<v1::StatsResponse>>> Stats();
  std::vector<ShardAnswer<absl::StatusOr<v1::ShrinkResponse>>> Shrink();
  std::vector<ShardAnswer<absl::Status>> Health();

  // Resolves a dns:/// list again (a list of addresses stays as it is):
  // shards that remain keep their clients; keys move only to a new shard or
  // away from a vanished one. On error the shards stay as they were.
  absl::Status Refresh();

  // Coalescing's effect so far, summed over the shards (Client's counters).
  uint64_t coalesced_messages() const;
  uint64_t coalesced_requests() const;

  struct ShardSet;

 private:
  ShardedClient(std::string servers, ClientOptions options, std::shared_ptr<const ShardSet> shards);
  std::shared_ptr<const ShardSet> shards() const;
  template <class T>
  std::vector<ShardAnswer<T>> ask_each(const std::function<T(Client&)>& ask);
  // The calls, for either kind of key (sharded_client.cc).
  template <class Key>
  absl::StatusOr<GetResult> get(absl::Span<const Key> keys, bool exists_only);
  // GetItems and Touch: `ask` one shard's client for its keys.
  absl::StatusOr<v1::GetResponse> items_by_shard(
      absl::Span<const std::string_view> keys,
      const std::function<absl::StatusOr<v1::GetResponse>(Client&, absl::Span<const std::string_view>)>& ask);
  template <class Key>
  absl::StatusOr<std::vector<bool>> put(absl::Span<const Key> keys, absl::Span<const std::string_view> values);
  template <class Key>
  absl::StatusOr<std::vector<bool>> remove(absl::Span<const Key> keys);
  template <class Key>
  void get_async(absl::Span<const Key> keys, bool exists_only, std::function<void(absl::StatusOr<GetResult>)> done);
  template <class Key>
  void put_async(absl::Span<const Key> keys, absl::Span<const std::string_view> values,
                 std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  template <class Key>
  void delete_async(absl::Span<const Key> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done);

  const std::string servers_;
  const ClientOptions options_;
  std::mutex refresh_mu_;
  // Read and replaced with std::atomic_load/exchange; replaced by Refresh
  // only, under refresh_mu_.
  std::shared_ptr<const ShardSet> shards_;
  std::vector<std::shared_ptr<const ShardSet>> retired_;  // guarded by refresh_mu_: replaced, maybe still in use
};

}  // namespace gphkv
