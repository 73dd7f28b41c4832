#include "gphkv/engine/table_options.h"

#include "gtest/gtest.h"

namespace gphkv::engine {
namespace {

TEST(TableOptions, DefaultsMakeTheGeometry) {
  TableOptions o;
  auto g = make_geometry(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_buckets, o.num_buckets);
  EXPECT_EQ(g->num_cells, 4 * o.num_buckets);  // cells_per_bucket = 4
  EXPECT_EQ(g->slots_per_bucket, 16u);
  EXPECT_EQ(g->virtual_buckets, 8u);
  EXPECT_EQ(g->delta_bits, 3u);
}

TEST(TableOptions, RejectsBadParametersWithTheLimit) {
  struct Case {
    void (*edit)(TableOptions&);
    const char* field;
  } cases[] = {
      {[](TableOptions& o) { o.num_buckets = 0; }, "num_buckets"},
      {[](TableOptions& o) { o.num_buckets = 1ull << 33; }, "num_buckets"},
      {[](TableOptions& o) { o.slots_per_bucket = 0; }, "slots_per_bucket"},
      {[](TableOptions& o) { o.slots_per_bucket = 7; }, "slots_per_bucket"},
      {[](TableOptions& o) { o.slots_per_bucket = 66; }, "slots_per_bucket"},
      {[](TableOptions& o) { o.virtual_buckets = 1; }, "virtual_buckets"},
      {[](TableOptions& o) { o.virtual_buckets = 12; }, "virtual_buckets"},
      {[](TableOptions& o) { o.virtual_buckets = 128; }, "virtual_buckets"},
      {[](TableOptions& o) { o.cells_per_bucket = 0; }, "cells_per_bucket"},
      {[](TableOptions& o) { o.cells_per_bucket = -1; }, "cells_per_bucket"},
  };
  for (const Case& c : cases) {
    TableOptions o;
    c.edit(o);
    auto g = make_geometry(o);
    ASSERT_FALSE(g.ok()) << c.field;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(c.field), std::string::npos) << g.status();
  }
}

TEST(TableOptions, BucketsForCapacity) {
  EXPECT_EQ(buckets_for_capacity(1600, 1.0, 16), 100u);
  EXPECT_EQ(buckets_for_capacity(1600, 0.5, 16), 200u);
  EXPECT_EQ(buckets_for_capacity(1601, 1.0, 16), 101u);
  EXPECT_EQ(buckets_for_capacity(0, 0.8, 16), 1u);
}

}  // namespace
}  // namespace gphkv::engine
