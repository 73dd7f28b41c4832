#include <cstdio>
#include <random>
#include <vector>
#include "gphkv/engine/table.h"
using namespace gphkv::engine;
int main(int argc, char** argv) {
  std::mt19937_64 rng(42);
  for (uint32_t m : {8u, 16u, 32u}) for (uint32_t r : {8u, 16u}) for (double cpb : {1.0, 2.0, 4.0, 8.0}) {
    double sum = 0; int reps = 3;
    for (int rep = 0; rep < reps; ++rep) {
    TableOptions o; o.slots_per_bucket = m; o.virtual_buckets = r; o.cells_per_bucket = cpb; o.num_buckets = (1u << 20) / m; o.seed = rng();
    auto t = *make_cpu_table(o);
    size_t batch = (1u << 20) / 512; std::vector<uint64_t> k(batch), v(batch); std::vector<UpsertOutcome> out(batch);
    bool fail = false;
    while (!fail) { for (auto& x : k) x = rng(); t->insert_or_assign(k, k, absl::MakeSpan(out)); for (auto x : out) if (x == UpsertOutcome::kNoRoom) fail = true; }
    sum += t->load_factor();
    }
    std::printf("M=%2u R=%2u cpb=%.0f lf=%.4f\n", m, r, cpb, sum / reps); std::fflush(stdout);
  }
}
