#include "client/coalescer.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <set>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"

namespace gphkv::detail {
namespace {

using Clock = Coalescer::Clock;

// One request: what answers it and by when.
struct Slot {
  Coalescer::Done done;  // null once answered (by the sweeper, say)
  Clock::time_point deadline;
};

// A message being filled or waiting for its turn.
struct Outgoing {
  v1::BatchRequest req;
  std::vector<Slot> slots;
  uint64_t keys = 0, bytes = 0;
};

struct Failure {
  Coalescer::Done done;
  absl::Status status;
};

void deliver(std::vector<Failure>& failures) {
  for (auto& f : failures) f.done(f.status, nullptr);
  failures.clear();
}

uint64_t keys_of(const v1::Operation& op) {
  switch (op.op_case()) {
    case v1::Operation::kGet: return op.get().keys_size();
    case v1::Operation::kPut: return op.put().keys_size();
    case v1::Operation::kDelete: return op.delete_().keys_size();
    default: return 0;
  }
}

void fail_slots(std::vector<Slot>& slots, const absl::Status& why, std::vector<Failure>* out) {
  for (auto& s : slots) {
    if (s.done) out->push_back({std::move(s.done), why});
  }
  slots.clear();
}

}  // namespace

// Every field is guarded by mu, the streams' bookkeeping too.
struct Coalescer::Lane {
  std::unique_ptr<v1::KeyValue::Stub> stub;
  const ClientOptions* options = nullptr;

  std::mutex mu;
  Stream* stream = nullptr;  // the stream in use; null before the first request and after one ended
  std::deque<Outgoing> queue;  // messages not yet sent; the back one is filling
  std::set<Stream*> live;      // streams whose RPC is not done yet
  uint64_t next_id = 1;
  bool closing = false;
  std::condition_variable closed_cv;  // signalled as streams finish
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
  // Under lane->mu.
  explicit Stream(Lane* lane) : lane_(lane) {
    lane_->stub->async()->Batches(&ctx_, this);
    AddHold();
    lane_->live.insert(this);
  }

  // --- Under lane->mu -------------------------------------------------------

  // Whether the lane's next message may go now; if so, moves it into out_,
  // records it in flight and marks a write under way.
  bool take_message() {
    if (writing_ || detached_ || lane_->closing || lane_->queue.empty()) return false;
    if (static_cast<int>(in_flight_.size()) >= lane_->options->coalesce.max_in_flight) return false;
    Outgoing& next = lane_->queue.front();
    out_.Clear();
    out_.Swap(&next.req);
    const uint64_t id = lane_->next_id++;
    out_.set_id(id);
    // Each operation's timeout counts from now: the time it waited here is spent.
    const Clock::time_point now = Clock::now();
    for (int i = 0; i < out_.ops_size(); ++i) {
      const Clock::time_point d = next.slots[i].deadline;
      if (d == Clock::time_point::max()) continue;
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(d - now).count();
      out_.mutable_ops(i)->set_timeout_us(static_cast<uint64_t>(std::max<int64_t>(1, left)));
    }
    in_flight_.push_back({id, std::move(next.slots)});
    lane_->queue.pop_front();
    writing_ = true;
    lane_->messages.fetch_add(1, std::memory_order_relaxed);
    lane_->operations.fetch_add(static_cast<uint64_t>(out_.ops_size()), std::memory_order_relaxed);
    return true;
  }
  // An operation from outside a reaction is about to start (keeps the hold).
  void begin_outside() {
    ++outside_;
    ++refs_;
  }
  // The requests in flight whose deadline passed.
  void expire(Clock::time_point now, std::vector<Failure>* out) {
    for (auto& f : in_flight_) {
      for (auto& s : f.slots) {
        if (s.done && s.deadline <= now) {
          out->push_back({std::move(s.done), absl::DeadlineExceededError("no answer before the deadline")});
          s.done = nullptr;
        }
      }
    }
  }
  void ref() { ++refs_; }

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
      std::lock_guard<std::mutex> lock(lane_->mu);
      --outside_;
      release = should_release();
    }
    if (release) RemoveHold();
    unref();
  }
  void unref() {
    bool last;
    {
      std::lock_guard<std::mutex> lock(lane_->mu);
      last = --refs_ == 0;
    }
    if (last) delete this;
  }

  // --- Reactions --------------------------------------------------------------

  void OnWriteDone(bool ok) override {
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(lane_->mu);
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
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(lane_->mu);
      for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
        if (it->id != resp.id()) continue;
        slots = std::move(it->slots);
        in_flight_.erase(it);
        break;
      }
      more = take_message();
    }
    if (more) write();
    for (int i = 0; i < static_cast<int>(slots.size()); ++i) {
      if (!slots[i].done) continue;  // the sweeper answered it already
      if (i >= resp.results_size()) {
        slots[i].done(absl::InternalError(absl::StrCat("BatchResponse id ", resp.id(), " carries ",
                                                       resp.results_size(), " results for ", slots.size(),
                                                       " operations")),
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
      std::lock_guard<std::mutex> lock(lane_->mu);
      const absl::Status why =
          status.ok() ? absl::UnavailableError("the Batches stream ended before answering; the request may "
                                               "or may not have taken effect")
                      : absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                                     absl::StrCat("Batches stream: ", status.error_message(),
                                                  "; the request may or may not have taken effect"));
      for (auto& f : in_flight_) fail_slots(f.slots, why, &failures);
      in_flight_.clear();
      lane_->live.erase(this);
      lane_->closed_cv.notify_all();
    }
    deliver(failures);
    unref();  // the RPC's reference
  }

 private:
  struct InFlight {
    uint64_t id;
    std::vector<Slot> slots;
  };

  // Under lane->mu: gives the hold back once the lane stopped using the
  // stream and no outside operation is under way (once).
  bool should_release() {
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
      std::lock_guard<std::mutex> lock(lane_->mu);
      detached_ = true;
      if (lane_->stream == this) lane_->stream = nullptr;
      if (!lane_->closing && !lane_->queue.empty()) {
        next = new Stream(lane_);
        lane_->stream = next;
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

  Lane* lane_;
  grpc::ClientContext ctx_;
  v1::BatchRequest out_;
  v1::BatchResponse in_;
  // Under lane_->mu:
  std::deque<InFlight> in_flight_;  // messages sent, not yet answered, oldest first
  bool writing_ = false;
  bool detached_ = false;
  bool released_ = false;
  int outside_ = 0;
  int refs_ = 1;  // the RPC's, until OnDone
};

Coalescer::Coalescer(const std::function<std::shared_ptr<grpc::Channel>(int)>& channel, const ClientOptions& options)
    : options_(options) {
  const int n = std::max(1, options_.coalesce.streams);
  for (int i = 0; i < n; ++i) {
    auto lane = std::make_unique<Lane>();
    lane->stub = v1::KeyValue::NewStub(channel(i));
    lane->options = &options_;
    lanes_.push_back(std::move(lane));
  }
  if (options_.timeout.count() > 0) sweeper_ = std::thread([this] { sweep(); });
}

Coalescer::~Coalescer() {
  {
    std::lock_guard<std::mutex> lock(sweep_mu_);
    stopping_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  for (auto& lane : lanes_) {
    std::vector<Failure> failures;
    Stream* s = nullptr;
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->closing = true;
      for (auto& m : lane->queue) fail_slots(m.slots, absl::CancelledError("the client was destroyed"), &failures);
      lane->queue.clear();
      s = lane->stream;
      if (s != nullptr) s->begin_outside();
    }
    deliver(failures);
    if (s != nullptr) {
      // Half-close: the server answers what it has, then ends the stream.
      s->close();
      s->end_outside();
    }
    std::unique_lock<std::mutex> lock(lane->mu);
    const auto grace = std::max<Clock::duration>(std::chrono::seconds(1), options_.timeout);
    if (!lane->closed_cv.wait_for(lock, grace, [&] { return lane->live.empty(); })) {
      // The server does not end them: cancel (their requests fail CANCELLED).
      std::vector<Stream*> hung(lane->live.begin(), lane->live.end());
      for (Stream* h : hung) h->ref();
      lock.unlock();
      for (Stream* h : hung) {
        h->cancel();
        h->unref();
      }
      lock.lock();
      lane->closed_cv.wait(lock, [&] { return lane->live.empty(); });
    }
  }
}

void Coalescer::submit(v1::Operation&& op, Done done) {
  // A thread keeps its lane: its requests are sent, and take effect, in order.
  static std::atomic<uint32_t> next_lane{0};
  thread_local const uint32_t thread_lane = next_lane.fetch_add(1, std::memory_order_relaxed);
  Lane& lane = *lanes_[thread_lane % lanes_.size()];
  const Clock::time_point deadline =
      options_.timeout.count() > 0 ? Clock::now() + options_.timeout : Clock::time_point::max();
  const uint64_t keys = keys_of(op);
  const uint64_t bytes = op.has_put() ? op.put().values().size() : 0;

  Stream* s = nullptr;
  bool start = false, write = false;
  {
    std::unique_lock<std::mutex> lock(lane.mu);
    if (lane.closing) {
      lock.unlock();
      done(absl::CancelledError("the client is being destroyed"), nullptr);
      return;
    }
    // A message closes at the key or byte limit; the request starts the
    // next one (alone if it is larger than the limits itself).
    if (lane.queue.empty() ||
        (!lane.queue.back().slots.empty() && (lane.queue.back().keys + keys > options_.coalesce.max_message_keys ||
                                               lane.queue.back().bytes + bytes > options_.coalesce.max_message_bytes))) {
      lane.queue.emplace_back();
    }
    Outgoing& m = lane.queue.back();
    m.req.add_ops()->Swap(&op);
    m.slots.push_back({std::move(done), deadline});
    m.keys += keys;
    m.bytes += bytes;
    if (lane.stream == nullptr) {
      lane.stream = new Stream(&lane);
      start = true;
    }
    s = lane.stream;
    write = s->take_message();
    if (start || write) s->begin_outside();
  }
  if (start) s->start();
  if (write) s->write();
  if (start || write) s->end_outside();
}

void Coalescer::sweep() {
  // The server refuses late operations itself (their timeouts travel with
  // them); this catches answers that do not come at all. It finds each late
  // request at most a sixteenth of the timeout (and at least 1 ms) late.
  const auto period = std::max<Clock::duration>(std::chrono::milliseconds(1), options_.timeout / 16);
  std::unique_lock<std::mutex> lock(sweep_mu_);
  while (!sweep_cv_.wait_for(lock, period, [&] { return stopping_; })) {
    const Clock::time_point now = Clock::now();
    std::vector<Failure> failures;
    for (auto& lane : lanes_) {
      std::lock_guard<std::mutex> l(lane->mu);
      for (Stream* s : lane->live) s->expire(now, &failures);
      for (auto& m : lane->queue) {
        for (auto& slot : m.slots) {
          if (slot.done && slot.deadline <= now) {
            failures.push_back({std::move(slot.done), absl::DeadlineExceededError("not sent before the deadline")});
            slot.done = nullptr;
          }
        }
      }
    }
    lock.unlock();
    deliver(failures);
    lock.lock();
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
