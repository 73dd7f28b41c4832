// The synchronous get path: one find over a run's keys (the serving table
// and the overlay of a rebuild in flight), then each call's response built
// on the calling thread: found flags, lengths, and one gather of its values
// into the response's `values` field. Every get on the CPU backend; on CUDA,
// the runs the get pipeline cannot take (a rebuild in flight, depth 0).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "server/call.h"
#include "server/value_heap.h"

namespace gphkv::server {

class SyncGets {
 public:
  // statuses[i] answers calls[i]: OK with its response filled, or
  // RESOURCE_EXHAUSTED for a call whose values would pass
  // max_response_bytes (others are answered); an engine failure for all.
  // mark_accessed: the hits' access bits are set (ValueHeap::mark_accessed;
  // the store evicts, server/store_eviction.cc).
  void apply(absl::Span<Call* const> calls, engine::ElasticTable& table, ValueHeap& heap, bool mark_accessed,
             uint64_t max_response_bytes, std::vector<absl::Status>* statuses);

 private:
  // Scratch reused across runs.
  std::vector<uint64_t> keys_, handles_;
  std::vector<uint8_t> found_;
  std::vector<ValueHandle> found_handles_, hits_;
};

}  // namespace gphkv::server
