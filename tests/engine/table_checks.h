// Checks shared by the engine tests of both backends.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gphkv/engine/table.h"

namespace gphkv::engine::testing {

// A fresh seed per run (printed, so a failure can be replayed), or the value
// of GPHKV_TEST_SEED when set.
uint64_t test_seed();

// GPH's invariants on an image: every stored key sits in the one bucket its
// cell maps it to (the one-probe property), no key is stored twice, every
// cell byte is a valid (Φ, Δ), and the slot count matches `expected_size`.
// Returns "" when all hold, else a description of the first violation.
std::string check_invariants(const TableImage& image, uint64_t expected_size);

// Compares the table's full contents with the model (its pairs, then its
// key list: check_keys); "" when equal.
std::string check_contents(const Table& table, const std::unordered_map<uint64_t, uint64_t>& model);

// Compares the table's key list (export_keys) with the model's keys: each
// once, none missing, none extra; "" when equal.
std::string check_keys(const Table& table, const std::unordered_map<uint64_t, uint64_t>& model);

// Looks every model key up through t.find() (a Table or an ElasticTable) and
// compares found flags and values; "" when all match.
template <class T>
std::string check_lookups(T& t, const std::unordered_map<uint64_t, uint64_t>& model) {
  std::vector<uint64_t> keys, got;
  for (const auto& kv : model) keys.push_back(kv.first);
  got.resize(keys.size());
  std::vector<uint8_t> found(keys.size());
  if (auto s = t.find(keys, absl::MakeSpan(got), absl::MakeSpan(found)); !s.ok()) return s.ToString();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!found[i]) return "key " + std::to_string(keys[i]) + " is in the model but not found";
    if (got[i] != model.at(keys[i])) {
      return "key " + std::to_string(keys[i]) + " found with " + std::to_string(got[i]) + ", model says " +
             std::to_string(model.at(keys[i]));
    }
  }
  return "";
}

// Backends the tests can run here: the CPU always, CUDA when built and a device is present.
std::vector<Backend> available_backends();

}  // namespace gphkv::engine::testing
