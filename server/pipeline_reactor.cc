#include "server/pipeline_reactor.h"

#include "absl/strings/str_cat.h"
#include "server/kv_service.h"

namespace gphkv::server {

PipelineReactor::PipelineReactor(KeyValueService* service, grpc::CallbackServerContext* ctx)
    : service_(service), ctx_(ctx), started_(Clock::now()) {
  start_read();
}

void PipelineReactor::start_read() {
  reading_ = std::make_unique<Op>();
  StartRead(&reading_->req);
}

void PipelineReactor::OnReadDone(bool ok) {
  if (!ok) {
    bool finish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      reading_.reset();
      finish = ready_to_finish();
    }
    if (finish) finish_stream();
    return;
  }
  Op* op = reading_.release();
  op->t0 = Clock::now();
  op->resp.set_id(op->req.id());
  Call call;
  switch (op->req.op_case()) {
    case v1::PipelineRequest::kGet:
      call.kind = OpKind::kGet;
      call.get = &op->req.get();
      call.get_out = op->resp.mutable_get();
      op->kind = static_cast<int>(OpLabel::kGet);
      op->keys = op->req.get().keys_size();
      break;
    case v1::PipelineRequest::kPut:
      call.kind = OpKind::kPut;
      call.put = &op->req.put();
      call.put_out = op->resp.mutable_put();
      op->kind = static_cast<int>(OpLabel::kPut);
      op->keys = op->req.put().keys_size();
      break;
    case v1::PipelineRequest::kDelete:
      call.kind = OpKind::kDelete;
      call.del = &op->req.delete_();
      call.del_out = op->resp.mutable_delete_();
      op->kind = static_cast<int>(OpLabel::kDelete);
      op->keys = op->req.delete_().keys_size();
      break;
    default:
      op->kind = static_cast<int>(OpLabel::kPipeline);
      break;
  }
  // complete() hands `op` over (it may be written and freed at once), so
  // nothing here reads `op` after calling it.
  if (op->kind == static_cast<int>(OpLabel::kPipeline)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++in_flight_;
    }
    complete(op, absl::InvalidArgumentError(absl::StrCat(
                     "PipelineRequest id ", op->req.id(), " carries no get, put or delete")));
  } else {
    call.done = [this, op](absl::Status s) { complete(op, s); };
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++in_flight_;
    }
    if (absl::Status s = service_->submit(std::move(call), steady_deadline(*ctx_)); !s.ok()) {
      complete(op, s);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ >= kMaxInFlight) {
    read_paused_ = true;  // complete() resumes reading
  } else {
    start_read();
  }
}

void PipelineReactor::complete(Op* op, const absl::Status& s) {
  std::unique_ptr<Op> owned(op);
  if (!s.ok()) {
    op->resp.clear_result();
    op->resp.set_code(static_cast<int32_t>(s.code()));
    op->resp.set_message(std::string(s.message()));
  }
  service_->metrics()->record_request(static_cast<OpLabel>(op->kind), s.code(), op->keys,
                                      std::chrono::duration<double>(Clock::now() - op->t0).count());
  bool finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    ++ops_;
    if (!write_failed_) {
      writes_.push_back(std::move(owned));
      if (!writing_) {
        writing_ = true;
        StartWrite(&writes_.front()->resp);
      }
    }
    if (read_paused_ && in_flight_ < kMaxInFlight) {
      read_paused_ = false;
      start_read();
    }
    finish = ready_to_finish();
  }
  if (finish) finish_stream();  // the last touch of `this`: OnDone may delete it
}

void PipelineReactor::OnWriteDone(bool ok) {
  bool finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writes_.pop_front();
    if (!ok) {
      write_failed_ = true;  // the stream is broken; drop what is left to write
      writes_.clear();
    }
    if (!writes_.empty()) {
      StartWrite(&writes_.front()->resp);
    } else {
      writing_ = false;
    }
    finish = ready_to_finish();
  }
  if (finish) finish_stream();
}

bool PipelineReactor::ready_to_finish() {
  if (finished_ || !reads_done_ || in_flight_ > 0 || writing_) return false;
  finished_ = true;
  return true;
}

void PipelineReactor::finish_stream() {
  service_->metrics()->record_request(
      OpLabel::kPipeline, absl::StatusCode::kOk, ops_,
      std::chrono::duration<double>(Clock::now() - started_).count());
  Finish(grpc::Status::OK);
}

void PipelineReactor::OnDone() { delete this; }

}  // namespace gphkv::server
