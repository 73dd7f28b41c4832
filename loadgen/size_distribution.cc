#include "loadgen/size_distribution.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "loadgen/taobench_tables.h"

namespace gphkv::loadgen {
namespace {

// TAOBench's published workload configuration (audreyccheng/taobench,
// src/workload_a.json, "read_txn_sizes": weights of read transactions of 1..500
// operations, mean 19.2) condensed by us into 17 ranges; weights in percent.
constexpr const char* kTaoBenchRead =
    "2:29.46,3:16.60,4:8.86,5:5.68,6-7:7.64,8-11:8.05,12-15:3.66,16-23:3.89,24-31:2.58,"
    "32-47:3.34,48-63:2.19,64-95:2.87,96-127:1.67,128-191:1.84,192-255:0.79,256-383:0.57,384-500:0.30";
// The same file's "write_txn_sizes", every size above 0.5% kept (mean 5.3).
constexpr const char* kTaoBenchWrite = "2:10.9,3:29.5,4:35.4,5:4.6,6:0.6,7:11.2,21:5.4,26:2.1";
// Objects: Facebook's memcached ETC pool value sizes (Atikoglu et al.,
// "Workload Analysis of a Large-Scale Key-Value Store", SIGMETRICS 2012):
// generalized Pareto, sigma 214.476, k 0.348238; clamped to 1 B .. 64 KiB.
constexpr const char* kTaoObject = "gpareto:214.476:0.348238:1:65536";
// Associations: TAOBench's edge row, an 8-byte timestamp and a value of up
// to 150 bytes (VARCHAR(150)); uniform, as the benchmark fills it with
// random text of a fixed length we spread over the whole allowed range.
constexpr const char* kTaoAssociation = "8-158:1";

// A TAOBench size table (weight of size i + 1 at [i]) as ranges of one size
// each, weights scaled by `scale`; sizes of weight 0 are left out.
void AppendTable(absl::Span<const double> table, double scale, std::vector<WeightedRanges::Range>* out) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i] > 0) out->push_back({static_cast<uint32_t>(i + 1), static_cast<uint32_t>(i + 1), table[i] * scale});
  }
}

// Workload O's calls of one kind: a single operation (1 key) with weight
// `single`, a transaction drawn from `table` with weight `txn`. Weights stay
// integers (single x the table's total, txn x each size's weight), so the
// spec prints them exactly.
std::vector<WeightedRanges::Range> WorkloadOMix(double single, double txn, absl::Span<const double> table) {
  double total = 0;
  for (double w : table) total += w;
  std::vector<WeightedRanges::Range> ranges = {{1, 1, single * total}};
  AppendTable(table, txn, &ranges);
  if (ranges.size() > 1 && ranges[1].lo == 1) {  // a table that also weighs size 1
    ranges[0].weight += ranges[1].weight;
    ranges.erase(ranges.begin() + 1);
  }
  return ranges;
}

// The named distributions built from TAOBench's tables rather than a spec.
std::unique_ptr<SizeDistribution> NamedTable(const std::string& name) {
  std::vector<WeightedRanges::Range> ranges;
  if (name == "taobench-read-txn") AppendTable(taobench::ReadTxnSizeWeights(), 1, &ranges);
  if (name == "taobench-write-txn") AppendTable(taobench::WriteTxnSizeWeights(), 1, &ranges);
  if (name == "taobench-o-read") {
    ranges =
        WorkloadOMix(taobench::kWorkloadOSingleReads, taobench::kWorkloadOReadTxns, taobench::ReadTxnSizeWeights());
  }
  if (name == "taobench-o-write") {
    ranges =
        WorkloadOMix(taobench::kWorkloadOSingleWrites, taobench::kWorkloadOWriteTxns, taobench::WriteTxnSizeWeights());
  }
  if (ranges.empty()) return nullptr;
  return std::make_unique<WeightedRanges>(std::move(ranges));
}

absl::StatusOr<uint32_t> ParseU32(absl::string_view s) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(s, &v)) return absl::InvalidArgumentError(absl::StrCat("not a size: '", s, "'"));
  return v;
}

}  // namespace

WeightedRanges::WeightedRanges(std::vector<Range> ranges) : ranges_(std::move(ranges)) {
  double total = 0.0;
  for (const auto& r : ranges_) total += r.weight;
  double acc = 0.0;
  for (const auto& r : ranges_) {
    acc += r.weight / total;
    cumulative_.push_back(acc);
  }
  cumulative_.back() = 1.0;
}

uint32_t WeightedRanges::Quantile(double u) const {
  const size_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
  const Range& r = ranges_[std::min(i, ranges_.size() - 1)];
  if (r.lo == r.hi) return r.lo;
  // Reuse the position of u inside the range's probability slice: one random
  // number per draw keeps the stream simple to reproduce.
  const double start = i == 0 ? 0.0 : cumulative_[i - 1];
  const double width = cumulative_[std::min(i, ranges_.size() - 1)] - start;
  const double frac = width > 0 ? std::clamp((u - start) / width, 0.0, 0.999999999) : 0.0;
  return r.lo + static_cast<uint32_t>(frac * (r.hi - r.lo + 1));
}

double WeightedRanges::Mean() const {
  double total = 0.0, sum = 0.0;
  for (const auto& r : ranges_) {
    total += r.weight;
    sum += r.weight * 0.5 * (static_cast<double>(r.lo) + r.hi);
  }
  return sum / total;
}

uint32_t WeightedRanges::Max() const {
  uint32_t m = 0;
  for (const auto& r : ranges_) m = std::max(m, r.hi);
  return m;
}

std::string WeightedRanges::Spec() const {
  std::string out;
  for (const auto& r : ranges_) {
    if (!out.empty()) out += ",";
    out += r.lo == r.hi ? absl::StrCat(r.lo) : absl::StrCat(r.lo, "-", r.hi);
    out += absl::StrFormat(":%.15g", r.weight);  // exact for the integer weights of the TAOBench tables
  }
  return out;
}

GeneralizedPareto::GeneralizedPareto(double sigma, double k, uint32_t min, uint32_t max)
    : sigma_(sigma), k_(k), min_(min), max_(max) {}

uint32_t GeneralizedPareto::Quantile(double u) const {
  const double x = std::fabs(k_) < 1e-12 ? -sigma_ * std::log1p(-u) : sigma_ * (std::pow(1.0 - u, -k_) - 1.0) / k_;
  const double clamped = std::clamp(x, static_cast<double>(min_), static_cast<double>(max_));
  return static_cast<uint32_t>(std::llround(clamped));
}

double GeneralizedPareto::Mean() const {
  // Midpoint rule over u; 100k points is exact to well under a byte.
  constexpr int kPoints = 100000;
  double sum = 0.0;
  for (int i = 0; i < kPoints; ++i) sum += Quantile((i + 0.5) / kPoints);
  return sum / kPoints;
}

std::string GeneralizedPareto::Spec() const { return absl::StrFormat("gpareto:%g:%g:%d:%d", sigma_, k_, min_, max_); }

absl::StatusOr<std::unique_ptr<SizeDistribution>> ParseSizeDistribution(const std::string& spec_in) {
  if (auto table = NamedTable(spec_in)) return table;
  std::string spec = spec_in;
  if (spec == "taobench-read") spec = kTaoBenchRead;
  if (spec == "taobench-write") spec = kTaoBenchWrite;
  if (spec == "tao-object") spec = kTaoObject;
  if (spec == "tao-association") spec = kTaoAssociation;
  if (spec.empty()) return absl::InvalidArgumentError("empty size distribution");

  if (absl::StartsWith(spec, "gpareto:")) {
    std::vector<std::string> parts = absl::StrSplit(spec, ':');
    double sigma = 0, k = 0;
    if ((parts.size() != 3 && parts.size() != 5) || !absl::SimpleAtod(parts[1], &sigma) ||
        !absl::SimpleAtod(parts[2], &k) || sigma <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad gpareto spec '", spec, "': want gpareto:SIGMA:K[:MIN:MAX]"));
    }
    uint32_t min = 1, max = 1 << 20;
    if (parts.size() == 5) {
      auto lo = ParseU32(parts[3]);
      auto hi = ParseU32(parts[4]);
      if (!lo.ok()) return lo.status();
      if (!hi.ok()) return hi.status();
      min = *lo;
      max = *hi;
    }
    if (min > max) return absl::InvalidArgumentError(absl::StrCat("gpareto min > max in '", spec, "'"));
    return std::make_unique<GeneralizedPareto>(sigma, k, min, max);
  }

  std::vector<WeightedRanges::Range> ranges;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits(':', 1));
    double weight = 1.0;
    if (kv.size() == 2 && (!absl::SimpleAtod(kv[1], &weight) || weight < 0)) {
      return absl::InvalidArgumentError(absl::StrCat("bad weight in '", item, "'"));
    }
    std::vector<absl::string_view> lohi = absl::StrSplit(kv[0], absl::MaxSplits('-', 1));
    auto lo = ParseU32(lohi[0]);
    if (!lo.ok()) return lo.status();
    auto hi = lohi.size() == 2 ? ParseU32(lohi[1]) : lo;
    if (!hi.ok()) return hi.status();
    if (*lo > *hi) return absl::InvalidArgumentError(absl::StrCat("range lo > hi in '", item, "'"));
    ranges.push_back({*lo, *hi, weight});
  }
  double total = 0;
  for (const auto& r : ranges) total += r.weight;
  if (total <= 0) return absl::InvalidArgumentError(absl::StrCat("weights sum to zero in '", spec, "'"));
  return std::make_unique<WeightedRanges>(std::move(ranges));
}

}  // namespace gphkv::loadgen
