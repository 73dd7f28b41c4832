// The CUDA table's line rule (engine/cuda/device_table.cuh, "Lines"), read
// back from the device for the white-box tests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/cuda_table.h"

namespace gphkv::engine::testing {

struct LineCensus {
  uint64_t keys = 0;     // stored in buckets (the out-of-band key aside)
  uint64_t outside = 0;  // stored outside their home line
  uint64_t lines = 0;
  uint64_t spill_bits = 0;  // spill bits set (kSpillBits a line)
  uint64_t cells_flagged = 0;
};

// "" when every key stored outside its home line has its spill bit set in its
// home line and its cell's flag set (what lets a lookup read one line), else
// the first violation.
// Fills *census. The table must be idle (after a synchronous operation).
inline std::string check_lines(const cuda::CudaTable& table, LineCensus* census) {
  const cuda::DeviceTable t = table.view();
  const uint32_t M = t.geo.slots_per_bucket;
  std::vector<uint64_t> slots(2 * t.geo.num_slots());
  std::vector<uint32_t> spill(cuda::spill_words(t.geo));
  std::vector<uint8_t> index(cuda::cell_index_bytes(t.geo.num_cells));
  if (cudaMemcpy(slots.data(), t.slots, slots.size() * 8, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(spill.data(), t.spill, spill.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(index.data(), t.cells, index.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    return "copying the slots, spill bits and cell flags back failed";
  }
  auto flagged = [&](uint32_t cell) {
    uint32_t word = 0;
    std::memcpy(&word, index.data() + cuda::cell_flags_at(cell), sizeof(word));
    return (word & cuda::cell_flag_bit(cell)) != 0;
  };
  *census = {};
  census->lines = static_cast<uint64_t>(t.geo.num_buckets) * cuda::lines_per_bucket(t.geo);
  for (uint32_t w : spill) census->spill_bits += __builtin_popcount(w);
  for (uint32_t c = 0; c < t.geo.num_cells; ++c) census->cells_flagged += flagged(c);
  for (uint64_t s = 0; s < t.geo.num_slots(); ++s) {
    const uint64_t key = slots[2 * s];
    if (key == gph::kEmptyKey) continue;
    ++census->keys;
    const auto bucket = static_cast<uint32_t>(s / M);
    const uint32_t lh = cuda::line_hash(t.geo, key), home = cuda::home_line_of(t.geo, lh);
    if (cuda::in_line(t.geo, home, static_cast<uint32_t>(s % M))) continue;
    ++census->outside;
    auto where = [&] {
      return "key " + std::to_string(key) + " in slot " + std::to_string(s % M) + " of bucket " +
             std::to_string(bucket) + " is outside its home line " + std::to_string(home);
    };
    const uint64_t bit = cuda::spill_bit(t.geo, bucket, home, lh);
    if (((spill[bit >> 5] >> (bit & 31)) & 1u) == 0) return where() + ", whose spill bit is clear";
    const uint32_t cell = gph::cell_of(t.geo, key);
    if (!flagged(cell)) return where() + ", but its cell " + std::to_string(cell) + " is not flagged";
  }
  return "";
}

}  // namespace gphkv::engine::testing
