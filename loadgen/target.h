// What the drivers need from a store: connections that carry batched calls
// asynchronously, and completions delivered on the driver's own thread.
//
// A Target is the store's address and protocol; it opens one Session per
// driver thread. A Session owns that thread's connections and is used only
// by that thread, so no session code needs a lock. The drivers decide when
// and on which connection each call goes (the whole point of a load
// generator); the session only moves bytes and parses answers.
#pragma once

#include "loadgen/key_format.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/client/tls.h"
#include "loadgen/value_pool.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

using Clock = std::chrono::steady_clock;

struct OpResult {
  bool ok = false;
  // When !ok: a stable status name ("UNAVAILABLE", "SERVER_ERROR", ...) that
  // the report counts errors by.
  std::string error;
  uint32_t found = 0;        // gets: keys found; deletes: keys removed; puts: keys stored
  uint64_t value_bytes = 0;  // gets: value bytes received; puts: value bytes sent
  // Gets, when the target inspects reads (for read_check.h): every value
  // found, in any order.
  std::vector<ValueSeen> seen;
};

class Session {
 public:
  virtual ~Session() = default;
  virtual size_t connections() const = 0;
  // Sends `op` on connection `connection`. `op` stays valid and unchanged
  // until the completion for `tag` has been delivered.
  virtual void Start(size_t connection, const Op& op, uint64_t tag) = 0;
  // Delivers the completions that arrive before `deadline` (at least waits
  // for one, returns early once some arrived); returns how many it delivered.
  template <typename F>
  int Poll(Clock::time_point deadline, F&& on_done) {
    return PollImpl(
        deadline, [](void* ctx, uint64_t tag, const OpResult& r) { (*static_cast<F*>(ctx))(tag, r); }, &on_done);
  }

 protected:
  using DoneFn = void (*)(void* ctx, uint64_t tag, const OpResult& result);
  virtual int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) = 0;
};

class Target {
 public:
  virtual ~Target() = default;
  // "gphkv" or "memcached".
  virtual std::string name() const = 0;
  // Waits until the store answers a trivial request, or the deadline passes.
  virtual absl::Status WaitReady(Clock::time_point deadline) = 0;
  virtual absl::StatusOr<std::unique_ptr<Session>> Connect(size_t connections) = 0;
};

// How a target talks to its store.
struct TargetOptions {
  std::string api = "unary";   // gphkv: unary | pipeline | coalesced
  TlsOptions tls;              // gphkv
  int coalesce_in_flight = 2;  // gphkv --api=coalesced: CoalesceOptions::max_in_flight
  // gphkv --api=coalesced: every session over one client (with
  // `connections` streams in all), as an application server's threads share
  // one; false: a client per session.
  bool shared_client = false;
  // Gets read their values back into OpResult::seen (read_check.h).
  bool inspect_reads = false;
  // gphkv: keys go out as uint64 ids (none) or as the byte keys these name
  // (--key_format=bytes|tao, loadgen/key_format.h).
  std::optional<ByteKeyNames> byte_keys;
};

// Makes the target named by `name` ("gphkv" or "memcached") for `address`
// (host:port; for gphkv, a server list of shards: gphkv_target.h). Values for
// puts come from `values`, which must outlive it.
absl::StatusOr<std::unique_ptr<Target>> MakeTarget(const std::string& name, const std::string& address,
                                                   const ValuePool* values, const TargetOptions& options = {});

}  // namespace gphkv::loadgen
