#include "server/kv_service.h"

#include "absl/strings/str_cat.h"
#include "server/pipeline_reactor.h"

namespace gphkv::server {
namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

absl::Status validate_call(const Call& c, const RequestLimits& limits) {
  switch (c.kind) {
    case OpKind::kGet: return validate(*c.get, limits);
    case OpKind::kPut: return validate(*c.put, limits);
    case OpKind::kDelete: return validate(*c.del, limits);
    default: return absl::OkStatus();
  }
}

void bind(Call* c, const v1::GetRequest* req, v1::GetResponse* resp) { c->get = req; c->get_out = resp; }
void bind(Call* c, const v1::PutRequest* req, v1::PutResponse* resp) { c->put = req; c->put_out = resp; }
void bind(Call* c, const v1::DeleteRequest* req, v1::DeleteResponse* resp) { c->del = req; c->del_out = resp; }

}  // namespace

grpc::Status to_grpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

Clock::time_point steady_deadline(const grpc::CallbackServerContext& ctx) {
  const auto remaining = ctx.deadline() - std::chrono::system_clock::now();
  // gRPC reports "no deadline" as a time far in the future.
  if (remaining > std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(remaining);
}

KeyValueService::KeyValueService(Batcher* batcher, const Executor* executor, ServiceMetrics* metrics,
                                 RequestLimits limits, ServiceInfo info)
    : batcher_(batcher),
      executor_(executor),
      metrics_(metrics),
      limits_(limits),
      info_(std::move(info)),
      started_(Clock::now()) {}

absl::Status KeyValueService::submit(Call call, Clock::time_point deadline) {
  if (auto s = validate_call(call, limits_); !s.ok()) return s;
  if (deadline <= Clock::now()) {
    return absl::DeadlineExceededError("deadline already expired on arrival; nothing was changed");
  }
  call.deadline = deadline;
  return batcher_->enqueue(std::move(call));
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* KeyValueService::unary(grpc::CallbackServerContext* ctx, OpKind kind,
                                                 OpLabel label, const Req* req, Resp* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const Clock::time_point t0 = Clock::now();
  const uint64_t keys = static_cast<uint64_t>(req->keys_size());
  auto finish = [this, reactor, label, keys, t0](const absl::Status& s) {
    metrics_->record_request(label, s.code(), keys, seconds_since(t0));
    reactor->Finish(to_grpc(s));
  };
  Call call;
  call.kind = kind;
  bind(&call, req, resp);
  call.done = [finish](absl::Status s) { finish(s); };
  if (absl::Status s = submit(std::move(call), steady_deadline(*ctx)); !s.ok()) finish(s);
  return reactor;
}

grpc::ServerUnaryReactor* KeyValueService::Get(grpc::CallbackServerContext* ctx,
                                               const v1::GetRequest* req, v1::GetResponse* resp) {
  return unary(ctx, OpKind::kGet, OpLabel::kGet, req, resp);
}

grpc::ServerUnaryReactor* KeyValueService::Put(grpc::CallbackServerContext* ctx,
                                               const v1::PutRequest* req, v1::PutResponse* resp) {
  return unary(ctx, OpKind::kPut, OpLabel::kPut, req, resp);
}

grpc::ServerUnaryReactor* KeyValueService::Delete(grpc::CallbackServerContext* ctx,
                                                  const v1::DeleteRequest* req,
                                                  v1::DeleteResponse* resp) {
  return unary(ctx, OpKind::kDelete, OpLabel::kDelete, req, resp);
}

grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse>* KeyValueService::Pipeline(
    grpc::CallbackServerContext* ctx) {
  return new PipelineReactor(this, ctx);
}

grpc::ServerUnaryReactor* KeyValueService::Shrink(grpc::CallbackServerContext* ctx,
                                                  const v1::ShrinkRequest*, v1::ShrinkResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const Clock::time_point t0 = Clock::now();
  auto finish = [this, reactor, t0](const absl::Status& s) {
    metrics_->record_request(OpLabel::kShrink, s.code(), 0, seconds_since(t0));
    reactor->Finish(to_grpc(s));
  };
  Call call;
  call.kind = OpKind::kShrink;
  call.shrink_out = resp;
  call.done = [finish](absl::Status s) { finish(s); };
  if (absl::Status s = submit(std::move(call), steady_deadline(*ctx)); !s.ok()) finish(s);
  return reactor;
}

grpc::ServerUnaryReactor* KeyValueService::Stats(grpc::CallbackServerContext* ctx,
                                                 const v1::StatsRequest*, v1::StatsResponse* resp) {
  // Answered inline from the executor's published snapshot: Stats never
  // waits behind the batch queue, so it works on an overloaded server.
  const Clock::time_point t0 = Clock::now();
  const ExecutorStats s = executor_->stats();
  resp->set_backend(info_.backend);
  resp->set_device(info_.device);
  resp->set_keys(s.keys);
  resp->set_load_factor(s.load_factor);
  resp->set_table_bytes(s.table_bytes);
  resp->set_value_heap_bytes(s.value_heap_bytes);
  resp->set_memory_limit_bytes(s.memory_limit_bytes);
  resp->set_rebuilds(s.rebuilds);
  resp->set_batches(s.batches);
  resp->set_batched_keys(s.batched_keys);
  resp->set_uptime_seconds(seconds_since(started_));
  resp->set_version(info_.version);
  metrics_->record_request(OpLabel::kStats, absl::StatusCode::kOk, 0, seconds_since(t0));
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gphkv::server
