#include "server/grpc/pipeline_stream.h"

#include "absl/strings/str_cat.h"
#include "server/grpc/wire.h"
#include "server/wire_calls.h"

namespace gphkv::server::grpcfe {

struct PipelineStream::Op {
  v1::PipelineRequest req;
  v1::PipelineResponse resp;
  Clock::time_point t0;
  OpLabel label = OpLabel::kPipeline;
};

PipelineStream::PipelineStream(grpc::CallbackServerContext* ctx, const Intake* intake, ServiceMetrics* metrics)
    : MessageStream(ctx), intake_(intake), metrics_(metrics) {
  start();
}

int PipelineStream::on_message(grpc::ByteBuffer& bytes) {
  ++messages_;
  auto op = std::make_unique<Op>();
  op->t0 = Clock::now();
  if (absl::Status s = wire::parse(bytes, &op->req); !s.ok()) {
    metrics_->record_request(OpLabel::kPipeline, s.code(), 0, 0);
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("message ", messages_, " of this Pipeline stream: ", s.message())));
    return 0;
  }
  op->resp.set_id(op->req.id());
  Call call;
  absl::StatusOr<Operation> parsed;
  switch (op->req.op_case()) {
    case v1::PipelineRequest::kGet:
      parsed = operation(op->req.get(), op->resp.mutable_get(), &call.table_keys);
      op->label = OpLabel::kGet;
      break;
    case v1::PipelineRequest::kPut:
      parsed = operation(op->req.put(), op->resp.mutable_put(), &call.table_keys);
      op->label = OpLabel::kPut;
      break;
    case v1::PipelineRequest::kDelete:
      parsed = operation(op->req.delete_(), op->resp.mutable_delete_(), &call.table_keys);
      op->label = OpLabel::kDelete;
      break;
    default: {
      const absl::Status bad = absl::InvalidArgumentError(
          absl::StrCat("PipelineRequest id ", op->req.id(), " carries no get, put or delete"));
      answer(op.release(), bad, false);
      return 0;
    }
  }
  if (!parsed.ok()) {
    answer(op.release(), parsed.status(), false);
    return 0;
  }
  call.op = std::move(*parsed);
  call.deadline = wire::steady_deadline(context()->deadline());
  call.session = session();
  call.received = op->t0;
  Op* raw = op.release();
  call.done = [this, raw](absl::Status s) { answer(raw, s, true); };
  if (absl::Status s = intake_->submit(std::move(call)); !s.ok()) {
    answer(raw, s, false);
    return 0;
  }
  return 1;
}

void PipelineStream::answer(Op* op, const absl::Status& s, bool queued) {
  std::unique_ptr<Op> owned(op);
  if (!s.ok()) {
    op->resp.clear_result();
    op->resp.set_code(static_cast<int32_t>(s.code()));
    op->resp.set_message(std::string(s.message()));
  }
  uint64_t keys = 0;
  switch (op->req.op_case()) {
    case v1::PipelineRequest::kGet: keys = wire_key_count(op->req.get()); break;
    case v1::PipelineRequest::kPut: keys = wire_key_count(op->req.put()); break;
    case v1::PipelineRequest::kDelete: keys = wire_key_count(op->req.delete_()); break;
    default: break;
  }
  metrics_->record_request(op->label, s.code(), keys, std::chrono::duration<double>(Clock::now() - op->t0).count());
  grpc::ByteBuffer bytes = wire::serialize(op->resp);
  owned.reset();
  if (queued) {
    done(1, &bytes);  // may be the last touch of the stream
  } else {
    send(std::move(bytes));
  }
}

void PipelineStream::on_finish(uint64_t operations, double seconds) {
  metrics_->record_request(OpLabel::kPipeline, absl::StatusCode::kOk, operations, seconds);
}

}  // namespace gphkv::server::grpcfe
