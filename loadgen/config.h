// Everything one gphkv-loadgen run is told: echoed whole into the JSON report.
#pragma once

#include <cstdint>
#include <string>

#include "gphkv/client/tls.h"
#include "loadgen/driver.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

struct LoadgenConfig {
  std::string target = "gphkv";             // gphkv | memcached
  std::string address = "127.0.0.1:50051";  // gphkv: a server list, several servers are shards
  std::string api = "unary";                // gphkv: unary | pipeline | coalesced (memcached: unused)
  int coalesce_in_flight = 2;               // --api=coalesced: CoalesceOptions::max_in_flight
  // gphkv --api=coalesced: per_thread (a gphkv::Client per driver thread,
  // --connections streams each) or shared (one for all threads,
  // --connections streams in all).
  std::string clients = "per_thread";
  // gphkv: u64 (the key space's ids), bytes (byte keys named after them,
  // their lengths drawn from the size spec key_length) or tao (TaoBench's
  // names), loadgen/key_format.h.
  std::string key_format = "u64";
  std::string key_length = "24";
  // What a thread's gets must show of its own writes (read_check.h): auto
  // (issued for gphkv --api=coalesced, whose client keeps a thread's order;
  // completed otherwise), issued, completed or off.
  std::string check_reads = "auto";
  TlsFiles tls;  // gphkv: TLS (gphkv/client/tls.h)
  // The process's allocator, as main set it (flags/malloc_tuning.h's describe()).
  std::string malloc = "malloc: glibc's defaults";
  // A get's misses are put back (cache_aside.h), as a cache-aside client fills its cache.
  bool cache_aside = false;
  WorkloadOptions workload;
  DriveOptions drive;
  // The load phase: every item of the key space, as large batched puts.
  bool load = true;
  uint32_t load_batch_keys = 1000;
  uint64_t load_batch_bytes = 1 << 20;
  uint32_t load_depth = 4;
  double wait_ready_s = 10;  // for the store to answer before anything else
  double interval_s = 1;     // series and progress granularity
  bool progress = true;      // a live line on stderr
  std::string json_path;     // empty: no JSON file
  std::string plot_path;     // .svg or .png; empty: no plot
  std::string trace_path;    // the keys of every call, per thread, in send order
  std::string label;         // free text carried into the report
};

}  // namespace gphkv::loadgen
