// What the server reports about its backend's device, with or without CUDA
// in the build: the GPU's name for Stats and gphkv_build_info, and the insert
// path's relocations (Extended Moves) for gphkv_insert_relocations_total.
#pragma once

#include <cstdint>
#include <string>

#include "gphkv/engine/table.h"

namespace gphkv::server {

// "NVIDIA H100 80GB HBM3", or "" when the build has no CUDA or the device
// cannot be queried.
std::string cuda_device_name(int device);

// Cells relocated by Extended Move in `table` since it was created (the CUDA
// backend's RefinementStats::moves as of its last synchronous operation); 0
// for tables that do not count them.
uint64_t table_relocations(const engine::Table& table);

}  // namespace gphkv::server
