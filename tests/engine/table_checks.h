// Checks shared by the engine tests of both backends.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>

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

// Compares the table's full contents with the model; "" when equal.
std::string check_contents(const Table& table, const std::unordered_map<uint64_t, uint64_t>& model);

// Backends the tests can run here: the CPU always, CUDA when built and a device is present.
std::vector<Backend> available_backends();

}  // namespace gphkv::engine::testing
