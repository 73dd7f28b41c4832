// Where every request enters the pipeline, whatever carried it (a unary RPC,
// a pipelined op, one operation of a batch message): checked whole against
// the limits, stamped with its deadline and queued in the batcher of the
// partition that holds its keys. A refused call changes nothing. No gRPC here.
//
// The router of a server with several partitions (a store and an executor
// per GPU, or --partitions CPU stores): a call whose keys all lie on one
// partition is queued there as it is (always so with one partition: one
// code path for every server); any other call is cut into a part per
// partition and answered once every part was (server/call_split.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/batcher.h"
#include "server/call.h"
#include "server/call_split.h"
#include "server/key_placement.h"
#include "server/request_validation.h"

namespace gphkv::server {

class Intake {
 public:
  // batchers[p] queues partition p's calls; partition_names[p] is how an
  // error names it ("gpu 1"). max_response_bytes bounds a get's response
  // merged from several partitions.
  // stages (may be null): the call stage histograms a split call's wait
  // for its last part and its merge are observed in.
  Intake(std::vector<Batcher*> batchers, RequestLimits limits, std::vector<std::string> partition_names,
         uint64_t max_response_bytes, const CallStageHistograms* stages = nullptr);
  // One partition.
  Intake(Batcher* batcher, RequestLimits limits) : Intake({batcher}, limits, {"partition 0"}, UINT64_MAX) {}

  // Validates and queues one call (its deadline set). On a non-OK return
  // nothing was queued and `done` will not run. A call cut into parts of
  // which some could not be queued is answered through `done` (the failed
  // part's error) once the queued parts were.
  absl::Status submit(Call call) const;

  // The operations of one message: each is validated alone; the valid ones
  // are queued together, in order, under one lock per partition. statuses[i]
  // answers calls[i]: non-OK means it was not queued and its `done` will
  // not run.
  void submit_all(absl::Span<Call> calls, absl::Span<absl::Status> statuses) const;

  const RequestLimits& limits() const { return limits_; }
  // The most keys one partition's queue holds (every batcher's bound is the same).
  uint64_t max_queue_keys() const { return batchers_[0]->options().max_queue_keys; }
  const KeyPlacement& placement() const { return placement_; }

 private:
  absl::Status check(const Call& call, Clock::time_point now) const;

  std::vector<Batcher*> batchers_;
  RequestLimits limits_;
  KeyPlacement placement_;
  std::shared_ptr<const std::vector<std::string>> partition_names_;
  uint64_t max_response_bytes_;
  const CallStageHistograms* stages_;
};

}  // namespace gphkv::server
