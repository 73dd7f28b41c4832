// The gphkv.v1.KeyValue service. Get, Put and Delete arrive through the
// completion-queue front end (unary_front_end.h), the Pipeline and Batches
// streams and the rare Stats and Shrink on the callback API; every method
// takes its request as raw bytes and parses it here, so a message that is
// not valid protobuf gets INVALID_ARGUMENT with a message, counted in the
// metrics. Handlers validate and queue (server/intake.h) and never block a
// gRPC thread; the executor's callback answers once the operations took
// effect.
#pragma once

#include <chrono>
#include <string>

#include "gphkv/v1/gphkv.grpc.pb.h"
#include "server/grpc/unary_front_end.h"
#include "server/intake.h"
#include "server/partitions.h"
#include "server/service_metrics.h"

namespace gphkv::server::grpcfe {

struct ServiceInfo {
  std::string backend;
  std::string device;
  std::string version;
};

using RawKeyValueService = v1::KeyValue::WithRawMethod_Get<
    v1::KeyValue::WithRawMethod_Put<v1::KeyValue::WithRawMethod_Delete<v1::KeyValue::WithRawCallbackMethod_Pipeline<
        v1::KeyValue::WithRawCallbackMethod_Batches<v1::KeyValue::WithRawCallbackMethod_Stats<
            v1::KeyValue::WithRawCallbackMethod_Shrink<v1::KeyValue::Service>>>>>>>;

class KeyValueService final : public RawKeyValueService, public UnaryRequester, public UnaryHandler {
 public:
  KeyValueService(const Intake* intake, const Partitions* partitions, ServiceMetrics* metrics, ServiceInfo info);

  // The front end's side.
  void request(UnaryMethod method, grpc::ServerContext* ctx, grpc::ByteBuffer* request,
               grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer, grpc::ServerCompletionQueue* cq,
               void* tag) override;
  void handle(UnaryCall* call) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Pipeline(grpc::CallbackServerContext* ctx) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Batches(grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Shrink(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* resp) override;

 private:
  template <class Req, class Resp>
  void serve(UnaryCall* call, OpLabel label);

  const Intake* intake_;
  const Partitions* partitions_;
  ServiceMetrics* metrics_;
  ServiceInfo info_;
  Clock::time_point started_;
};

}  // namespace gphkv::server::grpcfe
