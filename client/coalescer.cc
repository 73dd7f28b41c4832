#include "client/coalescer.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <set>
#include <type_traits>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"

#include "absl/strings/str_cat.h"

namespace gphkv::detail {
namespace {

using Clock = Coalescer::Clock;

// One request: what answers it and by when. `done` is null once it was
// answered (by the sweeper, say).
struct Slot {
  Coalescer::Done done;
  Clock::time_point deadline;
};
struct GetSlot {
  Coalescer::GetDone done;
  Clock::time_point deadline;
  uint32_t keys;
};

// A request failed, to be told outside the lane's lock.
struct Failure {
  Coalescer::Done done;
  Coalescer::GetDone get_done;
  absl::Status status;
};

void deliver(std::vector<Failure>& failures) {
  for (auto& f : failures) {
    if (f.done) f.done(f.status, nullptr);
    if (f.get_done) f.get_done(f.status);
  }
  failures.clear();
}

uint64_t keys_of(const v1::Operation& op) {
  switch (op.op_case()) {
    case v1::Operation::kGet: return key_count(op.get());
    case v1::Operation::kPut: return key_count(op.put());
    case v1::Operation::kDelete: return key_count(op.delete_());
    default: return 0;
  }
}

// The bytes an operation adds to its message beyond its keys' count: put
// values and byte keys.
uint64_t bytes_of(const v1::Operation& op) {
  switch (op.op_case()) {
    case v1::Operation::kGet: return op.get().key_bytes().size();
    case v1::Operation::kPut: return op.put().values().size() + op.put().key_bytes().size();
    case v1::Operation::kDelete: return op.delete_().key_bytes().size();
    default: return 0;
  }
}

// The kind of key a packed get holds.
template <class Key>
constexpr bool kByteKeys = std::is_same_v<Key, std::string_view>;

uint64_t bytes_of_keys(absl::Span<const uint64_t>) { return 0; }
uint64_t bytes_of_keys(absl::Span<const std::string_view> keys) {
  uint64_t n = 0;
  for (std::string_view k : keys) n += k.size();
  return n;
}

void fail_slots(std::vector<Slot>& slots, const absl::Status& why, std::vector<Failure>* out) {
  for (auto& s : slots) {
    if (s.done) out->push_back({std::move(s.done), nullptr, why});
  }
  slots.clear();
}

void fail_slots(std::vector<GetSlot>& slots, const absl::Status& why, std::vector<Failure>* out) {
  for (auto& s : slots) {
    if (s.done) out->push_back({nullptr, std::move(s.done), why});
  }
  slots.clear();
}

// Fails the slots whose deadline passed (the answer, if it comes, finds
// them answered).
void expire_slots(std::vector<Slot>& slots, Clock::time_point now, const char* what, std::vector<Failure>* out) {
  for (auto& s : slots) {
    if (!s.done || s.deadline > now) continue;
    out->push_back({std::move(s.done), nullptr, absl::DeadlineExceededError(what)});
    s.done = nullptr;
  }
}

void expire_slots(std::vector<GetSlot>& slots, Clock::time_point now, const char* what, std::vector<Failure>* out) {
  for (auto& s : slots) {
    if (!s.done || s.deadline > now) continue;
    out->push_back({nullptr, std::move(s.done), absl::DeadlineExceededError(what)});
    s.done = nullptr;
  }
}

// The packed gets' answer, cut into each request's slice.
void answer_packed(std::vector<GetSlot>& slots, v1::OperationResult* r) {
  uint64_t keys = 0;
  for (const auto& s : slots) keys += s.keys;
  absl::Status bad;
  if (r == nullptr) {
    bad = absl::InternalError("the BatchResponse does not answer the packed gets");
  } else if (r->code() != 0) {
    bad = absl::Status(static_cast<absl::StatusCode>(r->code()), r->message());
  } else if (static_cast<uint64_t>(r->get().found_size()) != keys ||
             static_cast<uint64_t>(r->get().value_lengths_size()) != keys) {
    bad = absl::InternalError(
        absl::StrCat("the packed gets' answer holds ", r->get().found_size(), " entries for ", keys, " keys"));
  }
  if (!bad.ok()) {
    for (auto& s : slots) {
      if (s.done) s.done(bad);
    }
    return;
  }
  auto shared = std::make_shared<v1::GetResponse>();
  shared->Swap(r->mutable_get());
  std::shared_ptr<const v1::GetResponse> response = std::move(shared);
  uint32_t key = 0;
  uint64_t byte = 0;
  for (auto& s : slots) {
    if (s.done) s.done(GetResult(response, key, s.keys, byte));
    for (uint32_t i = 0; i < s.keys; ++i) byte += response->value_lengths(static_cast<int>(key + i));
    key += s.keys;
  }
}

// How long a lane never answered waits for its first connection: long
// enough for gRPC's reconnect after a failed first dial (channel_args sets
// its backoff to 100 ms), short enough that an absent server is UNAVAILABLE
// well within the deadline.
Clock::duration connect_wait(const ClientOptions& o) {
  return std::min<Clock::duration>(std::chrono::seconds(1), o.timeout / 2);
}

}  // namespace

// A message being filled or waiting for its turn.
struct Coalescer::Outgoing {
  v1::BatchRequest req;
  std::vector<Slot> slots;     // slots[i] answers req.ops(i)
  std::vector<GetSlot> gets;   // the packed gets, in order
  bool byte_key_gets = false;  // the packed gets' kind of key, set by the first
  uint64_t keys = 0, bytes = 0;
};

// mu guards the lane's state and its streams' bookkeeping (Stream's fields
// name it too).
struct Coalescer::Lane {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::KeyValue::Stub> stub;
  const ClientOptions* options = nullptr;

  absl::Mutex mu;
  // The stream in use; null before the first request and after one ended.
  Stream* stream ABSL_GUARDED_BY(mu) = nullptr;
  std::deque<Outgoing> queue ABSL_GUARDED_BY(mu);  // messages not yet sent; the back one is filling
  std::set<Stream*> live ABSL_GUARDED_BY(mu);      // streams whose RPC is not done yet
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  bool closing ABSL_GUARDED_BY(mu) = false;
  // Whether a stream of this lane was ever answered: until then its streams
  // wait for the connection (wait_for_ready) instead of failing fast.
  bool answered ABSL_GUARDED_BY(mu) = false;
  int objects ABSL_GUARDED_BY(mu) = 0;  // Stream objects not yet destroyed, their calls included
  std::atomic<uint64_t> messages{0}, operations{0};
};

// One Batches stream of a lane.
//
// Lifetime: the object lives while its RPC is not done (OnDone) or a thread
// holds a reference. Operations on the stream from outside its reactions
// (a sending application thread) are legal only while gRPC holds the RPC
// open: the stream takes a hold before it starts and gives it back once the
// lane stopped using it and no outside operation is under way.
class Coalescer::Stream final : public grpc::ClientBidiReactor<v1::BatchRequest, v1::BatchResponse> {
 public:
  explicit Stream(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane->mu) : counted_(lane), lane_(lane) {
    // A lane's first connection may fail once on a loaded host (many clients
    // dialling at once); failing fast then would fail every request of the
    // stream with UNAVAILABLE although nothing is wrong. Until the lane has an
    // answer, its stream waits for the connection instead, bounded by each
    // request's deadline (the sweeper). Afterwards a lost server fails fast.
    // A lane with no deadline (timeout 0) has no sweeper to end the wait:
    // it keeps failing fast.
    if (!lane_->answered && lane_->options->timeout.count() > 0) {
      ctx_.set_wait_for_ready(true);
      connect_by_ = Clock::now() + connect_wait(*lane_->options);
    }
    lane_->stub->async()->Batches(&ctx_, this);
    AddHold();
    lane_->live.insert(this);
  }

  // --- Under lane->mu -------------------------------------------------------

  // Whether the lane's next message may go now; if so, moves it into out_,
  // records it in flight and marks a write under way.
  bool take_message() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) {
    if (writing_ || detached_ || lane_->closing || lane_->queue.empty()) return false;
    if (static_cast<int>(in_flight_.size()) >= lane_->options->coalesce.max_in_flight) return false;
    Outgoing& next = lane_->queue.front();
    out_.Clear();
    out_.Swap(&next.req);
    const uint64_t id = lane_->next_id++;
    out_.set_id(id);
    // Each timeout counts from now: the time a request waited here is spent.
    const Clock::time_point now = Clock::now();
    auto timeout_us = [&](Clock::time_point d) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(d - now).count();
      return static_cast<uint64_t>(std::max<int64_t>(1, left));
    };
    for (int i = 0; i < out_.ops_size(); ++i) {
      const Clock::time_point d = next.slots[i].deadline;
      if (d != Clock::time_point::max()) out_.mutable_ops(i)->set_timeout_us(timeout_us(d));
    }
    // The packed gets share one timeout: the latest of theirs (a get whose
    // own deadline passes first is failed here by the sweeper; reads change
    // nothing, so the server may still run it).
    Clock::time_point latest = Clock::time_point::min();
    for (const auto& g : next.gets) latest = std::max(latest, g.deadline);
    if (!next.gets.empty() && latest != Clock::time_point::max()) out_.set_gets_timeout_us(timeout_us(latest));
    in_flight_.push_back({id, std::move(next.slots), std::move(next.gets)});
    lane_->queue.pop_front();
    writing_ = true;
    lane_->messages.fetch_add(1, std::memory_order_relaxed);
    lane_->operations.fetch_add(static_cast<uint64_t>(out_.ops_size() + out_.get_counts_size()),
                                std::memory_order_relaxed);
    return true;
  }
  // An operation from outside a reaction is about to start (keeps the hold).
  void begin_outside() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) {
    ++outside_;
    ++refs_;
  }
  // A stream still waiting for the lane's first connection after
  // connect_wait: fails what it holds with UNAVAILABLE, as a fail-fast
  // stream would have at once, and says whether to cancel it. A connected
  // channel keeps its stream (its requests' deadlines bound the wait).
  bool give_up_connecting(Clock::time_point now, std::vector<Failure>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) {
    if (lane_->answered || now < connect_by_) return false;
    if (lane_->channel->GetState(false) == GRPC_CHANNEL_READY) return false;
    connect_by_ = Clock::time_point::max();
    gave_up_ = absl::UnavailableError(
        absl::StrCat("no connection to the server within ",
                     std::chrono::duration_cast<std::chrono::milliseconds>(connect_wait(*lane_->options)).count(),
                     " ms; the request may or may not have taken effect"));
    for (auto& f : in_flight_) {
      fail_slots(f.slots, gave_up_, out);
      fail_slots(f.gets, gave_up_, out);
    }
    return true;
  }
  // The requests in flight whose deadline passed.
  void expire(Clock::time_point now, std::vector<Failure>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) {
    for (auto& f : in_flight_) {
      expire_slots(f.slots, now, "no answer before the deadline", out);
      expire_slots(f.gets, now, "no answer before the deadline", out);
    }
  }
  void ref() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) { ++refs_; }
  // For a caller that holds its lane's lock under another name (the lane it
  // looked up): says so to the analysis, and checks it in debug builds.
  void lock_is_held() const ABSL_ASSERT_EXCLUSIVE_LOCK(lane_->mu) { lane_->mu.AssertHeld(); }

  // --- Outside lane->mu -------------------------------------------------------

  void start() {
    StartRead(&in_);
    StartCall();
  }
  void write() { StartWrite(&out_); }
  void close() { StartWritesDone(); }
  void cancel() { ctx_.TryCancel(); }
  // Ends an operation begun with begin_outside().
  void end_outside() {
    bool release;
    {
      absl::MutexLock lock(&lane_->mu);
      --outside_;
      release = should_release();
    }
    if (release) RemoveHold();
    unref();
  }
  void unref() {
    bool last;
    {
      absl::MutexLock lock(&lane_->mu);
      last = --refs_ == 0;
    }
    if (last) delete this;
  }

  // --- Reactions --------------------------------------------------------------

  void OnWriteDone(bool ok) override {
    bool more = false;
    {
      absl::MutexLock lock(&lane_->mu);
      writing_ = false;
      // A failed write means the stream broke: the read fails too and ends it.
      if (ok) more = take_message();
    }
    if (more) write();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      ended();
      return;
    }
    v1::BatchResponse resp;
    resp.Swap(&in_);
    StartRead(&in_);
    std::vector<Slot> slots;
    std::vector<GetSlot> gets;
    bool more = false;
    {
      absl::MutexLock lock(&lane_->mu);
      lane_->answered = true;
      for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
        if (it->id != resp.id()) continue;
        slots = std::move(it->slots);
        gets = std::move(it->gets);
        in_flight_.erase(it);
        break;
      }
      more = take_message();
    }
    if (more) write();
    if (!gets.empty()) answer_packed(gets, resp.has_gets() ? resp.mutable_gets() : nullptr);
    for (int i = 0; i < static_cast<int>(slots.size()); ++i) {
      if (!slots[i].done) continue;  // the sweeper answered it already
      if (i >= resp.results_size()) {
        slots[i].done(absl::InternalError(absl::StrCat("BatchResponse id ", resp.id(), " carries ", resp.results_size(),
                                                       " results for ", slots.size(), " operations")),
                      nullptr);
        continue;
      }
      v1::OperationResult* r = resp.mutable_results(i);
      if (r->code() != 0) {
        slots[i].done(absl::Status(static_cast<absl::StatusCode>(r->code()), r->message()), nullptr);
      } else {
        slots[i].done(absl::OkStatus(), r);
      }
    }
  }

  void OnDone(const grpc::Status& status) override {
    std::vector<Failure> failures;
    {
      absl::MutexLock lock(&lane_->mu);
      // A stream the sweep gave up on ends CANCELLED (its cancel()): requests
      // that joined it after the sweep failed the others get the same reason.
      const absl::Status why = status.error_code() == grpc::StatusCode::CANCELLED && !gave_up_.ok() ? gave_up_
                               : status.ok()
                                   ? absl::UnavailableError(
                                         "the Batches stream ended before answering; the request may "
                                         "or may not have taken effect")
                                   : absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                                                  absl::StrCat("Batches stream: ", status.error_message(),
                                                               "; the request may or may not have taken effect"));
      for (auto& f : in_flight_) {
        fail_slots(f.slots, why, &failures);
        fail_slots(f.gets, why, &failures);
      }
      in_flight_.clear();
      lane_->live.erase(this);  // ~Coalescer may be waiting (Await) for live to empty
    }
    deliver(failures);
    unref();  // the RPC's reference
  }

 private:
  struct InFlight {
    uint64_t id;
    std::vector<Slot> slots;
    std::vector<GetSlot> gets;
  };

  // Under lane->mu: gives the hold back once the lane stopped using the
  // stream and no outside operation is under way (once).
  bool should_release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane_->mu) {
    if (!detached_ || outside_ > 0 || released_) return false;
    released_ = true;
    return true;
  }

  // The read side ended (the server finished the stream, or it broke): the
  // lane stops using this stream, and requests it never sent go on a new one.
  void ended() {
    Stream* next = nullptr;
    bool write_next = false;
    bool release;
    {
      absl::MutexLock lock(&lane_->mu);
      detached_ = true;
      if (lane_->stream == this) lane_->stream = nullptr;
      if (!lane_->closing && !lane_->queue.empty()) {
        next = new Stream(lane_);
        lane_->stream = next;
        next->lock_is_held();
        next->begin_outside();
        write_next = next->take_message();
      }
      release = should_release();
    }
    if (next != nullptr) {
      next->start();
      if (write_next) next->write();
      next->end_outside();
    }
    if (release) RemoveHold();
  }

  // Counts the stream in lane->objects until the end of its destruction:
  // declared first, so destroyed last, after ctx_ has released its call.
  // The call holds the channel's callback queue; ~Coalescer waits for this,
  // so the channel (and that queue) is never destroyed under a call still
  // being released on a gRPC thread (it aborted in grpc_cq_internal_unref).
  struct Counted {
    explicit Counted(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane->mu) : lane(lane) { ++lane->objects; }
    ~Counted() {
      // ~Coalescer waits (Await) for objects to reach 0: the lane may be
      // gone once the lock is released.
      absl::MutexLock lock(&lane->mu);
      --lane->objects;
    }
    Lane* lane;
  };
  Counted counted_;
  Lane* lane_;
  grpc::ClientContext ctx_;
  // While the lane was never answered: when to stop waiting for a connection.
  Clock::time_point connect_by_ ABSL_GUARDED_BY(lane_->mu) = Clock::time_point::max();
  // Why the sweep gave up on this stream before it connected (OK: it did not).
  absl::Status gave_up_ ABSL_GUARDED_BY(lane_->mu);
  v1::BatchRequest out_;
  v1::BatchResponse in_;
  // Messages sent, not yet answered, oldest first.
  std::deque<InFlight> in_flight_ ABSL_GUARDED_BY(lane_->mu);
  bool writing_ ABSL_GUARDED_BY(lane_->mu) = false;
  bool detached_ ABSL_GUARDED_BY(lane_->mu) = false;
  bool released_ ABSL_GUARDED_BY(lane_->mu) = false;
  int outside_ ABSL_GUARDED_BY(lane_->mu) = 0;
  int refs_ ABSL_GUARDED_BY(lane_->mu) = 1;  // the RPC's, until OnDone
};

Coalescer::Coalescer(const std::function<std::shared_ptr<grpc::Channel>(int)>& channel, const ClientOptions& options)
    : options_(options) {
  const int n = std::max(1, options_.coalesce.streams);
  for (int i = 0; i < n; ++i) {
    auto lane = std::make_unique<Lane>();
    lane->channel = channel(i);
    lane->stub = v1::KeyValue::NewStub(lane->channel);
    lane->options = &options_;
    lanes_.push_back(std::move(lane));
  }
  if (options_.timeout.count() > 0) sweeper_ = std::thread([this] { sweep(); });
}

Coalescer::~Coalescer() {
  {
    absl::MutexLock lock(&sweep_mu_);
    stopping_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
  for (auto& lane : lanes_) {
    std::vector<Failure> failures;
    Stream* s = nullptr;
    {
      absl::MutexLock lock(&lane->mu);
      lane->closing = true;
      for (auto& m : lane->queue) {
        fail_slots(m.slots, absl::CancelledError("the client was destroyed"), &failures);
        fail_slots(m.gets, absl::CancelledError("the client was destroyed"), &failures);
      }
      lane->queue.clear();
      s = lane->stream;
      if (s != nullptr) {
        s->lock_is_held();
        s->begin_outside();
      }
    }
    deliver(failures);
    if (s != nullptr) {
      // Half-close: the server answers what it has, then ends the stream.
      s->close();
      s->end_outside();
    }
    const auto grace = std::max<Clock::duration>(std::chrono::seconds(1), options_.timeout);
    Lane* l = lane.get();
    auto no_live = [l]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(l->mu) { return l->live.empty(); };
    absl::MutexLock lock(&l->mu);
    if (!l->mu.AwaitWithTimeout(absl::Condition(&no_live), absl::FromChrono(grace))) {
      // The server does not end them: cancel (their requests fail CANCELLED).
      std::vector<Stream*> hung(l->live.begin(), l->live.end());
      for (Stream* h : hung) {
        h->lock_is_held();
        h->ref();
      }
      l->mu.Unlock();
      for (Stream* h : hung) {
        h->cancel();
        h->unref();
      }
      l->mu.Lock();
      l->mu.Await(absl::Condition(&no_live));
    }
    auto no_objects = [l]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(l->mu) { return l->objects == 0; };
    l->mu.Await(absl::Condition(&no_objects));
  }
}

Coalescer::Lane& Coalescer::lane_of_calling_thread() {
  // A thread keeps one lane for every kind of request, so its requests are
  // sent on one stream, whose messages the server applies in order. Chosen
  // here, once per thread, for every Coalescer of the process: the counter
  // and the thread's number must not live in a template (each instantiation
  // would have its own, and a thread's puts and gets would count lanes apart:
  // issue 24).
  static std::atomic<uint32_t> next_thread{0};
  thread_local const uint32_t thread_number = next_thread.fetch_add(1, std::memory_order_relaxed);
  return *lanes_[thread_number % lanes_.size()];
}

template <class Add, class Refuse>
void Coalescer::enqueue(uint64_t keys, uint64_t bytes, bool is_write, Add&& add, Refuse&& refuse) {
  Lane& lane = lane_of_calling_thread();
  const Clock::time_point deadline =
      options_.timeout.count() > 0 ? Clock::now() + options_.timeout : Clock::time_point::max();
  Stream* s = nullptr;
  bool start = false, write = false;
  {
    absl::ReleasableMutexLock lock(&lane.mu);
    if (lane.closing) {
      lock.Release();
      refuse(absl::CancelledError("the client is being destroyed"));
      return;
    }
    // A message closes at the key or byte limit, and when a put or delete
    // would follow packed gets (operations take effect first): the request
    // starts the next one (alone if it is larger than the limits itself).
    // A get may join after packed gets even as an operation: gets commute.
    const auto& o = options_.coalesce;
    if (lane.queue.empty()) lane.queue.emplace_back();
    Outgoing* m = &lane.queue.back();
    const bool empty = m->slots.empty() && m->gets.empty();
    if (!empty && (m->keys + keys > o.max_message_keys || m->bytes + bytes > o.max_message_bytes ||
                   (is_write && !m->gets.empty()))) {
      m = &lane.queue.emplace_back();
    }
    add(*m, deadline);
    m->keys += keys;
    m->bytes += bytes;
    if (lane.stream == nullptr) {
      lane.stream = new Stream(&lane);
      start = true;
    }
    s = lane.stream;
    s->lock_is_held();
    write = s->take_message();
    if (start || write) s->begin_outside();
  }
  if (start) s->start();
  if (write) s->write();
  if (start || write) s->end_outside();
}

void Coalescer::submit(v1::Operation&& op, Done done) {
  const uint64_t keys = keys_of(op);
  const uint64_t bytes = bytes_of(op);
  enqueue(
      keys, bytes, /*is_write=*/!op.has_get(),
      [&](Outgoing& m, Clock::time_point deadline) {
        m.req.add_ops()->Swap(&op);
        m.slots.push_back({std::move(done), deadline});
      },
      [&](const absl::Status& s) { done(s, nullptr); });
}

void Coalescer::submit_get(absl::Span<const uint64_t> keys, GetDone done) { submit_packed_get(keys, std::move(done)); }

void Coalescer::submit_get(absl::Span<const std::string_view> keys, GetDone done) {
  submit_packed_get(keys, std::move(done));
}

template <class Key>
void Coalescer::submit_packed_get(absl::Span<const Key> keys, GetDone done) {
  enqueue(
      keys.size(), bytes_of_keys(keys), /*is_write=*/false,
      [&](Outgoing& m, Clock::time_point deadline) {
        if (m.gets.empty()) m.byte_key_gets = kByteKeys<Key>;
        if (m.byte_key_gets == kByteKeys<Key>) {
          append_keys(m.req.mutable_gets(), keys);
          m.req.add_get_counts(static_cast<uint32_t>(keys.size()));
          m.gets.push_back({std::move(done), deadline, static_cast<uint32_t>(keys.size())});
          return;
        }
        // The packed gets hold the other kind of key: an operation of its own.
        *m.req.add_ops()->mutable_get() = make_get_request(keys);
        m.slots.push_back({[done = std::move(done)](const absl::Status& s, v1::OperationResult* r) {
                             if (s.ok()) {
                               done(GetResult(std::move(*r->mutable_get())));
                             } else {
                               done(s);
                             }
                           },
                           deadline});
      },
      [&](const absl::Status& s) { done(s); });
}

void Coalescer::sweep() {
  // The server refuses late operations itself (their timeouts travel with
  // them); this catches answers that do not come at all. It finds each late
  // request at most a sixteenth of the timeout (and at least 1 ms) late.
  const auto period = std::max<Clock::duration>(std::chrono::milliseconds(1), options_.timeout / 16);
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sweep_mu_) { return stopping_; };
  absl::MutexLock lock(&sweep_mu_);
  while (!sweep_mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::FromChrono(period))) {
    const Clock::time_point now = Clock::now();
    std::vector<Failure> failures;
    std::vector<Stream*> to_cancel;  // each holds a reference taken here
    for (auto& lane : lanes_) {
      absl::MutexLock l(&lane->mu);
      for (Stream* s : lane->live) {
        s->lock_is_held();
        s->expire(now, &failures);
        if (s->give_up_connecting(now, &failures)) {
          s->ref();
          to_cancel.push_back(s);
        }
      }
      for (auto& m : lane->queue) {
        expire_slots(m.slots, now, "not sent before the deadline", &failures);
        expire_slots(m.gets, now, "not sent before the deadline", &failures);
      }
    }
    sweep_mu_.Unlock();
    deliver(failures);
    for (Stream* s : to_cancel) {
      s->cancel();
      s->unref();
    }
    sweep_mu_.Lock();
  }
}

uint64_t Coalescer::messages_sent() const {
  uint64_t n = 0;
  for (const auto& l : lanes_) n += l->messages.load(std::memory_order_relaxed);
  return n;
}

uint64_t Coalescer::operations_sent() const {
  uint64_t n = 0;
  for (const auto& l : lanes_) n += l->operations.load(std::memory_order_relaxed);
  return n;
}

}  // namespace gphkv::detail
