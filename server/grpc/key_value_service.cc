#include "server/grpc/key_value_service.h"

#include <memory>

#include "server/elapsed.h"
#include "server/grpc/batch_stream.h"
#include "server/grpc/pipeline_stream.h"
#include "server/grpc/wire.h"
#include "server/wire_calls.h"

namespace gphkv::server::grpcfe {
namespace {

void fill_data_dir_stats(const DataDirStatus& status, v1::DataDirStats* out) {
  const durability::DataDirState& s = status.state;
  out->set_dir(s.dir);
  out->set_fsync(durability::fsync_policy_name(s.fsync));
  out->set_last_sequence(s.log.last_sequence);
  out->set_durable_sequence(s.log.durable_sequence);
  out->set_log_segments(s.log.segments);
  out->set_log_bytes(s.log.log_bytes);
  out->set_log_written_bytes(s.log.appended_bytes);
  out->set_fsyncs(s.log.fsyncs);
  out->set_fsyncs_behind(s.log.syncs_fell_behind);
  out->set_log_error(status.log_error);
  out->set_snapshot_sequence(s.snapshot_sequence);
  out->set_snapshot_bytes(s.snapshot_bytes);
  out->set_snapshot_age_seconds(s.snapshot_age_seconds);
  out->set_snapshots(s.snapshots_taken);
  out->set_last_snapshot_seconds(s.last_snapshot_seconds);
  out->set_snapshot_running(s.snapshot_running);
  out->set_last_snapshot_error(s.last_snapshot_error);
  const durability::RecoveryReport& r = s.recovery;
  out->set_recovery_seconds(r.seconds);
  out->set_recovered_snapshot(r.snapshot_path);
  out->set_recovered_snapshot_pairs(r.snapshot_pairs);
  out->set_recovered_batches(r.log_batches);
  out->set_recovered_keys(status.recovered_keys);
  out->set_torn_bytes_cut(r.torn_bytes_cut);
  for (const std::string& d : r.dropped) out->add_recovery_dropped(d);
  for (const std::string& w : r.warnings) out->add_recovery_warnings(w);
}

// One unary get, put or delete while it is queued: its parsed request and
// the response the executor fills.
template <class Req, class Resp>
struct UnaryOp {
  UnaryCall* call;
  OpLabel label;
  Req req;
  Resp resp;
};

}  // namespace

KeyValueService::KeyValueService(const Intake* intake, const Partitions* partitions, ServiceMetrics* metrics,
                                 ServiceInfo info)
    : intake_(intake), partitions_(partitions), metrics_(metrics), info_(std::move(info)), started_(Clock::now()) {}

void KeyValueService::request(UnaryMethod method, grpc::ServerContext* ctx, grpc::ByteBuffer* request,
                              grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer,
                              grpc::ServerCompletionQueue* cq, void* tag) {
  switch (method) {
    case UnaryMethod::kGet: RequestGet(ctx, request, writer, cq, cq, tag); break;
    case UnaryMethod::kPut: RequestPut(ctx, request, writer, cq, cq, tag); break;
    case UnaryMethod::kDelete: RequestDelete(ctx, request, writer, cq, cq, tag); break;
  }
}

void KeyValueService::handle(UnaryCall* call) {
  switch (call->method()) {
    case UnaryMethod::kGet: serve<v1::GetRequest, v1::GetResponse>(call, OpLabel::kGet); break;
    case UnaryMethod::kPut: serve<v1::PutRequest, v1::PutResponse>(call, OpLabel::kPut); break;
    case UnaryMethod::kDelete: serve<v1::DeleteRequest, v1::DeleteResponse>(call, OpLabel::kDelete); break;
  }
}

template <class Req, class Resp>
void KeyValueService::serve(UnaryCall* call, OpLabel label) {
  using State = UnaryOp<Req, Resp>;
  auto* state = new State{call, label, {}, {}};
  // Answers the call and frees the state; the last touch of both.
  auto answer = [this](State* st, const absl::Status& s) {
    metrics_->record_request(st->label, s.code(), static_cast<uint64_t>(wire_key_count(st->req)),
                             seconds_since(st->call->arrived()));
    UnaryCall* c = st->call;
    grpc::ByteBuffer bytes;
    if (s.ok()) bytes = wire::serialize(st->resp);
    delete st;
    c->finish(bytes, wire::to_grpc(s));
  };
  if (absl::Status s = wire::parse(call->request(), &state->req); !s.ok()) {
    answer(state, s);
    return;
  }
  Call c;
  absl::StatusOr<Operation> op = operation(state->req, &state->resp, &c.table_keys);
  if (!op.ok()) {
    answer(state, op.status());
    return;
  }
  c.op = std::move(*op);
  c.deadline = wire::steady_deadline(call->context().deadline());
  // A unary call is a session of its own: a client that needs one call
  // after another waits for the first one's answer (client/thread_order.h).
  c.session = new_session_id();
  c.received = call->arrived();
  c.done = [answer, state](absl::Status s) { answer(state, s); };
  if (absl::Status s = intake_->submit(std::move(c)); !s.ok()) answer(state, s);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* KeyValueService::Pipeline(
    grpc::CallbackServerContext* ctx) {
  return new PipelineStream(ctx, intake_, metrics_);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* KeyValueService::Batches(
    grpc::CallbackServerContext* ctx) {
  return new BatchStream(ctx, intake_, metrics_);
}

grpc::ServerUnaryReactor* KeyValueService::Stats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                                 grpc::ByteBuffer* resp) {
  // Answered inline from the executor's published snapshot: Stats never
  // waits behind the batch queue, so it works on an overloaded server.
  const Clock::time_point t0 = Clock::now();
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  v1::StatsRequest request;
  if (absl::Status s = wire::parse(*req, &request); !s.ok()) {
    metrics_->record_request(OpLabel::kStats, s.code(), 0, seconds_since(t0));
    reactor->Finish(wire::to_grpc(s));
    return reactor;
  }
  const std::vector<ExecutorStats> parts = partitions_->stats();
  const ExecutorStats st = total_stats(parts);
  v1::StatsResponse out;
  out.set_backend(info_.backend);
  out.set_device(info_.device);
  out.set_keys(st.keys);
  out.set_load_factor(st.load_factor);
  out.set_table_bytes(st.table_bytes);
  out.set_value_heap_bytes(st.value_heap_bytes);
  out.set_memory_limit_bytes(st.memory_limit_bytes);
  out.set_rebuilds(st.rebuilds);
  out.set_batches(st.batches);
  out.set_batched_keys(st.batched_keys);
  out.set_uptime_seconds(seconds_since(started_));
  out.set_version(info_.version);
  out.set_rebuilding(st.rebuilding);
  out.set_evictions(st.evictions);
  out.set_items_swept(st.items_swept);
  const std::vector<const StoreDurability*> data_dirs = partitions_->data_dirs();
  for (size_t k = 0; k < parts.size(); ++k) {
    const Partition& p = (*partitions_)[k];
    const ExecutorStats& ps = parts[k];
    v1::PartitionStats* o = out.add_partitions();
    o->set_partition(p.index);
    o->set_gpu(p.gpu);
    o->set_device(p.device);
    o->set_keys(ps.keys);
    o->set_load_factor(ps.load_factor);
    o->set_table_bytes(ps.table_bytes);
    o->set_value_heap_bytes(ps.value_heap_bytes);
    o->set_memory_limit_bytes(ps.memory_limit_bytes);
    o->set_rebuilds(ps.rebuilds);
    o->set_batches(ps.batches);
    o->set_batched_keys(ps.batched_keys);
    o->set_rebuilding(ps.rebuilding);
    o->set_evictions(ps.evictions);
    o->set_items_swept(ps.items_swept);
    if (data_dirs[k] != nullptr) fill_data_dir_stats(data_dirs[k]->status(), o->mutable_data_dir());
  }
  if (data_dirs[0] != nullptr) fill_data_dir_stats(partitions_->data_dir_status(), out.mutable_data_dir());
  *resp = wire::serialize(out);
  metrics_->record_request(OpLabel::kStats, absl::StatusCode::kOk, 0, seconds_since(t0));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* KeyValueService::Shrink(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                                  grpc::ByteBuffer* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const Clock::time_point t0 = Clock::now();
  struct State {
    v1::ShrinkResponse out;
  };
  auto state = std::make_shared<State>();
  auto finish = [this, reactor, resp, t0, state](const absl::Status& s) {
    if (s.ok()) *resp = wire::serialize(state->out);
    metrics_->record_request(OpLabel::kShrink, s.code(), 0, seconds_since(t0));
    reactor->Finish(wire::to_grpc(s));
  };
  v1::ShrinkRequest request;
  if (absl::Status s = wire::parse(*req, &request); !s.ok()) {
    finish(s);
    return reactor;
  }
  Call call;
  call.op = ShrinkOp{&state->out};
  call.deadline = wire::steady_deadline(ctx->deadline());
  call.done = [finish](absl::Status s) { finish(s); };
  if (absl::Status s = intake_->submit(std::move(call)); !s.ok()) finish(s);
  return reactor;
}

}  // namespace gphkv::server::grpcfe
