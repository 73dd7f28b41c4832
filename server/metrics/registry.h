// A small Prometheus metrics library: counters, gauges and histograms with
// labels, rendered in the text exposition format 0.0.4.
//
// prometheus-cpp is not packaged in Debian 12, and the service needs only
// this much. Updates are lock-free (atomics); a family's label lookup takes a
// mutex, so hot paths resolve their series once and keep the pointer (series
// live as long as the registry).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gphkv::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count.
class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into cumulative buckets by upper bound (le), plus
// their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts; the last is the +Inf bucket.
  std::vector<uint64_t> bucket_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Bucket bounds start, start*factor, ... (count of them).
std::vector<double> exponential_buckets(double start, double factor, int count);

// All series of one metric name, one per distinct label set.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<double> bounds = {})
      : name_(std::move(name)), help_(std::move(help)), bounds_(std::move(bounds)) {}

  // The series with these labels, created on first use. The pointer stays valid.
  T* with(const Labels& labels);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  // A snapshot of (labels, series) in label order.
  std::vector<std::pair<Labels, const T*>> series() const;

 private:
  std::string name_, help_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<T>> series_;
};

// Owns every family and renders them.
class Registry {
 public:
  Family<Counter>* counter(const std::string& name, const std::string& help);
  Family<Gauge>* gauge(const std::string& name, const std::string& help);
  Family<Histogram>* histogram(const std::string& name, const std::string& help,
                               std::vector<double> bounds);

  // The text exposition format (version 0.0.4), every family in registration order.
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family<Counter>>> counters_;
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_;
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;
  // (kind, index) in registration order, so output order is stable.
  std::vector<std::pair<char, size_t>> order_;
};

// Escapes a label value for the exposition format (backslash, quote, newline).
std::string escape_label_value(const std::string& v);

}  // namespace gphkv::metrics
