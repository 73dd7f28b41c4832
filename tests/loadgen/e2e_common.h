// What the end-to-end tests share: running the gphkv-loadgen binary and
// checking the JSON it writes.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/loadgen/child_process.h"

namespace gphkv::loadgen::testing {

// Runs gphkv-loadgen with `args` (bounded by timeout_s); returns its exit
// status and leaves its output in dir/name.log.
inline int RunLoadgenBinary(const std::string& dir, const std::string& name, std::vector<std::string> args,
                            double timeout_s = 120) {
  args.insert(args.begin(), GPHKV_LOADGEN_PATH);
  ChildProcess p(args, dir + "/" + name + ".log");
  const int rc = p.Wait(timeout_s);
  if (rc != 0) std::fprintf(stderr, "%s\n", ReadFile(dir + "/" + name + ".log").c_str());
  return rc;
}

// The checks every real-server run must pass.
inline void ExpectHealthyReport(const nlohmann::json& j, const std::string& target, uint64_t keys) {
  EXPECT_EQ(j["schema"], "gphkv-loadgen-report");
  EXPECT_EQ(j["schema_version"], 8);
  // The allocator as the run left it (the thresholds, or why not: a sanitizer's allocator).
  EXPECT_EQ(j["config"]["malloc"].get<std::string>().rfind("malloc: ", 0), 0u) << j["config"]["malloc"];
  EXPECT_EQ(j["config"]["target"], target);
  EXPECT_EQ(j["load"]["ran"], true);
  EXPECT_EQ(j["load"]["keys"].get<uint64_t>(), keys);
  EXPECT_EQ(j["load"]["errors"].get<uint64_t>(), 0u);
  const auto& all = j["results"]["overall"];
  EXPECT_GT(all["calls"].get<uint64_t>(), 10u);
  EXPECT_EQ(all["errors"].get<uint64_t>(), 0u) << all["errors_by_status"].dump();
  // Everything was loaded; deletes are rare and uniform: reads hit.
  EXPECT_GT(all["hit_ratio"].get<double>(), 0.99);
  EXPECT_GT(all["keys_per_s"].get<double>(), 0);
  EXPECT_GT(all["bytes_per_s"].get<double>(), 0);
  const auto& lat = all["latency"];
  EXPECT_GT(lat["p50_us"].get<double>(), 0);
  EXPECT_LE(lat["p50_us"].get<double>(), lat["p99_us"].get<double>());
  EXPECT_LE(lat["p99_us"].get<double>(), lat["max_us"].get<double>() * 1.0001);
  EXPECT_FALSE(j["series"].empty());
  // What the gets saw of their own thread's writes (read_check.h).
  EXPECT_NE(j["results"]["read_check"]["mode"], "off");
  EXPECT_GT(j["results"]["read_check"]["keys_checked"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["results"]["read_check"]["violations"].get<uint64_t>(), 0u) << j["results"]["read_check"].dump();
}

}  // namespace gphkv::loadgen::testing
