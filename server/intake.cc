#include "server/intake.h"

#include <vector>

namespace gphkv::server {

absl::Status Intake::check(const Call& c, Clock::time_point now) const {
  absl::Status s;
  switch (c.kind()) {
    case OpKind::kGet:
      if (!c.get().packed) s = validate(*c.get().request, limits_);
      break;
    case OpKind::kPut: s = validate(*c.put().request, limits_); break;
    case OpKind::kDelete: s = validate(*c.del().request, limits_); break;
    case OpKind::kShrink: break;
  }
  if (s.ok() && c.deadline <= now) {
    s = absl::DeadlineExceededError("deadline already expired on arrival; nothing was changed");
  }
  return s;
}

absl::Status Intake::submit(Call call) const {
  if (absl::Status s = check(call, Clock::now()); !s.ok()) return s;
  return batcher_->enqueue(std::move(call));
}

void Intake::submit_all(absl::Span<Call> calls, absl::Span<absl::Status> statuses) const {
  const Clock::time_point now = Clock::now();
  std::vector<Call> valid;
  std::vector<size_t> index;  // index[j]: where valid[j] came from in `calls`
  valid.reserve(calls.size());
  index.reserve(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    statuses[i] = check(calls[i], now);
    if (!statuses[i].ok()) continue;
    valid.push_back(std::move(calls[i]));
    index.push_back(i);
  }
  if (absl::Status queued = batcher_->enqueue_all(absl::MakeSpan(valid)); !queued.ok()) {
    for (size_t i : index) statuses[i] = queued;
  }
}

}  // namespace gphkv::server
