#include "server/grpc/batch_stream.h"

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/call_stages.h"
#include "server/grpc/wire.h"
#include "server/wire_calls.h"

namespace gphkv::server::grpcfe {

struct BatchStream::Message {
  v1::BatchRequest req;
  v1::BatchResponse resp;
  Clock::time_point t0;
  int packed_requests = 0;  // requests in the packed gets
  // Operations not yet settled, plus one held by on_message until it has
  // queued them all: whoever brings it to zero sends the response.
  std::atomic<int> unsettled{0};
  int queued = 0;  // operations counted as outstanding by the stream
};

namespace {

OpLabel label_of(const v1::Operation& op) {
  switch (op.op_case()) {
    case v1::Operation::kGet: return OpLabel::kGet;
    case v1::Operation::kPut: return OpLabel::kPut;
    case v1::Operation::kDelete: return OpLabel::kDelete;
    default: return OpLabel::kBatches;
  }
}

uint64_t keys_of(const v1::Operation& op) {
  switch (op.op_case()) {
    case v1::Operation::kGet: return wire_key_count(op.get());
    case v1::Operation::kPut: return wire_key_count(op.put());
    case v1::Operation::kDelete: return wire_key_count(op.delete_());
    default: return 0;
  }
}

}  // namespace

BatchStream::BatchStream(grpc::CallbackServerContext* ctx, const Intake* intake, ServiceMetrics* metrics)
    : MessageStream(ctx), intake_(intake), metrics_(metrics) {
  start();
}

int BatchStream::on_message(grpc::ByteBuffer& bytes) {
  ++messages_;
  auto* m = new Message;
  m->t0 = Clock::now();
  if (absl::Status s = wire::parse(bytes, &m->req); !s.ok()) {
    delete m;
    metrics_->record_request(OpLabel::kBatches, s.code(), 0, 0);
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("message ", messages_, " of this Batches stream: ", s.message())));
    return 0;
  }
  const int n = m->req.ops_size();
  const bool packed = m->req.get_counts_size() > 0 || wire_key_count(m->req.gets()) > 0;
  m->packed_requests = m->req.get_counts_size();
  m->resp.set_id(m->req.id());
  // Every result exists before any operation is queued: the calls point into
  // them, and they may be filled at once, on other threads.
  m->resp.mutable_results()->Reserve(n);
  for (int i = 0; i < n; ++i) m->resp.add_results();
  if (packed) m->resp.mutable_gets();
  m->unsettled.store(n + (packed ? 1 : 0) + 1, std::memory_order_relaxed);

  const Clock::time_point stream_deadline = wire::steady_deadline(context()->deadline());
  std::vector<Call> calls;
  std::vector<int> index;  // index[j]: the operation calls[j] carries
  calls.reserve(n);
  index.reserve(n);
  for (int i = 0; i < n; ++i) {
    const v1::Operation& op = m->req.ops(i);
    v1::OperationResult* r = m->resp.mutable_results(i);
    Call c;
    absl::StatusOr<Operation> parsed;
    switch (op.op_case()) {
      case v1::Operation::kGet: parsed = operation(op.get(), r->mutable_get(), &c.table_keys); break;
      case v1::Operation::kPut: parsed = operation(op.put(), r->mutable_put(), &c.table_keys); break;
      case v1::Operation::kDelete: parsed = operation(op.delete_(), r->mutable_delete_(), &c.table_keys); break;
      default:
        parsed = absl::InvalidArgumentError(
            absl::StrCat("operation ", i, " of BatchRequest id ", m->req.id(), " carries no get, put or delete"));
        break;
    }
    if (!parsed.ok()) {
      settle(m, i, parsed.status());
      continue;
    }
    c.op = std::move(*parsed);
    c.session = session();
    c.deadline = stream_deadline;
    c.received = m->t0;
    if (op.timeout_us() > 0) {
      c.deadline = std::min(c.deadline, m->t0 + std::chrono::microseconds(op.timeout_us()));
    }
    c.done = [this, m, i](absl::Status s) { settle(m, i, s); };
    calls.push_back(std::move(c));
    index.push_back(i);
  }
  // The packed gets go last, as one call: they take effect after the ops.
  if (packed) {
    if (absl::Status s = validate_packed_gets(m->req, intake_->limits(), intake_->max_queue_keys()); !s.ok()) {
      settle(m, kPackedGets, s);
    } else {
      Call c;
      absl::StatusOr<GetOp> gets =
          get_op(m->req.gets(), m->resp.mutable_gets()->mutable_get(), &c.table_keys, /*packed=*/true);
      if (gets.ok()) c.op = *gets;
      c.session = session();
      c.deadline = stream_deadline;
      c.received = m->t0;
      if (m->req.gets_timeout_us() > 0) {
        c.deadline = std::min(c.deadline, m->t0 + std::chrono::microseconds(m->req.gets_timeout_us()));
      }
      c.done = [this, m](absl::Status s) { settle(m, kPackedGets, s); };
      if (!gets.ok()) {
        settle(m, kPackedGets, gets.status());  // both kinds of key, or key lengths that do not add up
      } else {
        calls.push_back(std::move(c));
        index.push_back(kPackedGets);
      }
    }
  }
  std::vector<absl::Status> statuses(calls.size());
  intake_->submit_all(absl::MakeSpan(calls), absl::MakeSpan(statuses));
  int queued = 0;
  for (size_t j = 0; j < statuses.size(); ++j) {
    if (statuses[j].ok()) ++queued;
  }
  // Set before any refusal is settled below: the last settle reads it.
  // Settles of queued operations that already ran read it too: they cannot
  // be the last while on_message holds its share.
  m->queued = queued;
  for (size_t j = 0; j < statuses.size(); ++j) {
    if (!statuses[j].ok()) settle(m, index[j], statuses[j]);
  }
  settle(m, kNone, absl::OkStatus());  // on_message's share
  return queued;
}

void BatchStream::settle(Message* m, int index, const absl::Status& s) {
  if (index != kNone && !s.ok()) {
    v1::OperationResult* r = index == kPackedGets ? m->resp.mutable_gets() : m->resp.mutable_results(index);
    r->clear_result();
    r->set_code(static_cast<int32_t>(s.code()));
    r->set_message(std::string(s.message()));
  }
  if (m->unsettled.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The last one: every result is final.
  const double seconds = std::chrono::duration<double>(Clock::now() - m->t0).count();
  for (int i = 0; i < m->req.ops_size(); ++i) {
    const v1::Operation& op = m->req.ops(i);
    metrics_->record_request(label_of(op), static_cast<absl::StatusCode>(m->resp.results(i).code()), keys_of(op),
                             seconds);
  }
  if (m->resp.has_gets()) {
    // Each packed request counts as one get; their keys are all the section's.
    const auto code = static_cast<absl::StatusCode>(m->resp.gets().code());
    const uint64_t keys = static_cast<uint64_t>(wire_key_count(m->req.gets()));
    metrics_->record_requests(OpLabel::kGet, code, std::max(1, m->packed_requests), keys, seconds);
  }
  const Clock::time_point t0 = Clock::now();
  grpc::ByteBuffer bytes = wire::serialize(m->resp);
  metrics_->call_stage_seconds[kCallSerialize]->Observe(std::chrono::duration<double>(Clock::now() - t0).count());
  const int queued = m->queued;
  delete m;
  done(queued, &bytes);  // may be the last touch of the stream
}

void BatchStream::on_written(double seconds) { metrics_->call_stage_seconds[kCallSend]->Observe(seconds); }

void BatchStream::on_finish(uint64_t operations, double seconds) {
  metrics_->record_request(OpLabel::kBatches, absl::StatusCode::kOk, operations, seconds);
}

}  // namespace gphkv::server::grpcfe
