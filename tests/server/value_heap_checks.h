// Checks shared by the tests of both value heaps (host and device): the heap
// against a model of what each handle must hold, on random data.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/extent_value_heap.h"
#include "server/value_heap.h"

namespace gphkv::server::testing {

// What each live handle must hold.
using HeapModel = std::unordered_map<ValueHandle, std::string>;

std::string random_bytes(std::mt19937_64& rng, uint32_t len);

// Allocates and writes `values` in one batch; on success adds them to the
// model. Returns allocate_slots' status (a refusal must change nothing: the
// caller checks).
// packed: with allocate_packed_slots (a bulk load's).
absl::Status put_values(ValueHeap& heap, HeapModel& model, const std::vector<std::string>& values, bool packed = false);

// Every live handle's length and bytes (one gather, in a shuffled order),
// live_values(), distinct handles, and reserved_bytes() within limit().
void expect_heap_matches(const ValueHeap& heap, const HeapModel& model, std::mt19937_64& rng);

// Random batches of random sizes (mostly small, some up to max_value, and
// 0, 1, max_value), random releases and a trim, under `limit` (small enough
// to refuse some batches): each refusal must leave reserved, used and live
// bytes and every stored value as they were.
void run_random_ops(ValueHeap& heap, uint32_t max_value, uint64_t limit, std::mt19937_64& rng);

// Releases each live value with probability `share`; returns the value
// bytes released.
uint64_t release_share(ValueHeap& heap, HeapModel& model, std::mt19937_64& rng, double share);

// Stores 20000 values of 0 .. 2 KB, releases three in four at random (no
// chunk is left wholly free), and checks that trim() moves values, gives
// chunks back (what stays holds little more than the live values) and keeps
// every value; a second trim finds nothing more to do.
void check_trim(ExtentValueHeap& heap, std::mt19937_64& rng);

// The same heap and releases as check_trim, trimmed in steps of at most 256
// values' work with random puts and releases between the steps (a server's
// batches): the trim takes many steps, ends, gives chunks back, and every
// value written before or during it reads back.
void check_trim_in_steps(ExtentValueHeap& heap, std::mt19937_64& rng);

// A bulk load's path (server/bulk_load.h): reserve_values, then batches of
// random lengths through allocate_packed_slots and write_bulk (mostly 0 to 24
// bytes, a few hundred thousand values in all, enough to go round the
// device's staging ring several times; now and then one of max_value bytes or
// of a random large length in the middle of a batch), the sources overwritten
// as soon as write_bulk returns; between batches, releases of values not yet
// flushed, and ordinary puts (write) that may reuse their extents and must
// keep the newer bytes. After flush_writes() every value reads back, also
// after a trim.
void check_bulk_writes(ValueHeap& heap, uint32_t max_value, std::mt19937_64& rng);

// Lengths 0, 1, max_value and max_value + 1 (INVALID_ARGUMENT, in a batch
// with valid ones: nothing taken).
void check_adversarial_lengths(ValueHeap& heap, uint32_t max_value, std::mt19937_64& rng);

// The scenario: fill `limit` bytes with values of `first` bytes until
// a batch is refused, release a random half, fill with values of `second`
// bytes in batches of `batch` until refused.
struct RefillCase {
  uint64_t limit;
  uint32_t first, second;
  int batch;
};
// Runs each case on a fresh heap from make_heap and expects the bytes of the
// second size stored to be at least 90% of the bytes released, every value
// intact and the limit kept.
void expect_refills(const std::function<std::unique_ptr<ExtentValueHeap>()>& make_heap,
                    std::initializer_list<RefillCase> cases, std::mt19937_64& rng);

}  // namespace gphkv::server::testing
