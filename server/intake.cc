#include "server/intake.h"

#include <vector>

#include "server/call_split.h"

namespace gphkv::server {

Intake::Intake(std::vector<Batcher*> batchers, RequestLimits limits, std::vector<std::string> partition_names,
               uint64_t max_response_bytes, const CallStageHistograms* stages)
    : batchers_(std::move(batchers)),
      limits_(limits),
      placement_(static_cast<uint32_t>(batchers_.size())),
      partition_names_(std::make_shared<const std::vector<std::string>>(std::move(partition_names))),
      max_response_bytes_(max_response_bytes),
      stages_(stages) {}

absl::Status Intake::check(const Call& c, Clock::time_point now) const {
  absl::Status s = validate(c, limits_);
  if (s.ok() && c.deadline <= now) {
    s = absl::DeadlineExceededError("deadline already expired on arrival; nothing was changed");
  }
  return s;
}

absl::Status Intake::submit(Call call) const {
  const Clock::time_point now = Clock::now();
  if (absl::Status s = check(call, now); !s.ok()) return s;
  if (call.received == Clock::time_point{}) call.received = now;
  if (const int64_t p = single_partition(call, placement_); p >= 0) return batchers_[p]->enqueue(std::move(call));
  SplitParts split = SplitCall::split(std::move(call), placement_, partition_names_, max_response_bytes_, stages_);
  absl::Status first_refusal;
  bool queued = false;
  for (CallPart& part : split.parts) {
    // enqueue() leaves a refused call untouched: running its `done` settles the part.
    if (absl::Status s = batchers_[part.partition]->enqueue(std::move(part.call)); !s.ok()) {
      if (first_refusal.ok()) first_refusal = s;
      part.call.done(s);
    } else {
      queued = true;
    }
  }
  split.call->release(queued);
  return queued ? absl::OkStatus() : first_refusal;
}

void Intake::submit_all(absl::Span<Call> calls, absl::Span<absl::Status> statuses) const {
  const Clock::time_point now = Clock::now();
  // Per partition, in message order: the whole calls and the parts it queues.
  struct Queued {
    size_t index;   // the call in `calls` it carries (all or a part of)
    int64_t split;  // its SplitParts in `splits`; -1: the whole call
  };
  std::vector<std::vector<Call>> per_partition(batchers_.size());
  std::vector<std::vector<Queued>> origin(batchers_.size());
  std::vector<SplitParts> splits;
  std::vector<size_t> split_index;  // split_index[s]: the call splits[s] answers
  for (size_t i = 0; i < calls.size(); ++i) {
    statuses[i] = check(calls[i], now);
    if (!statuses[i].ok()) continue;
    if (calls[i].received == Clock::time_point{}) calls[i].received = now;
    if (const int64_t p = single_partition(calls[i], placement_); p >= 0) {
      per_partition[p].push_back(std::move(calls[i]));
      origin[p].push_back(Queued{i, -1});
      continue;
    }
    splits.push_back(SplitCall::split(std::move(calls[i]), placement_, partition_names_, max_response_bytes_, stages_));
    split_index.push_back(i);
    for (CallPart& part : splits.back().parts) {
      per_partition[part.partition].push_back(std::move(part.call));
      origin[part.partition].push_back(Queued{i, static_cast<int64_t>(splits.size() - 1)});
    }
  }
  // A split call is answered by `done` when any of its parts was queued.
  std::vector<bool> split_queued(splits.size(), false);
  std::vector<absl::Status> split_refusal(splits.size());
  for (size_t p = 0; p < batchers_.size(); ++p) {
    if (per_partition[p].empty()) continue;
    const absl::Status queued = batchers_[p]->enqueue_all(absl::MakeSpan(per_partition[p]));
    for (size_t j = 0; j < origin[p].size(); ++j) {
      const Queued& q = origin[p][j];
      if (q.split < 0) {
        statuses[q.index] = queued;
      } else if (queued.ok()) {
        split_queued[q.split] = true;
      } else {
        // Left untouched by the refusal: its `done` settles the part.
        if (split_refusal[q.split].ok()) split_refusal[q.split] = queued;
        per_partition[p][j].done(queued);
      }
    }
  }
  for (size_t s = 0; s < splits.size(); ++s) {
    splits[s].call->release(split_queued[s]);
    if (!split_queued[s]) statuses[split_index[s]] = split_refusal[s];
  }
}

}  // namespace gphkv::server
