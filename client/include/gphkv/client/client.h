// gphkv::Client: the C++ client of gphkv.v1.KeyValue.
//
// Sync and async batched get/put/delete, a pipelined stream, Stats, Shrink
// and the health check. Every request carries its own deadline
// (ClientOptions::timeout).
//
// Coalescing (ClientOptions::coalesce, on by default): the gets, puts and
// deletes that many application threads issue at the same time ride
// together, as the operations of one message on a Batches stream, instead of
// costing an RPC each; each keeps its own result, status and deadline. A
// request is sent at once when its stream has room, else with the others
// that arrive meanwhile once an answer frees a turn (client/coalescer.h).
// Keys: uint64 keys, or byte keys (absl::Span<const std::string_view>: 1 to
// the server's --max_key_bytes, 250 by default, of any bytes, NUL included;
// docs/byte-keys.md). Every call comes in both kinds; one call carries one
// kind, and a byte key "42" and the uint64 key 42 are two keys. A call with
// no keys is refused here (INVALID_ARGUMENT), before anything is sent.
// Order: a thread's gets, puts and deletes through one Client take effect in
// the order it issued them, sync and async alike, with coalescing on (its
// requests all ride one stream, chosen once per thread) or off (a thread's
// put or delete is held in the client until its earlier requests were
// answered, and a get until its earlier puts and deletes were; gets run
// concurrently). A request is answered only after it took effect, so what
// one thread saw acknowledged, every later request of any thread sees. Not
// ordered: one thread's requests through two Client objects, and a
// PipelineStream's operations against the client's other requests (each
// stream is ordered on its own). docs/service.md, "The client's order".
//
// Without coalescing each request is one unary RPC; those refused with
// UNAVAILABLE (server restarting, connection lost) are retried with backoff
// by the channel's retry policy (a later request of the thread that it
// holds back waits for the retries); no other status is retried, since the
// server refuses those without changing anything and a retry would be
// refused the same way. With coalescing, requests not yet sent when a stream
// breaks go on a new one; requests in flight fail UNAVAILABLE (they may have
// taken effect); nothing is retried, by the client or by gRPC (which would
// replay a stream's messages). Pipeline streams are not retried either.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/client/requests.h"
#include "gphkv/client/tls.h"
#include "gphkv/v1/gphkv.grpc.pb.h"

namespace grpc {
class Channel;
}

namespace gphkv {
namespace detail {
class Coalescer;
class ThreadOrder;
}  // namespace detail

// How concurrent requests share messages (see the header comment).
struct CoalesceOptions {
  // false: every request is its own unary RPC.
  bool enabled = true;
  // Batches streams, each on its own connection (with Client::Connect); a
  // thread's requests all go to one of them.
  int streams = 1;
  // Messages of a stream awaiting their answer before requests wait and
  // ride together in the next one. This bounds a request's wait in the
  // client to one round trip.
  int max_in_flight = 2;
  // A message closes at this many keys or put value bytes (a request larger
  // than either goes alone).
  uint32_t max_message_keys = 16384;
  uint64_t max_message_bytes = 4 << 20;
};

struct ClientOptions {
  // Deadline of each call (0 = none).
  std::chrono::milliseconds timeout{10000};
  // Attempts per call on UNAVAILABLE (1 = no retries; gRPC caps it at 5).
  int max_attempts = 4;
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{1000};
  // Largest message sent or received.
  int max_message_bytes = 256 << 20;
  // true: this Client dials its own TCP connection. By default gRPC shares
  // one connection among all channels of a process with the same target and
  // arguments, so N clients in one process funnel through one HTTP/2
  // connection (one transport thread's worth of framing: a third of the
  // batched-get throughput in docs/performance.md). Off by default: many
  // Clients dialling at once on a loaded host then each meet a failed first
  // connect and fail fast with UNAVAILABLE, where the shared connection is
  // already up.
  bool own_connection = false;
  CoalesceOptions coalesce{};
  // Plain text unless tls.enabled (gphkv/client/tls.h).
  TlsOptions tls{};
};

// The answer to a Get: found flags and values by index. It views its keys'
// slice of a response that the other requests of its message may share
// (coalescing): no allocation per value, and none per request up to 32 keys.
class GetResult {
 public:
  GetResult() = default;
  // All of `response`.
  explicit GetResult(v1::GetResponse response);
  // Keys [first_key, first_key + keys) of `response`, whose values start at
  // byte first_byte of response->values().
  GetResult(std::shared_ptr<const v1::GetResponse> response, uint32_t first_key, uint32_t keys, uint64_t first_byte);

  size_t size() const { return keys_; }
  bool found(size_t i) const { return response_->found(static_cast<int>(first_key_ + i)); }
  // The value of key i (empty when not found or when only existence was asked).
  std::string_view value(size_t i) const;
  // Bytes of all this result's values.
  uint64_t value_bytes() const { return ends_.empty() ? 0 : ends_.back(); }

 private:
  std::shared_ptr<const v1::GetResponse> response_;
  uint32_t first_key_ = 0;
  uint32_t keys_ = 0;
  uint64_t first_byte_ = 0;
  // ends_[i]: where value i ends, from first_byte_; empty when the response
  // does not hold the bytes its lengths add up to.
  absl::InlinedVector<uint32_t, 32> ends_;
};

// A byte key's item fields for Client::Write (docs/service.md, "Item
// fields"): the put's mode (WRITE_MODE_CAS compares `cas`), its client
// flags and its expiry by memcached's exptime rule (0 never; up to 30 days
// seconds from now; beyond, an absolute unix time; negative, expired at once).
struct WriteOptions {
  v1::WriteMode mode = v1::WRITE_MODE_SET;
  uint32_t flags = 0;
  int64_t exptime = 0;
  uint64_t cas = 0;
};

// A bidirectional Pipeline stream: many operations in flight, answered by id.
// Send from one thread and Receive from another (or alternate on one).
class PipelineStream {
 public:
  ~PipelineStream();
  // Sends one operation; returns its id, or an error once the stream broke.
  absl::StatusOr<uint64_t> SendGet(absl::Span<const uint64_t> keys, bool exists_only = false);
  absl::StatusOr<uint64_t> SendPut(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  absl::StatusOr<uint64_t> SendDelete(absl::Span<const uint64_t> keys);
  // The same with byte keys.
  absl::StatusOr<uint64_t> SendGet(absl::Span<const std::string_view> keys, bool exists_only = false);
  absl::StatusOr<uint64_t> SendPut(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values);
  absl::StatusOr<uint64_t> SendDelete(absl::Span<const std::string_view> keys);
  // The next answer (in completion order; match it by id()). NOT_FOUND once
  // the server has answered everything and ended the stream.
  absl::StatusOr<v1::PipelineResponse> Receive();
  // Half-closes, drains unread answers and returns the stream's status.
  absl::Status Close();

 private:
  friend class Client;
  struct State;
  explicit PipelineStream(std::unique_ptr<State> state);
  absl::StatusOr<uint64_t> send(v1::PipelineRequest* req);
  std::unique_ptr<State> state_;
};

class Client {
 public:
  // Connects lazily to `address` (host:port); the first call dials.
  static std::unique_ptr<Client> Connect(const std::string& address, ClientOptions options = {});
  Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options);
  ~Client();

  // Sync calls: the whole batch is one request, answered in request order.
  absl::StatusOr<GetResult> Get(absl::Span<const uint64_t> keys, bool exists_only = false);
  // created[i]: keys[i] was not stored before.
  absl::StatusOr<std::vector<bool>> Put(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  // deleted[i]: keys[i] was stored and is now removed.
  absl::StatusOr<std::vector<bool>> Delete(absl::Span<const uint64_t> keys);
  // The same with byte keys.
  absl::StatusOr<GetResult> Get(absl::Span<const std::string_view> keys, bool exists_only = false);
  absl::StatusOr<std::vector<bool>> Put(absl::Span<const std::string_view> keys,
                                        absl::Span<const std::string_view> values);
  absl::StatusOr<std::vector<bool>> Delete(absl::Span<const std::string_view> keys);
  // A conditional or read-modify-write put of one key (docs/service.md,
  // "Conditional writes"): WRITE_MODE_ADD, REPLACE, APPEND, PREPEND,
  // INCREMENT or DECREMENT (for the last two `value` is the decimal delta).
  // The response's `counter` is the number an INCREMENT or DECREMENT stored.
  // A refusal is the status (ALREADY_EXISTS, NOT_FOUND, INVALID_ARGUMENT,
  // RESOURCE_EXHAUSTED) and changed nothing. Kept in order with the calling
  // thread's other requests, as a Put is.
  absl::StatusOr<v1::PutResponse> Write(uint64_t key, std::string_view value, v1::WriteMode mode);
  absl::StatusOr<v1::PutResponse> Write(std::string_view key, std::string_view value, v1::WriteMode mode);
  // The same with a byte key's flags, expiry and, for WRITE_MODE_CAS, the
  // CAS version the item must hold (else ABORTED; NOT_FOUND when absent).
  absl::StatusOr<v1::PutResponse> Write(std::string_view key, std::string_view value, const WriteOptions& options);
  // A get of byte keys that also answers each item's flags, absolute expiry
  // and CAS version (GetResponse.flags, exptime, cas; 0 for a miss).
  absl::StatusOr<v1::GetResponse> GetItems(absl::Span<const std::string_view> keys);
  // memcached's gat: each found key takes `exptime` (as WriteOptions') and
  // keeps its value, flags and CAS; the answer is the items as found, with
  // their fields. A server with --data_dir logs the items it rewrote before
  // it answers, as it does a write. Kept in order with the thread's writes.
  absl::StatusOr<v1::GetResponse> Touch(absl::Span<const std::string_view> keys, int64_t exptime);
  absl::StatusOr<v1::StatsResponse> Stats();
  // Asks the server to rebuild its table for the keys stored now (after mass
  // deletes); see the Shrink RPC in gphkv.proto.
  absl::StatusOr<v1::ShrinkResponse> Shrink();
  // OK when the server reports SERVING; UNAVAILABLE with the reported status
  // otherwise (or the RPC's error).
  absl::Status Health();

  // Async calls: `done` runs on a gRPC thread when the answer arrives (keep
  // it short: other answers wait behind it). The Client must outlive the calls.
  void GetAsync(absl::Span<const uint64_t> keys, bool exists_only, std::function<void(absl::StatusOr<GetResult>)> done);
  void PutAsync(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values,
                std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  void DeleteAsync(absl::Span<const uint64_t> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  // The same with byte keys (copied into the request before the call returns).
  void GetAsync(absl::Span<const std::string_view> keys, bool exists_only,
                std::function<void(absl::StatusOr<GetResult>)> done);
  void PutAsync(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  void DeleteAsync(absl::Span<const std::string_view> keys,
                   std::function<void(absl::StatusOr<std::vector<bool>>)> done);

  // Opens a Pipeline stream (deadline: none; close it when done).
  std::unique_ptr<PipelineStream> OpenPipeline();

  v1::KeyValue::Stub* stub() { return stub_.get(); }

  // Coalescing's effect so far: messages sent and the requests they carried
  // (both 0 when coalescing is off).
  uint64_t coalesced_messages() const;
  uint64_t coalesced_requests() const;

 private:
  enum class Init { kLater };
  Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options, Init);
  // The constructor's work; `lane_channel(i)` gives coalescing stream i its channel.
  void init(const std::function<std::shared_ptr<grpc::Channel>(int)>& lane_channel);
  void prepare(grpc::ClientContext* ctx) const;
  // The calls, for either kind of key (client.cc).
  template <class Key>
  absl::StatusOr<GetResult> get(absl::Span<const Key> keys, bool exists_only);
  template <class Key>
  absl::StatusOr<std::vector<bool>> put(absl::Span<const Key> keys, absl::Span<const std::string_view> values);
  template <class Key>
  absl::StatusOr<std::vector<bool>> remove(absl::Span<const Key> keys);
  template <class Key>
  absl::StatusOr<v1::PutResponse> write(Key key, std::string_view value, const WriteOptions& options);
  // A GetRequest sent whole, as an Operation of the coalescing stream or a
  // unary Get in the thread's order (as a write when in_write_order).
  absl::StatusOr<v1::GetResponse> get_message(v1::GetRequest req, bool in_write_order);
  // A Put without coalescing, in the thread's order behind its earlier calls.
  absl::Status unary_put(const v1::PutRequest& req, v1::PutResponse* resp);
  template <class Key>
  void get_async(absl::Span<const Key> keys, bool exists_only, std::function<void(absl::StatusOr<GetResult>)> done);
  template <class Key>
  void put_async(absl::Span<const Key> keys, absl::Span<const std::string_view> values,
                 std::function<void(absl::StatusOr<std::vector<bool>>)> done);
  template <class Key>
  void delete_async(absl::Span<const Key> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KeyValue::Stub> stub_;
  std::unique_ptr<detail::Coalescer> coalescer_;  // null when coalescing is off
  std::unique_ptr<detail::ThreadOrder> order_;    // a thread's unary requests in order; null with coalescing
};

}  // namespace gphkv
