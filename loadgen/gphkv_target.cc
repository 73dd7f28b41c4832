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
  GphkvTarget(GphkvServers servers, GphkvApi api, const ValuePool* values, const TargetOptions& options)
      : servers_(std::move(servers)), api_(api), values_(values), options_(options) {}
  std::string name() const override { return "gphkv"; }

  // Every shard must answer.
  absl::Status WaitReady(Clock::time_point deadline) override {
    for (const std::string& shard : servers_.shards.shards) {
      if (auto s = WaitReady(shard, deadline); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The factory: one session per driver thread, of the kind --api names.
  absl::StatusOr<std::unique_ptr<Session>> Connect(size_t connections) override {
    const bool inspect = options_.inspect_reads;
    const std::optional<ByteKeyNames>& byte_keys = options_.byte_keys;
    switch (api_) {
      case GphkvApi::kUnary: return MakeGphkvUnarySession(servers_, connections, values_, inspect, byte_keys);
      case GphkvApi::kPipeline:
        return MakeGphkvPipelineSession(servers_.shards.shards[0], servers_.tls, connections, values_,
                                        std::chrono::seconds(10), inspect, byte_keys);
      case GphkvApi::kCoalesced: {
        std::shared_ptr<ShardedClient> client = shared_client_;
        if (client == nullptr) {
          auto made = MakeGphkvCoalescingClient(servers_, connections, options_.coalesce_in_flight);
          if (!made.ok()) return made.status();
          client = *made;
          // The first session's client is every later session's too (the
          // load phase's and the run's): one client for the whole process.
          if (options_.shared_client) shared_client_ = client;
        }
        return MakeGphkvCoalescedSession(std::move(client), connections, values_, inspect, byte_keys);
      }
    }
    return absl::InternalError("unknown GphkvApi");
  }

 private:
  absl::Status WaitReady(const std::string& address, Clock::time_point deadline) {
    auto stub = v1::KeyValue::NewStub(MakeGphkvChannel(address, servers_.tls));
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
    return absl::UnavailableError(absl::StrCat("gphkv at ", address, " did not answer Stats: ",
                                               GrpcStatusCodeName(last.error_code()), " ", last.error_message()));
  }

  const GphkvServers servers_;
  const GphkvApi api_;
  const ValuePool* values_;
  const TargetOptions options_;
  std::shared_ptr<ShardedClient> shared_client_;  // --clients=shared: made by the first Connect
};

}  // namespace

absl::StatusOr<GphkvApi> ParseGphkvApi(const std::string& name) {
  if (name == "unary") return GphkvApi::kUnary;
  if (name == "pipeline") return GphkvApi::kPipeline;
  if (name == "coalesced") return GphkvApi::kCoalesced;
  return absl::InvalidArgumentError(absl::StrCat("unknown --api '", name, "' (want unary, pipeline or coalesced)"));
}

absl::StatusOr<std::unique_ptr<Target>> MakeGphkvTarget(const std::string& servers, GphkvApi api,
                                                        const ValuePool* values, const TargetOptions& options) {
  auto shards = ResolveShardList(servers);
  if (!shards.ok()) return shards.status();
  if (api == GphkvApi::kPipeline && shards->shards.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--api=pipeline talks to one server, and --address names ", shards->shards.size(),
                     " shards: use --api=unary or --api=coalesced, which send each key to its shard"));
  }
  if (options.shared_client && api != GphkvApi::kCoalesced) {
    return absl::InvalidArgumentError("--clients=shared is for --api=coalesced (one gphkv::Client for every thread)");
  }
  GphkvServers s{servers, *shards, ShardTlsOptions(*shards, options.tls)};
  return std::make_unique<GphkvTarget>(std::move(s), api, values, options);
}

std::shared_ptr<grpc::Channel> MakeGphkvChannel(const std::string& address, const TlsOptions& tls) {
  // A distinct argument per channel, and a local subchannel pool, so that
  // every channel gets its own TCP connection instead of sharing one.
  static std::atomic<int> next_id{0};
  grpc::ChannelArguments args;
  args.SetInt("gphkv.loadgen.connection_id", next_id.fetch_add(1));
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return MakeChannel(address, tls, std::move(args));
}

const char* GrpcStatusCodeName(int code) {
  static const char* const kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN_CODE";
}

}  // namespace gphkv::loadgen
