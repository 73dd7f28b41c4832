// Client-side coalescing: the concurrent requests of many application
// threads ride together, as the operations of one BatchRequest on a Batches
// stream, the way the server merges calls into one device launch.
//
// Each lane is one Batches stream on its own connection. Gets of values
// (nearly all requests) are packed into one key array per message; the other
// requests travel as operations, which take effect before the packed gets of
// their message (so a put or delete issued after a packed get starts a new
// one; a get may join: gets commute, and it stays behind every write of its
// message). A packed GetRequest holds one kind of key, so a message's packed
// gets take the kind of its first one, and a get of the other kind rides in
// the same message as an operation of its own: a workload of byte keys packs
// as well as one of uint64 keys, and a mixed one still sends one message
// per turn instead of closing a message at every change of kind. A request goes to
// its calling thread's lane (so one thread's requests take effect in the
// order it issued them) and is sent at once when fewer than max_in_flight of
// the lane's messages await their answer; otherwise it waits, with the
// others that arrive meanwhile, until one of them is answered, and they all
// go in the next message. So an idle client sends each request alone, with
// no added delay, and a loaded one sends fewer, larger messages: the wait is
// bounded by one round trip of the lane.
//
// Every request keeps its own result, status and deadline. The server
// refuses an operation whose deadline passed before it ran (its timeout
// travels with it); a sweeper fails the ones whose answer is late (a hung
// server or network) with DEADLINE_EXCEEDED. Requests never sent on a stream
// that broke go, in order, on the lane's next stream; one in flight on a
// stream that broke is failed with UNAVAILABLE (it may have taken effect).
// Nothing is retried: a retry sent after a later request of its thread
// would break the thread's order, and gRPC's retry policy does not replay
// the streams either (client.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gphkv/client/client.h"
#include "gphkv/v1/gphkv.grpc.pb.h"

namespace grpc {
class Channel;
}

namespace gphkv::detail {

class Coalescer {
 public:
  using Clock = std::chrono::steady_clock;
  // Runs once per request, on a gRPC or the sweeper's thread: OK with the
  // operation's result (which it may move from), or the request's failure
  // with a null result.
  using Done = std::function<void(const absl::Status&, v1::OperationResult*)>;
  // A packed get's answer: its slice of the message's gets.
  using GetDone = std::function<void(absl::StatusOr<GetResult>)>;

  // channel(i): the channel of lane i.
  Coalescer(const std::function<std::shared_ptr<grpc::Channel>(int)>& channel, const ClientOptions& options);
  // Ends the streams; requests not yet answered fail with CANCELLED.
  ~Coalescer();

  // Sends `op` (moved from) with the others of its lane; its deadline is
  // now + options.timeout (none when 0).
  void submit(v1::Operation&& op, Done done);
  // Sends a get of values: its keys join the message's packed gets (one key
  // array for all of them, no message of its own), answered by its slice.
  void submit_get(absl::Span<const uint64_t> keys, GetDone done);
  // The same with byte keys: packed when the message's packed gets are of
  // byte keys or it has none yet, else an operation of its own.
  void submit_get(absl::Span<const std::string_view> keys, GetDone done);

  // How many messages the lanes have sent, and the operations they carried
  // (for tests and the load generator's report).
  uint64_t messages_sent() const;
  uint64_t operations_sent() const;

  struct Lane;
  struct Outgoing;
  class Stream;

 private:
  // Puts a request of `keys` keys and `bytes` value bytes into its lane's
  // next message with `add(message, deadline)` (under the lane's lock), then
  // starts the stream or writes the message if it may go now. `refuse(status)`
  // answers it instead while the client is being destroyed.
  // The calling thread's lane: the same one for all its requests.
  Lane& lane_of_calling_thread();
  // `is_write`: a put or delete, which must not join a message after its packed
  // gets (they take effect after its operations).
  template <class Add, class Refuse>
  void enqueue(uint64_t keys, uint64_t bytes, bool is_write, Add&& add, Refuse&& refuse);
  template <class Key>
  void submit_packed_get(absl::Span<const Key> keys, GetDone done);
  void sweep();

  const ClientOptions options_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  absl::Mutex sweep_mu_;
  bool stopping_ ABSL_GUARDED_BY(sweep_mu_) = false;
  std::thread sweeper_;
};

}  // namespace gphkv::detail
