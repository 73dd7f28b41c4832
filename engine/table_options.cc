#include "gphkv/engine/table_options.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine {

std::string_view backend_name(Backend b) { return b == Backend::kCuda ? "cuda" : "cpu"; }

uint64_t buckets_for_capacity(uint64_t keys, double load_factor, uint32_t slots_per_bucket) {
  if (load_factor <= 0.0 || load_factor > 1.0) load_factor = 1.0;
  if (slots_per_bucket == 0) slots_per_bucket = 1;
  const double slots = std::ceil(static_cast<double>(keys) / load_factor);
  const uint64_t buckets = static_cast<uint64_t>(std::ceil(slots / slots_per_bucket));
  return buckets == 0 ? 1 : buckets;
}

bool same_addressing(const gph::Geometry& a, const gph::Geometry& b) {
  auto same = [](const auto& x, const auto& y) { return std::equal(std::begin(x), std::end(x), std::begin(y)); };
  return a.num_cells == b.num_cells && a.num_buckets == b.num_buckets && a.slots_per_bucket == b.slots_per_bucket &&
         a.virtual_buckets == b.virtual_buckets && same(a.seeds.cell, b.seeds.cell) &&
         same(a.seeds.vbucket, b.seeds.vbucket) && same(a.seeds.bucket, b.seeds.bucket);
}

absl::StatusOr<gph::Geometry> make_geometry(const TableOptions& o) {
  const uint64_t max_index = std::numeric_limits<uint32_t>::max();
  if (o.num_buckets == 0 || o.num_buckets > max_index) {
    return absl::InvalidArgumentError(absl::StrCat("num_buckets must be in [1, ", max_index, "], got ", o.num_buckets));
  }
  if (o.slots_per_bucket == 0 || o.slots_per_bucket > 64 || o.slots_per_bucket % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots_per_bucket (M) must be even and in [2, 64], got ", o.slots_per_bucket));
  }
  const uint32_t r = o.virtual_buckets;
  if (r < 2 || r > gph::kMaxVirtualBuckets || (r & (r - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("virtual_buckets (R) must be a power of two in [2, ", gph::kMaxVirtualBuckets, "], got ", r));
  }
  if (!(o.cells_per_bucket > 0.0) || o.cells_per_bucket > 64.0) {
    return absl::InvalidArgumentError(absl::StrCat("cells_per_bucket must be in (0, 64], got ", o.cells_per_bucket));
  }
  const double cells = std::ceil(static_cast<double>(o.num_buckets) * o.cells_per_bucket);
  if (cells > static_cast<double>(max_index)) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_buckets * cells_per_bucket must be at most ", max_index, " cells, got ", cells));
  }
  gph::Geometry g;
  g.num_buckets = static_cast<uint32_t>(o.num_buckets);
  g.num_cells = static_cast<uint32_t>(cells);
  g.slots_per_bucket = o.slots_per_bucket;
  g.virtual_buckets = r;
  while ((1u << g.delta_bits) < r) ++g.delta_bits;
  g.seeds = gph::derive_seeds(o.seed);
  return g;
}

}  // namespace gphkv::engine
