// What a store is made with (server/store.h): the backend, the --memory cap,
// the table's growth rules and the CUDA get pipeline's depth.
#pragma once

#include <cstdint>
#include <functional>

#include "gphkv/engine/table.h"
#include "server/evictor.h"

namespace gphkv::server {

struct StoreOptions {
  engine::Backend backend = engine::Backend::kCpu;
  int device = 0;
  // The cap on table bytes + value heap bytes.
  uint64_t memory_limit_bytes = uint64_t{1} << 30;
  // Keys the first table is sized for (at max_load_factor).
  uint64_t initial_capacity = 1 << 20;
  // The longest slot of the value heap: a value, or a byte key's record.
  uint32_t max_value_bytes = 1 << 20;
  // The longest value a put may leave (--max_value_bytes): what an append
  // or prepend may grow one to. 0: max_value_bytes.
  uint32_t max_put_value_bytes = 0;
  // A Get whose values would exceed this is refused (RESOURCE_EXHAUSTED)
  // instead of building a response gRPC would refuse to send.
  uint64_t max_response_bytes = uint64_t{256} << 20;
  // A background rebuild grows the table once a put takes it past this load
  // factor (engine::ElasticOptions::max_load_factor, at most 0.95). The CPU
  // backend reaches ~0.85 with the default M, R and cells (docs/gph.md), so
  // 0.80 leaves room for Extended Move to succeed.
  double max_load_factor = 0.80;
  // A grown table is sized so its keys fill it to this (used up to
  // 0.625 x max_load_factor, so 0.5 at the default).
  double rebuild_load_factor = 0.50;
  engine::TableOptions table{};
  // CUDA backend (values in device memory): get batches in flight at once,
  // each on its own stream (0: the synchronous path for every get).
  int gpu_pipeline_depth = 2;
  // CUDA: pipelined get batches of at most this many keys take the small
  // path (server/cuda/device_gets.h: no copies, two launches); 0: none.
  uint64_t gpu_small_gets_keys = 0;
  // Time each pipelined get batch's device stages with CUDA events.
  bool time_get_stages = false;
  // The bits of a byte key's table key that the store's pair operations
  // (recovery: put_byte_pairs, erase_byte_keys) and the CUDA get path (which
  // hashes byte keys on the device) keep, as the front ends'
  // byte_key::table_key does. 64 when serving; tests force collisions with
  // fewer (0 to 64), hashing their calls the same way.
  int byte_key_hash_bits = 64;
  // The store's clock for items' expiry (issue 27), unix seconds. Null: the
  // system's. Tests set one to check expiry at the boundary second.
  std::function<uint32_t()> unix_clock;
  // The store's writes are logged (--data_dir): a touching get (touch, gat,
  // gats) keeps the items it rewrote for the log (Store::take_touches,
  // store_touch.cc), and flush_all its marks (Store::take_flush_marks).
  bool logged_writes = false;
  // The expiry sweep (Store::sweep_step): a pass over the table's items at
  // most this often, once some item was given an expiry or a flush was
  // asked for; 0: never (expired items then give their memory back only
  // when their key is written or deleted).
  uint32_t sweep_interval_seconds = 10;
  // --default_ttl (issue 27): the expiry, in seconds from the write, of a
  // byte-key item set, added, replaced or cas'd without one (at most 30
  // days: memcached reads larger numbers as absolute times); 0: none.
  uint32_t default_ttl_seconds = 0;
  // At the --memory cap (issue 27): false, a put that does not fit is
  // refused (RESOURCE_EXHAUSTED); true (--eviction=lru), the store evicts
  // the items CLOCK picks until it fits (server/store_eviction.cc). Gets
  // then mark what they read: the CUDA pipeline's kernels always do, the
  // host paths only when this is set.
  bool evict = false;
  // With a data directory: every evicted key is kept for the log
  // (Store::take_evictions), logged as a delete before the run that evicted
  // it, so a restart does not bring it back.
  bool record_evictions = false;
  // Tests: told of each step of the eviction's hand.
  std::function<void(const ClockStep&)> on_clock_step;
};

}  // namespace gphkv::server
