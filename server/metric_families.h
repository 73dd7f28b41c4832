// Registering a named family of Prometheus metrics in a registry: the one
// spelling ServiceMetrics and PartitionMetrics share.
#pragma once

#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace gphkv::server {

inline prometheus::Family<prometheus::Counter>& counter_family(prometheus::Registry& r, const std::string& name,
                                                               const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

inline prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r, const std::string& name,
                                                           const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

inline prometheus::Family<prometheus::Histogram>& histogram_family(prometheus::Registry& r, const std::string& name,
                                                                   const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace gphkv::server
