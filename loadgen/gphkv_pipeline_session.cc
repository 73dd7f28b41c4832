#include "loadgen/gphkv_pipeline_session.h"

#include <optional>

#include <deque>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gphkv/v1/gphkv.grpc.pb.h"
#include "loadgen/gphkv_messages.h"
#include "loadgen/gphkv_target.h"
#include "loadgen/timed_completion_queue.h"

namespace gphkv::loadgen {
namespace {

namespace v1 = ::gphkv::v1;

class PipelineSession final : public Session {
 public:
  PipelineSession(const std::string& address, const TlsOptions& tls, size_t connections, const ValuePool* values,
                  bool inspect_reads, std::optional<ByteKeyNames> byte_keys)
      : values_(values), inspect_(inspect_reads ? values : nullptr), byte_keys_(byte_keys) {
    for (size_t i = 0; i < connections; ++i) {
      streams_.push_back(std::make_unique<Stream>(MakeGphkvChannel(address, tls)));
      Stream& s = *streams_.back();
      s.call = s.stub->PrepareAsyncPipeline(&s.context, queue_.cq());
      ++s.events_out;
      s.call->StartCall(&s.start_event);
    }
  }

  ~PipelineSession() override {
    // Idle streams end politely (half-close; the server then ends the
    // stream); the others, and any that does not end within 2 s, are cancelled.
    for (auto& s : streams_) {
      if (s->finish_posted) continue;
      if (s->started && !s->broken && !s->writing && s->queued.empty() && s->in_flight == 0) {
        s->closing = true;
        ++s->events_out;
        s->call->WritesDone(&s->writes_done_event);
      } else {
        s->context.TryCancel();
      }
    }
    auto forget = [](uint64_t, const OpResult&) {};
    auto handle = [&](void* event, bool ok) { Handle(static_cast<Event*>(event), ok, forget); };
    auto more = [this] {
      for (const auto& s : streams_) {
        if (s->events_out > 0) return true;
      }
      return false;
    };
    queue_.Settle(more, std::chrono::seconds(2), handle);
    for (auto& s : streams_) {
      if (!s->finished) s->context.TryCancel();
    }
    queue_.Settle(more, std::chrono::seconds(5), handle);
    shut_down_ = true;
    queue_.Shutdown(handle);
  }

  // Waits for every stream's start; the first one that failed, if any.
  absl::Status AwaitStarts(Clock::duration timeout) {
    auto forget = [](uint64_t, const OpResult&) {};
    queue_.Settle(
        [this] {
          for (const auto& s : streams_) {
            if (!s->started && !s->finished) return true;
          }
          return false;
        },
        timeout, [&](void* event, bool ok) { Handle(static_cast<Event*>(event), ok, forget); });
    for (size_t i = 0; i < streams_.size(); ++i) {
      const Stream& s = *streams_[i];
      if (s.started && !s.finished) continue;
      return absl::UnavailableError(absl::StrCat(
          "Pipeline stream ", i, " did not start: ",
          s.finished ? absl::StrCat(GrpcStatusCodeName(s.status.error_code()), " ", s.status.error_message())
                     : "no answer in time"));
    }
    return absl::OkStatus();
  }

  size_t connections() const override { return streams_.size(); }

  void Start(size_t connection, const Op& op, uint64_t tag) override {
    Stream& s = *streams_[connection % streams_.size()];
    if (s.finished) {
      failed_at_once_.emplace_back(tag, Named(s.end_error));
      return;
    }
    in_flight_[tag] = InFlight{&s, &op, 0};
    ++s.in_flight;
    s.queued.push_back(tag);
    WriteNext(s);
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    int delivered = 0;
    auto deliver = [&](uint64_t tag, const OpResult& r) {
      done(ctx, tag, r);
      ++delivered;
    };
    if (!failed_at_once_.empty()) {
      std::vector<std::pair<uint64_t, OpResult>> failed;
      failed.swap(failed_at_once_);  // `done` may start ops that fail at once too: next poll
      for (const auto& [tag, r] : failed) deliver(tag, r);
      return delivered;
    }
    // Not every event answers an op (a write or a start completing): wait
    // on until one does, or the deadline passes.
    do {
      queue_.Next(deadline, [&](void* event, bool ok) { Handle(static_cast<Event*>(event), ok, deliver); });
    } while (delivered == 0 && Clock::now() < deadline);
    return delivered;
  }

 private:
  struct Stream;
  // A completion-queue tag: which stream, and which of its operations ended.
  struct Event {
    enum Kind { kStart, kRead, kWrite, kWritesDone, kFinish };
    Stream* stream;
    Kind kind;
  };
  struct Stream {
    explicit Stream(std::shared_ptr<grpc::Channel> channel) : stub(v1::KeyValue::NewStub(std::move(channel))) {}
    std::unique_ptr<v1::KeyValue::Stub> stub;
    grpc::ClientContext context;  // before `call`, which must go first
    std::unique_ptr<grpc::ClientAsyncReaderWriter<v1::PipelineRequest, v1::PipelineResponse>> call;
    Event start_event{this, Event::kStart}, read_event{this, Event::kRead}, write_event{this, Event::kWrite},
        writes_done_event{this, Event::kWritesDone}, finish_event{this, Event::kFinish};
    v1::PipelineResponse reading;
    grpc::Status status;          // the stream's end, once finished
    std::string end_error;        // its name, for ops that come after
    std::deque<uint64_t> queued;  // ops waiting for the write in progress, in order
    int events_out = 0;           // operations posted on the queue, not yet returned
    size_t in_flight = 0;         // ops sent or queued, not yet answered
    bool started = false, writing = false, broken = false, closing = false;
    bool finish_posted = false, finished = false;
  };
  struct InFlight {
    Stream* stream;
    const Op* op;         // valid until its completion is delivered (Session's contract)
    uint64_t sent_bytes;  // put value bytes, once written
  };
  static OpResult Named(const std::string& error) {
    OpResult r;
    r.error = error;
    return r;
  }

  // `deliver(tag, result)` hands an answered op to the driver.
  template <typename Deliver>
  void Handle(Event* e, bool ok, Deliver&& deliver) {
    Stream& s = *e->stream;
    --s.events_out;
    switch (e->kind) {
      case Event::kStart:
        if (!ok) {  // the call is dead before it began: learn why
          s.broken = true;
          PostFinish(s);
          return;
        }
        s.started = true;
        PostRead(s);
        WriteNext(s);
        return;
      case Event::kRead: {
        if (!ok) {  // the server ended the stream (or it broke)
          PostFinish(s);
          return;
        }
        const uint64_t tag = s.reading.id();
        auto it = in_flight_.find(tag);
        // An id this stream did not send answers nothing: the op it should
        // have answered stays out and the drain counts it.
        if (it == in_flight_.end() || it->second.stream != &s) {
          PostRead(s);
          return;
        }
        const OpResult r = ResultOf(s.reading, it->second);
        in_flight_.erase(it);
        --s.in_flight;
        PostRead(s);  // reuses s.reading: the result is taken first
        deliver(tag, r);
        return;
      }
      case Event::kWrite:
        s.writing = false;
        if (!ok) {  // the call is over; the pending read fails next, then Finish says why
          s.broken = true;
          return;
        }
        WriteNext(s);
        return;
      case Event::kWritesDone: return;
      case Event::kFinish:
        s.finished = true;
        s.end_error = s.status.ok() ? "STREAM_ENDED" : GrpcStatusCodeName(s.status.error_code());
        FailInFlight(s, deliver);
        return;
    }
  }

  // The ops the stream still carried fail with its end's name.
  template <typename Deliver>
  void FailInFlight(Stream& s, Deliver&& deliver) {
    std::vector<uint64_t> tags;
    for (const auto& [tag, f] : in_flight_) {
      if (f.stream == &s) tags.push_back(tag);
    }
    for (uint64_t tag : tags) in_flight_.erase(tag);
    s.in_flight = 0;
    s.queued.clear();
    for (uint64_t tag : tags) deliver(tag, Named(s.end_error));
  }

  void WriteNext(Stream& s) {
    if (!s.started || s.writing || s.broken || s.closing || s.queued.empty() || shut_down_) return;
    const uint64_t tag = s.queued.front();
    s.queued.pop_front();
    InFlight& f = in_flight_.at(tag);
    request_.Clear();
    request_.set_id(tag);
    switch (f.op->type) {
      case OpType::kGet: FillGetRequest(*f.op, request_.mutable_get(), names()); break;
      case OpType::kPut: f.sent_bytes = FillPutRequest(*f.op, *values_, request_.mutable_put(), names()); break;
      case OpType::kDelete: FillDeleteRequest(*f.op, request_.mutable_delete_(), names()); break;
    }
    grpc::WriteOptions options;
    // More are waiting: gRPC may hold this one to send them together; the
    // last of the burst goes without the hint, which flushes.
    if (!s.queued.empty()) options.set_buffer_hint();
    s.writing = true;
    ++s.events_out;
    s.call->Write(request_, options, &s.write_event);  // serialized now: request_ is free again
  }

  void PostRead(Stream& s) {
    if (shut_down_) return;
    ++s.events_out;
    s.call->Read(&s.reading, &s.read_event);
  }

  void PostFinish(Stream& s) {
    if (s.finish_posted || shut_down_) return;
    s.finish_posted = true;
    ++s.events_out;
    s.call->Finish(&s.status, &s.finish_event);
  }

  OpResult ResultOf(const v1::PipelineResponse& resp, const InFlight& f) const {
    if (resp.code() != 0) return FailedOp(resp.code());
    switch (f.op->type) {
      case OpType::kGet:
        if (resp.has_get()) return GetOpResult(resp.get(), f.op->keys, inspect_);
        break;
      case OpType::kPut:
        if (resp.has_put()) return PutOpResult(resp.put(), f.sent_bytes);
        break;
      case OpType::kDelete:
        if (resp.has_delete_()) return DeleteOpResult(resp.delete_());
        break;
    }
    return Named("PROTOCOL_ERROR");  // an OK answer of the wrong kind
  }

  const ValuePool* values_;
  const ValuePool* inspect_;                     // null: gets' values are not read back
  const std::optional<ByteKeyNames> byte_keys_;  // --key_format=bytes|tao
  const ByteKeyNames* names() const { return byte_keys_ ? &*byte_keys_ : nullptr; }
  TimedCompletionQueue queue_;  // declared before the streams: outlives their calls
  std::vector<std::unique_ptr<Stream>> streams_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
  std::vector<std::pair<uint64_t, OpResult>> failed_at_once_;  // ops on an ended stream, for the next poll
  v1::PipelineRequest request_;
  bool shut_down_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> MakeGphkvPipelineSession(const std::string& address, const TlsOptions& tls,
                                                                  size_t connections, const ValuePool* values,
                                                                  Clock::duration open_timeout, bool inspect_reads,
                                                                  std::optional<ByteKeyNames> byte_keys) {
  auto session = std::make_unique<PipelineSession>(address, tls, connections, values, inspect_reads, byte_keys);
  if (absl::Status st = session->AwaitStarts(open_timeout); !st.ok()) return st;
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace gphkv::loadgen
