#include "loadgen/gphkv_target.h"

#include <sys/prctl.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gphkv/v1/gphkv.grpc.pb.h"
#include "loadgen/gphkv_coalesced_session.h"

namespace gphkv::loadgen {
namespace {

namespace v1 = ::gphkv::v1;

gpr_timespec ToGpr(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count();
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(left > 0 ? left : 0, GPR_TIMESPAN));
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  // A distinct argument per channel, and a local subchannel pool, so that
  // every channel gets its own TCP connection instead of sharing one.
  static std::atomic<int> next_id{0};
  grpc::ChannelArguments args;
  args.SetInt("gphkv.loadgen.connection_id", next_id.fetch_add(1));
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// One call in flight: everything gRPC writes into lives here until Finish
// is delivered.
struct Call {
  uint64_t tag = 0;
  OpType type = OpType::kGet;
  uint64_t sent_bytes = 0;
  grpc::ClientContext context;
  grpc::Status status;
  v1::GetRequest get_request;
  v1::GetResponse get_response;
  v1::PutRequest put_request;
  v1::PutResponse put_response;
  v1::DeleteRequest delete_request;
  v1::DeleteResponse delete_response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::GetResponse>> get_reader;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::PutResponse>> put_reader;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::DeleteResponse>> delete_reader;
};

class GphkvSession : public Session {
 public:
  GphkvSession(const std::string& address, size_t connections, const ValuePool* values) : values_(values) {
    for (size_t i = 0; i < connections; ++i) stubs_.push_back(v1::KeyValue::NewStub(MakeChannel(address)));
    waker_ = std::thread([this] { Wake(); });
  }

  ~GphkvSession() override {
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_waker_ = true;
    }
    wake_cv_.notify_one();
    waker_.join();
    // Calls still in flight (a drain that timed out) are cancelled; the
    // queue must then be drained of every tag before it can be destroyed.
    for (Call* c : in_flight_) c->context.TryCancel();
    void* got = nullptr;
    bool ok = false;
    while ((!in_flight_.empty() || alarm_pending_) &&
           cq_.AsyncNext(&got, &ok, ToGpr(Clock::now() + std::chrono::seconds(5))) ==
               grpc::CompletionQueue::GOT_EVENT) {
      if (got == &alarm_) {
        alarm_pending_ = false;
        continue;
      }
      Call* c = static_cast<Call*>(got);
      in_flight_.erase(c);
      delete c;
    }
    cq_.Shutdown();
    while (cq_.Next(&got, &ok)) {
      if (got != &alarm_) delete static_cast<Call*>(got);
    }
  }

  size_t connections() const override { return stubs_.size(); }

  void Start(size_t connection, const Op& op, uint64_t tag) override {
    auto* c = new Call;
    c->tag = tag;
    c->type = op.type;
    v1::KeyValue::Stub& stub = *stubs_[connection % stubs_.size()];
    switch (op.type) {
      case OpType::kGet: {
        c->get_request.mutable_keys()->Add(op.keys.begin(), op.keys.end());
        c->get_request.set_value_mode(v1::VALUE_MODE_VALUES);
        c->get_reader = stub.PrepareAsyncGet(&c->context, c->get_request, &cq_);
        c->get_reader->StartCall();
        c->get_reader->Finish(&c->get_response, &c->status, c);
        break;
      }
      case OpType::kPut: {
        c->put_request.mutable_keys()->Add(op.keys.begin(), op.keys.end());
        c->put_request.mutable_value_lengths()->Add(op.value_sizes.begin(), op.value_sizes.end());
        std::string* values = c->put_request.mutable_values();
        uint64_t total = 0;
        for (uint32_t s : op.value_sizes) total += s;
        values->reserve(total);
        for (size_t i = 0; i < op.keys.size(); ++i) {
          absl::string_view v = values_->ValueFor(op.keys[i], op.value_sizes[i]);
          values->append(v.data(), v.size());
        }
        c->sent_bytes = total;
        c->put_reader = stub.PrepareAsyncPut(&c->context, c->put_request, &cq_);
        c->put_reader->StartCall();
        c->put_reader->Finish(&c->put_response, &c->status, c);
        break;
      }
      case OpType::kDelete: {
        c->delete_request.mutable_keys()->Add(op.keys.begin(), op.keys.end());
        c->delete_reader = stub.PrepareAsyncDelete(&c->context, c->delete_request, &cq_);
        c->delete_reader->StartCall();
        c->delete_reader->Finish(&c->delete_response, &c->status, c);
        break;
      }
    }
    in_flight_.insert(c);
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    int delivered = 0;
    void* got = nullptr;
    bool ok = false;
    // gRPC (1.51) turns a completion-queue deadline into whole milliseconds
    // (an epoll_wait timeout): AsyncNext(now + 300 us) on an idle queue
    // returned 0.6-2 ms late (p50 760 us, p99 1.98 ms on the dev VM), and
    // the open loop counts a late send as latency. So the waker thread
    // sleeps until the deadline itself (ns timer, 1 ns slack) and kicks the
    // queue with an alarm that is already due; completions still wake this
    // thread directly, with no hand-off.
    const bool blocking = deadline > Clock::now();  // spin_us polls with past deadlines: no kick needed
    if (blocking) ArmWaker(deadline);
    for (;;) {
      grpc::CompletionQueue::NextStatus st = cq_.AsyncNext(&got, &ok, ToGpr(deadline));
      if (st != grpc::CompletionQueue::GOT_EVENT) break;
      if (got == &alarm_) {
        {
          std::lock_guard<std::mutex> lock(wake_mu_);
          alarm_pending_ = false;
        }
        if (Clock::now() >= deadline) break;
        ArmWaker(deadline);  // a kick meant for an earlier deadline
        continue;
      }
      Call* c = static_cast<Call*>(got);
      in_flight_.erase(c);
      done(ctx, c->tag, ResultOf(*c));
      delete c;
      ++delivered;
      // Take what else is ready, and return.
      while (cq_.AsyncNext(&got, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) == grpc::CompletionQueue::GOT_EVENT) {
        if (got == &alarm_) {
          std::lock_guard<std::mutex> lock(wake_mu_);
          alarm_pending_ = false;
          continue;
        }
        Call* d = static_cast<Call*>(got);
        in_flight_.erase(d);
        done(ctx, d->tag, ResultOf(*d));
        delete d;
        ++delivered;
      }
      break;
    }
    if (blocking) {
      std::lock_guard<std::mutex> lock(wake_mu_);
      wake_at_ = Clock::time_point::max();  // this wait is over: no kick
    }
    return delivered;
  }

 private:
  static OpResult ResultOf(const Call& c) {
    OpResult r;
    if (!c.status.ok()) {
      r.error = GrpcStatusCodeName(c.status.error_code());
      return r;
    }
    r.ok = true;
    switch (c.type) {
      case OpType::kGet:
        for (bool f : c.get_response.found()) r.found += f;
        r.value_bytes = c.get_response.values().size();
        break;
      case OpType::kPut:
        r.found = c.put_response.created_size();
        r.value_bytes = c.sent_bytes;
        break;
      case OpType::kDelete:
        for (bool d : c.delete_response.deleted()) r.found += d;
        break;
    }
    return r;
  }

  void ArmWaker(Clock::time_point deadline) {
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      wake_at_ = deadline;
    }
    wake_cv_.notify_one();
  }

  // The waker thread: at wake_at_, sets the alarm due at once, which wakes
  // the thread blocked in AsyncNext. One alarm at a time (an alarm may be
  // set again only once its event was taken).
  void Wake() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    std::unique_lock<std::mutex> lock(wake_mu_);
    for (;;) {
      wake_cv_.wait(lock, [&] { return stop_waker_ || (wake_at_ != Clock::time_point::max() && !alarm_pending_); });
      if (stop_waker_) return;
      const Clock::time_point at = wake_at_;
      if (wake_cv_.wait_until(lock, at, [&] { return stop_waker_ || wake_at_ != at; })) continue;
      alarm_.Set(&cq_, gpr_inf_past(GPR_CLOCK_MONOTONIC), &alarm_);
      alarm_pending_ = true;
      wake_at_ = Clock::time_point::max();
    }
  }

  const ValuePool* values_;
  std::vector<std::unique_ptr<v1::KeyValue::Stub>> stubs_;
  grpc::CompletionQueue cq_;
  std::unordered_set<Call*> in_flight_;
  grpc::Alarm alarm_;
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  Clock::time_point wake_at_ = Clock::time_point::max();
  bool alarm_pending_ = false;
  bool stop_waker_ = false;
  std::thread waker_;
};

class GphkvTarget : public Target {
 public:
  GphkvTarget(std::string address, std::string api, const ValuePool* values)
      : address_(std::move(address)), api_(std::move(api)), values_(values) {}
  std::string name() const override { return "gphkv"; }

  absl::Status WaitReady(Clock::time_point deadline) override {
    auto stub = v1::KeyValue::NewStub(MakeChannel(address_));
    grpc::Status last;
    // Bounded by the deadline (one attempt at least); each waits at most 1 s.
    do {
      grpc::ClientContext ctx;
      ctx.set_wait_for_ready(true);
      const Clock::duration left = std::max<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(100));
      ctx.set_deadline(std::chrono::system_clock::now() + std::min<Clock::duration>(std::chrono::seconds(1), left));
      v1::StatsRequest req;
      v1::StatsResponse resp;
      last = stub->Stats(&ctx, req, &resp);
      if (last.ok()) return absl::OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (Clock::now() < deadline);
    return absl::UnavailableError(absl::StrCat("gphkv at ", address_, " did not answer Stats: ",
                                               GrpcStatusCodeName(last.error_code()), " ", last.error_message()));
  }

  absl::StatusOr<std::unique_ptr<Session>> Connect(size_t connections) override {
    if (api_ == "coalesced") return MakeGphkvCoalescedSession(address_, connections, values_);
    return std::unique_ptr<Session>(new GphkvSession(address_, connections, values_));
  }

 private:
  std::string address_;
  std::string api_;
  const ValuePool* values_;
};

}  // namespace

const char* GrpcStatusCodeName(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN_CODE";
}

std::unique_ptr<Target> MakeGphkvTarget(const std::string& address, const std::string& api,
                                        const ValuePool* values) {
  return std::make_unique<GphkvTarget>(address, api, values);
}

}  // namespace gphkv::loadgen
