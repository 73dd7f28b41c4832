#include "loadgen/run_stats.h"

#include <algorithm>

namespace gphkv::loadgen {

void OpStats::Merge(const OpStats& o) {
  calls += o.calls;
  keys += o.keys;
  found += o.found;
  value_bytes += o.value_bytes;
  errors += o.errors;
  for (const auto& [status, n] : o.errors_by_status) errors_by_status[status] += n;
  latency.Merge(o.latency);
}

OpStats RunStats::Overall() const {
  OpStats all;
  for (const OpStats& s : by_type) all.Merge(s);
  return all;
}

void RunStats::Merge(const RunStats& o) {
  for (int i = 0; i < kOpTypes; ++i) by_type[i].Merge(o.by_type[i]);
  fills.Merge(o.fills);
  seconds = std::max(seconds, o.seconds);
  scheduled += o.scheduled;
  dropped += o.dropped;
  max_backlog = std::max(max_backlog, o.max_backlog);
  send_lag.Merge(o.send_lag);
}

void IntervalRecorder::Record(uint64_t keys, uint64_t found, uint64_t get_keys, uint64_t bytes, bool error,
                              uint64_t latency_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ++current_.calls;
  current_.keys += keys;
  current_.get_keys += get_keys;
  current_.found += found;
  current_.bytes += bytes;
  current_.errors += error;
  current_.latency.Record(latency_ns);
}

void IntervalRecorder::TakeInto(Snapshot* into) {
  std::lock_guard<std::mutex> lock(mu_);
  into->calls += current_.calls;
  into->keys += current_.keys;
  into->get_keys += current_.get_keys;
  into->found += current_.found;
  into->bytes += current_.bytes;
  into->errors += current_.errors;
  into->latency.Merge(current_.latency);
  current_.calls = current_.keys = current_.get_keys = current_.found = current_.bytes = current_.errors = 0;
  current_.latency.Reset();
}

}  // namespace gphkv::loadgen
