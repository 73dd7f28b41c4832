#include "server/metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace gphkv::metrics {
namespace {

// Adds to an atomic double; compare-exchange because fetch_add on
// std::atomic<double> is C++20.
void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string format_double(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  // The shortest text that reads back as the same double (0.00032, not
  // 0.00032000000000000003).
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string label_text(const Labels& labels, const char* extra_name = nullptr,
                       const std::string& extra_value = {}) {
  if (labels.empty() && extra_name == nullptr) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k + "=\"" + escape_label_value(v) + "\"";
  }
  if (extra_name != nullptr) {
    if (!first) out += ',';
    out += std::string(extra_name) + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

void header(std::string* out, const std::string& name, const std::string& help, const char* type) {
  *out += "# HELP " + name + " ";
  for (char c : help) *out += (c == '\n') ? std::string("\\n") : (c == '\\') ? std::string("\\\\") : std::string(1, c);
  *out += "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  atomic_add(sum_, v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

template <typename T>
T* Family<T>::with(const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = series_[labels];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<Histogram>(bounds_);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return slot.get();
}

template <typename T>
std::vector<std::pair<Labels, const T*>> Family<T>::series() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<Labels, const T*>> out;
  for (const auto& [labels, s] : series_) out.emplace_back(labels, s.get());
  return out;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>* Registry::counter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.push_back(std::make_unique<Family<Counter>>(name, help));
  order_.emplace_back('c', counters_.size() - 1);
  return counters_.back().get();
}

Family<Gauge>* Registry::gauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_.push_back(std::make_unique<Family<Gauge>>(name, help));
  order_.emplace_back('g', gauges_.size() - 1);
  return gauges_.back().get();
}

Family<Histogram>* Registry::histogram(const std::string& name, const std::string& help,
                                       std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  histograms_.push_back(std::make_unique<Family<Histogram>>(name, help, std::move(bounds)));
  order_.emplace_back('h', histograms_.size() - 1);
  return histograms_.back().get();
}

std::string Registry::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [kind, index] : order_) {
    if (kind == 'c') {
      const auto& f = *counters_[index];
      header(&out, f.name(), f.help(), "counter");
      for (const auto& [labels, c] : f.series()) {
        out += f.name() + label_text(labels) + " " + std::to_string(c->value()) + "\n";
      }
    } else if (kind == 'g') {
      const auto& f = *gauges_[index];
      header(&out, f.name(), f.help(), "gauge");
      for (const auto& [labels, g] : f.series()) {
        out += f.name() + label_text(labels) + " " + format_double(g->value()) + "\n";
      }
    } else {
      const auto& f = *histograms_[index];
      header(&out, f.name(), f.help(), "histogram");
      for (const auto& [labels, h] : f.series()) {
        // Read count before buckets would let _count lag +Inf; derive both
        // from one snapshot of the buckets instead so they always agree.
        const auto counts = h->bucket_counts();
        uint64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          const std::string le = i < h->bounds().size() ? format_double(h->bounds()[i]) : "+Inf";
          out += f.name() + "_bucket" + label_text(labels, "le", le) + " " +
                 std::to_string(cumulative) + "\n";
        }
        out += f.name() + "_sum" + label_text(labels) + " " + format_double(h->sum()) + "\n";
        out += f.name() + "_count" + label_text(labels) + " " + std::to_string(cumulative) + "\n";
      }
    }
  }
  return out;
}

}  // namespace gphkv::metrics
