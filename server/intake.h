// Where every request enters the pipeline, whatever carried it (a unary RPC,
// a pipelined op, one operation of a batch message): checked whole against
// the limits, stamped with its deadline and queued in the batcher. A refused
// call changes nothing. No gRPC here.
#pragma once

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/batcher.h"
#include "server/call.h"
#include "server/request_validation.h"

namespace gphkv::server {

class Intake {
 public:
  Intake(Batcher* batcher, RequestLimits limits) : batcher_(batcher), limits_(limits) {}

  // Validates and queues one call (its deadline set). On a non-OK return
  // nothing was queued and `done` will not run.
  absl::Status submit(Call call) const;

  // The operations of one message: each is validated alone; the valid ones
  // are queued together, in order, under one lock. statuses[i] answers
  // calls[i]: non-OK means it was not queued and its `done` will not run.
  void submit_all(absl::Span<Call> calls, absl::Span<absl::Status> statuses) const;

  const RequestLimits& limits() const { return limits_; }
  Batcher* batcher() const { return batcher_; }

 private:
  absl::Status check(const Call& call, Clock::time_point now) const;

  Batcher* batcher_;
  RequestLimits limits_;
};

}  // namespace gphkv::server
