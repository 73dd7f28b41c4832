// lru_hit_ratio: the hit ratio an exact LRU cache (or a plain CLOCK) of a
// given number of items gives on a gphkv-loadgen --trace, played as
// cache-aside (loadgen/cache_model.h): the baseline gphkv's eviction is
// measured against (scripts/hit-ratio.sh, docs/loadgen.md section 3.2).
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "flags/program_flags.h"
#include "loadgen/cache_model.h"
#include "loadgen/trace.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, trace, "", "the gphkv-loadgen --trace file to play");
ABSL_FLAG(uint64_t, items, 0, "the cache's capacity in items");
ABSL_FLAG(std::string, policy, "lru",
          "lru (exact: the least recently used item goes) or clock (one reference bit per item, new items "
          "referenced, the hand clears and skips referenced items)");
ABSL_FLAG(bool, json, false, "print the result as one JSON object instead of a line of text");

int main(int argc, char** argv) {
  gphkv::ParseProgramFlags(argc, argv,
                           {"lru_hit_ratio",
                            "The hit ratio of an exact LRU (or CLOCK) cache on a gphkv-loadgen --trace, played as "
                            "cache-aside.\nUsage: lru_hit_ratio --trace=FILE --items=N [--policy=lru|clock] [--json]",
                            {"bench/lru_hit_ratio.cc"}});
  const std::string path = absl::GetFlag(FLAGS_trace);
  const uint64_t items = absl::GetFlag(FLAGS_items);
  const std::string policy = absl::GetFlag(FLAGS_policy);
  if (path.empty() || items == 0) {
    std::fprintf(stderr, "lru_hit_ratio: --trace and --items (at least 1) are required\n");
    return 2;
  }
  auto model = gphkv::loadgen::MakeCacheModel(policy, items);
  if (!model.ok()) {
    std::fprintf(stderr, "lru_hit_ratio: %s\n", std::string(model.status().message()).c_str());
    return 2;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "lru_hit_ratio: cannot read %s\n", path.c_str());
    return 1;
  }
  auto trace = gphkv::loadgen::ReadTrace(in);
  if (!trace.ok()) {
    std::fprintf(stderr, "lru_hit_ratio: %s: %s\n", path.c_str(), std::string(trace.status().message()).c_str());
    return 1;
  }
  const uint64_t calls = gphkv::loadgen::ReplayTrace(*trace, model->get());
  const gphkv::loadgen::CacheModelStats& s = (*model)->stats();
  if (absl::GetFlag(FLAGS_json)) {
    const nlohmann::json j{
        {"policy", policy}, {"items", items},           {"trace", path},           {"threads", trace->size()},
        {"calls", calls},   {"get_keys", s.get_keys},   {"hits", s.hits},          {"hit_ratio", s.hit_ratio()},
        {"fills", s.fills}, {"evictions", s.evictions}, {"held", (*model)->size()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "%s, %llu items: hit ratio %.6f (%llu of %llu get keys) over %llu calls of %zu threads; %llu fills, "
        "%llu evictions\n",
        policy.c_str(), static_cast<unsigned long long>(items), s.hit_ratio(), static_cast<unsigned long long>(s.hits),
        static_cast<unsigned long long>(s.get_keys), static_cast<unsigned long long>(calls), trace->size(),
        static_cast<unsigned long long>(s.fills), static_cast<unsigned long long>(s.evictions));
  }
  return 0;
}
