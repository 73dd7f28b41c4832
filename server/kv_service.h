// The gphkv.v1.KeyValue handlers (gRPC callback API). A handler validates the
// whole request, hands it to the batcher with a completion callback and
// returns; no handler blocks a gRPC thread. The executor's callback finishes
// the RPC once the operations took effect.
#pragma once

#include <chrono>
#include <string>

#include "gphkv/v1/gphkv.grpc.pb.h"
#include "server/batcher.h"
#include "server/executor.h"
#include "server/request_validation.h"
#include "server/service_metrics.h"

namespace gphkv::server {

struct ServiceInfo {
  std::string backend;
  std::string device;
  std::string version;
};

class KeyValueService final : public v1::KeyValue::CallbackService {
 public:
  KeyValueService(Batcher* batcher, const Executor* executor, ServiceMetrics* metrics,
                  RequestLimits limits, ServiceInfo info);

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::GetResponse* resp) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const v1::PutRequest* req,
                                v1::PutResponse* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const v1::DeleteRequest* req,
                                   v1::DeleteResponse* resp) override;
  grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse>* Pipeline(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const v1::StatsRequest* req,
                                  v1::StatsResponse* resp) override;
  grpc::ServerUnaryReactor* Shrink(grpc::CallbackServerContext* ctx, const v1::ShrinkRequest* req,
                                   v1::ShrinkResponse* resp) override;

  // Builds the call for one get/put/delete (from a unary RPC or a pipelined
  // op), validates it and queues it. On a non-OK return nothing was queued
  // and `done` will not run.
  absl::Status submit(Call call, Clock::time_point deadline);

  Batcher* batcher() { return batcher_; }
  ServiceMetrics* metrics() { return metrics_; }
  const RequestLimits& limits() const { return limits_; }

 private:
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, OpKind kind, OpLabel label,
                                  const Req* req, Resp* resp);

  Batcher* batcher_;
  const Executor* executor_;
  ServiceMetrics* metrics_;
  RequestLimits limits_;
  ServiceInfo info_;
  Clock::time_point started_;
};

// The deadline of a server call on the steady clock (max() when none).
Clock::time_point steady_deadline(const grpc::CallbackServerContext& ctx);
grpc::Status to_grpc(const absl::Status& s);

}  // namespace gphkv::server
