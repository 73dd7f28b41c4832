#include "loadgen/gphkv_target.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gphkv/v1/gphkv.grpc.pb.h"
#include "loadgen/gphkv_coalesced_session.h"
#include "loadgen/gphkv_pipeline_session.h"
#include "loadgen/gphkv_unary_session.h"

namespace gphkv::loadgen {
namespace {

namespace v1 = ::gphkv::v1;

class GphkvTarget : public Target {
 public:
  GphkvTarget(std::string address, GphkvApi api, const ValuePool* values)
      : address_(std::move(address)), api_(api), values_(values) {}
  std::string name() const override { return "gphkv"; }

  absl::Status WaitReady(Clock::time_point deadline) override {
    auto stub = v1::KeyValue::NewStub(MakeGphkvChannel(address_));
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

  // The factory: one session per driver thread, of the kind --api names.
  absl::StatusOr<std::unique_ptr<Session>> Connect(size_t connections) override {
    switch (api_) {
      case GphkvApi::kUnary: return MakeGphkvUnarySession(address_, connections, values_);
      case GphkvApi::kPipeline:
        return MakeGphkvPipelineSession(address_, connections, values_, std::chrono::seconds(10));
      case GphkvApi::kCoalesced: return MakeGphkvCoalescedSession(address_, connections, values_);
    }
    return absl::InternalError("unknown GphkvApi");
  }

 private:
  std::string address_;
  GphkvApi api_;
  const ValuePool* values_;
};

}  // namespace

absl::StatusOr<GphkvApi> ParseGphkvApi(const std::string& name) {
  if (name == "unary") return GphkvApi::kUnary;
  if (name == "pipeline") return GphkvApi::kPipeline;
  if (name == "coalesced") return GphkvApi::kCoalesced;
  return absl::InvalidArgumentError(absl::StrCat("unknown --api '", name, "' (want unary, pipeline or coalesced)"));
}

std::unique_ptr<Target> MakeGphkvTarget(const std::string& address, GphkvApi api, const ValuePool* values) {
  return std::make_unique<GphkvTarget>(address, api, values);
}

std::shared_ptr<grpc::Channel> MakeGphkvChannel(const std::string& address) {
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

}  // namespace gphkv::loadgen
