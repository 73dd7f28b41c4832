// engine_bench's sections (--sections), one file each. Every section prints
// as it goes and adds its rows to the context's report.
#pragma once

#include <cstdint>

#include "engine/bench/context.h"

namespace gphkv::bench {

// "table" (table_section.cu): a table of n keys built to --load: the gather
// ceiling, insert, find on every point of the lookup axes, a 1% burst in and
// out, (--sweep) the lookup tuning sweep, and the linear-probing baseline.
void table_section(Context& c, uint64_t n, bool sweep);
// With --sweep, after the table section (cells_per_bucket_bench.cu): find
// and build at 1, 2, 4 and 8 cells per bucket.
void cells_per_bucket_sweep(Context& c, uint64_t n);
// "build" (bulk_build_bench.cu): the GPU bulk build of every --keys size,
// its variants at the first.
void bulk_build_section(Context& c);
// "burst" (burst_bench.cu): bursts of 0.1% .. 100% of n keys absorbed by
// the insert kernel and by a rebuild.
void burst_section(Context& c, uint64_t n);
// "rebuild_lookup" (rebuild_lookup_bench.cu): lookups on one stream while a
// rebuild runs on another, against idle.
void rebuild_lookup_section(Context& c, uint64_t n);

}  // namespace gphkv::bench
