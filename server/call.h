// One queued operation: a get, put or delete of one request (a unary RPC, a
// pipelined op or one operation of a batch message), or an operator's shrink
// request, with the keys and values it reads, the response it fills and the
// callback that answers it. The batcher and executor know nothing of gRPC;
// the responses are still gphkv.v1 messages.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/byte_key.h"

namespace gphkv::server {

using Clock = std::chrono::steady_clock;

// What each kind of operation reads, protocol-neutral: its keys and values
// as spans into storage of the front end that parsed them (the gRPC
// request's fields, say: server/wire_calls.h), and the response it fills.
// Both stay valid until the call's `done` has run. Only the front ends know
// the wire; the intake, batcher, executor and store read these.
//
// Keys are 64-bit ids, or byte strings (issue 26, docs/byte-keys.md). A
// call carries one kind: when its ByteKeys are not empty, its keys are those
// byte keys and `keys` holds their table keys (byte_key::table_key), one
// each, which is all the batcher, the partitions and the table look at.
using KeySpan = absl::Span<const uint64_t>;

// Byte keys, packed the way values are: key i is the next lengths[i] bytes
// of `bytes`.
struct ByteKeys {
  std::string_view bytes;
  absl::Span<const uint32_t> lengths;

  bool empty() const { return lengths.empty(); }
  size_t size() const { return lengths.size(); }
  // Calls f(i, key) for each key in order.
  template <class F>
  void for_each(F&& f) const {
    size_t off = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      f(i, bytes.substr(off, lengths[i]));
      off += lengths[i];
    }
  }
};

struct GetOp {
  KeySpan keys;
  // Found flags only, no values (the wire's VALUE_MODE_EXISTS).
  bool exists_only = false;
  // The packed gets of a Batches message: many requests' keys, validated as
  // such by the front end (validate_packed_gets) instead of as one request.
  bool packed = false;
  v1::GetResponse* response = nullptr;
  ByteKeys byte_keys;  // when the keys are byte keys (see KeySpan)
  // When not null, the placed path (server/store_placed.cc) sets it to each
  // key's item fields (flags, absolute expiry, CAS), in key order (zeros
  // for a miss or a uint64 key). The CUDA get pipeline serves only while
  // no stored item has nonzero flags, and leaves it empty: an empty vector
  // means every item's flags are 0.
  std::vector<byte_key::ItemMeta>* items = nullptr;
  // The caller needs the items' CAS versions (memcached's gets and gats):
  // the placed path serves the call, never the CUDA pipeline.
  bool needs_cas = false;
  // memcached's touch, gat and gats: each found item takes this expiry
  // (memcached's exptime, as PutOp::exptime) and keeps its value, flags and
  // CAS. The store applies it where it reads the item, on the executor
  // thread, so it is ordered with the writes around it; the answer is the
  // item as found (a gat whose exptime expires it returns it once).
  bool touch = false;
  int64_t touch_exptime = 0;
  // The wire's GetRequest.with_items: the placed path also writes each key's
  // flags, expiry and CAS into the response (GetResponse.flags, exptime,
  // cas; zeros for a miss). Set with needs_cas, so that path serves it.
  bool with_items = false;
  // A packed get of several sessions (the memcached port's loop packs the
  // plain gets of its connections into one call: server/memcache/get_pack.h):
  // key i came on session key_sessions[i], and is ordered with that
  // session's calls of its key (server/run_order.h). Empty: every key is
  // the call's own session.
  absl::Span<const uint64_t> key_sessions = {};
};
// How a put's value meets what is stored (issue 27's conditional and
// read-modify-write writes). Every mode but kSet takes one key, and is
// decided against the stored value when the executor applies the call, in
// order with every other write; a refused one changes nothing
// (server/conditional_put.h gives each mode's rule and status codes).
enum class PutMode : uint8_t {
  kSet = 0,            // store the value
  kAdd = 1,            // only where the key is absent
  kReplace = 2,        // only where the key is present
  kAppend = 3,         // the stored value, then this one
  kPrepend = 4,        // this value, then the stored one
  kIncrement = 5,      // the stored decimal number plus this one (wraps at 2^64)
  kDecrement = 6,      // the stored decimal number minus this one (stops at 0)
  kCompareAndSet = 7,  // only where the stored item's CAS is PutOp::cas (memcached's cas)
  // memcached's flush_all: no keys, every partition; every byte-key item
  // written before it (its CAS below the store's counter then) becomes a
  // miss, at once or, with a positive exptime, once the store's clock
  // reaches that time (memcached's rule for exptime).
  kFlush = 8,
};
// What a write left, for a front end whose answer reports it (memcached's
// ma with t or c): the store fills it as it applies the call, where
// PutOp::outcome points (the memcached port's conditional puts only).
struct WriteOutcome {
  bool created = false;         // ma N: the key was absent and took the initial number
  uint64_t cas = 0;             // the CAS version the item took
  uint32_t exptime_before = 0;  // the item's absolute expiry before the write (0: none, or created)
  uint32_t touch_exptime = 0;   // PutOp::touch's expiry, made absolute
  uint32_t vivify_exptime = 0;  // PutOp::vivify's expiry, made absolute
  uint32_t now = 0;             // the store's clock (unix seconds) when it applied the write
};
struct PutOp {
  KeySpan keys;
  absl::Span<const uint32_t> value_lengths;  // value i's length, for keys[i]
  std::string_view values;                   // the values, back to back
  v1::PutResponse* response = nullptr;
  ByteKeys byte_keys;
  PutMode mode = PutMode::kSet;
  // Byte keys only (issue 27, server/byte_key.h's item header): the
  // client's flags, and the expiry as memcached's exptime (0 never; up to
  // 30 days: seconds from now; beyond: an absolute unix time; negative:
  // expired at once), which the store turns into an absolute time by its
  // clock when it applies the call (byte_key::absolute_exptime), so the log
  // records the absolute time. append, prepend, incr and decr keep the
  // stored item's flags and expiry instead.
  uint32_t flags = 0;
  int64_t exptime = 0;
  // kCompareAndSet: the CAS version the stored item must hold. kFlush: its
  // delay is `exptime` (0 or negative: now).
  uint64_t cas = 0;
  // Set by the store, never by a front end: nonzero when the record keeps
  // this CAS instead of taking a new one (a touch rewrites its item so).
  uint64_t keep_cas = 0;
  // Set by the store as it applies the call: the CAS version its first byte
  // key's record took; key i's took first_cas + i (or keep_cas), which the
  // log records (server/store_durability.h).
  uint64_t first_cas = 0;
  // Recovery's puts of byte keys (server/pair_call.h): key i's item fields
  // as they were stored, the expiry absolute; flags, exptime and keep_cas
  // are unused then (a CAS of 0 takes a new one). Empty for a client's call.
  absl::Span<const byte_key::ItemMeta> item_metas = {};
  // memcached's meta commands (docs/memcached.md, "Meta commands"); the
  // memcached port sets these, the gRPC API never does. Byte keys only.
  // kAppend, kPrepend, kIncrement, kDecrement: only where the stored item's
  // CAS version is `cas` (ABORTED otherwise; a miss is still NOT_FOUND).
  bool compare_cas = false;
  // kIncrement, kDecrement on a miss (ma N): store `initial`, as its
  // decimal text, with flags 0 and expiry `vivify_exptime` (memcached's
  // exptime rule), instead of NOT_FOUND. The answer's counter is `initial`.
  bool vivify = false;
  uint64_t initial = 0;
  int64_t vivify_exptime = 0;
  // kIncrement, kDecrement (ma T): the item takes this expiry instead of
  // keeping its own; on a vivify too when touch_after_vivify (memcached
  // applies ma's T and N in the order the request names them).
  bool touch = false;
  int64_t touch_exptime = 0;
  bool touch_after_vivify = false;
  // When not null, the store fills it once the write is applied.
  WriteOutcome* outcome = nullptr;
};
struct DeleteOp {
  KeySpan keys;
  v1::DeleteResponse* response = nullptr;
  ByteKeys byte_keys;
  // memcached's md C (compare-and-delete), byte keys only: a call of one key
  // deletes it only where the stored item's CAS version is `cas`; otherwise
  // ABORTED and nothing changes (a miss is still deleted=false). Decided in
  // the executor's order with the deletes around it. The gRPC API never
  // sets it.
  bool compare_cas = false;
  uint64_t cas = 0;
};
// Goes through the queue like the others because only the executor thread
// may touch the store; it carries no keys.
struct ShrinkOp {
  v1::ShrinkResponse* response = nullptr;
};

// The order of the alternatives is OpKind's.
using Operation = std::variant<GetOp, PutOp, DeleteOp, ShrinkOp>;
enum class OpKind : uint8_t { kGet = 0, kPut = 1, kDelete = 2, kShrink = 3 };

// Each kind's keys (a shrink has none).
inline KeySpan keys_of(const GetOp& op) { return op.keys; }
inline KeySpan keys_of(const PutOp& op) { return op.keys; }
inline KeySpan keys_of(const DeleteOp& op) { return op.keys; }
inline KeySpan keys_of(const ShrinkOp&) { return {}; }
inline ByteKeys byte_keys_of(const GetOp& op) { return op.byte_keys; }
inline ByteKeys byte_keys_of(const PutOp& op) { return op.byte_keys; }
inline ByteKeys byte_keys_of(const DeleteOp& op) { return op.byte_keys; }
inline ByteKeys byte_keys_of(const ShrinkOp&) { return {}; }

// A fresh client session id (never 0): one per stream, memcached
// connection or unary call (Call::session).
inline uint64_t new_session_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

struct Call {
  Operation op;

  // The client session the call came on: a Pipeline or Batches stream, a
  // connection of the memcached port, or a unary call alone. A session's
  // calls take effect in the order it sent them; calls of different sessions
  // that the server holds at once are concurrent (none was answered before
  // another was sent), so their order is the server's to choose
  // (server/run_order.h). 0: not known, ordered with every call of its keys.
  uint64_t session = 0;

  // A call whose deadline passed before its batch ran is answered
  // DEADLINE_EXCEEDED and changes nothing.
  Clock::time_point deadline = Clock::time_point::max();
  // When the front end read the call's request (the intake's time when it
  // does not say), when the batcher queued it, and when its batch started:
  // the call's stages (server/call_stages.h).
  Clock::time_point received{};
  Clock::time_point enqueued{};
  Clock::time_point started{};

  // Runs exactly once, on the executor thread or a completion thread, after
  // the call's operations took effect (OK) or were refused (then nothing
  // changed).
  std::function<void(absl::Status)> done;

  // The table keys of a byte-key call, which its op's `keys` views: the
  // front end that parsed it fills them. A moved Call keeps the buffer.
  std::vector<uint64_t> table_keys;
  // A conditional put, once the store decided it (server/conditional_put.h):
  // the value it stores, which its op then views as a plain set (what the
  // log records). Vectors, not a string, so that a moved Call keeps the
  // bytes where the op's views point.
  std::vector<char> resolved_value;
  std::vector<uint32_t> resolved_length;

  OpKind kind() const { return static_cast<OpKind>(op.index()); }
  const GetOp& get() const { return std::get<GetOp>(op); }
  const PutOp& put() const { return std::get<PutOp>(op); }
  const DeleteOp& del() const { return std::get<DeleteOp>(op); }
  const ShrinkOp& shrink() const { return std::get<ShrinkOp>(op); }

  // Value bytes the call carries in (puts): what it holds while queued.
  uint64_t payload_bytes() const {
    const auto* p = std::get_if<PutOp>(&op);
    return p ? p->values.size() : 0;
  }

  KeySpan keys() const {
    return std::visit([](const auto& o) { return keys_of(o); }, op);
  }
  uint32_t num_keys() const { return static_cast<uint32_t>(keys().size()); }
  ByteKeys byte_keys() const {
    return std::visit([](const auto& o) { return byte_keys_of(o); }, op);
  }
  bool has_byte_keys() const { return !byte_keys().empty(); }
};

}  // namespace gphkv::server
