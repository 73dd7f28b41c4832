// The memcached port's metrics (--memcached_address), beside gRPC's: the
// port counts its commands on its loops (memcache::PortCounters), and
// refresh() brings these series to those counts when /metrics is collected,
// so the loops' fast path touches no Prometheus series. Registered only
// with the port on. docs/service.md, "Metrics", names them.
#pragma once

#include <array>
#include <cstdint>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "server/memcache/listener.h"

namespace gphkv::server {

class MemcachedMetrics {
 public:
  explicit MemcachedMetrics(prometheus::Registry& registry);

  // Runs on the collecting thread, one collection at a time
  // (ServiceMetrics::on_collect).
  void refresh(const memcache::PortCounters& now);

 private:
  // A counter and what it was last brought to (counters only move forward).
  struct Tracked {
    prometheus::Counter* counter = nullptr;
    uint64_t reported = 0;
    void bring_to(uint64_t total);
  };

  prometheus::Gauge* connections_;
  Tracked accepted_;
  Tracked rejected_;
  std::array<Tracked, memcache::kCommandKinds> commands_;
  Tracked get_keys_;
  Tracked store_calls_;
  Tracked packed_gets_;
  Tracked spun_answers_;
};

}  // namespace gphkv::server
