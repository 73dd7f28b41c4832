// CK(call): a benchmark's check of a CUDA runtime call: on an error, print it
// with the place and exit 2 (a benchmark has no caller to hand a Status to).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                                      \
  do {                                                                                                             \
    cudaError_t e_ = (x);                                                                                          \
    if (e_ != cudaSuccess) {                                                                                       \
      std::fprintf(stderr, "CUDA error %s: %s at %s:%d\n", cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                                                      \
      std::exit(2);                                                                                                \
    }                                                                                                              \
  } while (0)
