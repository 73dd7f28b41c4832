#include "engine/cpu/bulk_builder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gphkv/engine/detail/move_planner.h"

namespace gphkv::engine::cpu {
namespace {

// One input write, binned and sorted by (cell, key, seq). seq orders the
// writes of one key: base pairs first, then the burst in arrival order.
struct Record {
  uint64_t key;
  uint64_t value;
  uint32_t cell;
  uint32_t seq_erase;  // seq << 1 | erase
};

// HashGraph-V2 sizes bins to stay cache-resident; ours hold about this many
// records on average (a few hundred KiB).
constexpr uint64_t kRecordsPerBin = 8192;
// Parallel rounds of (Φ, Δ) choice before the remaining cells are settled
// one at a time (a cell's choice there is exact, so the pass always ends).
constexpr uint32_t kParallelRounds = 4;

uint32_t atomic_add(uint32_t* p, int32_t d) { return __atomic_fetch_add(p, d, __ATOMIC_RELAXED); }
uint32_t atomic_load(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

class Builder {
 public:
  Builder(const gph::Geometry& g, WorkerPool& pool) : g_(g), pool_(pool) {}

  absl::StatusOr<TableImage> run(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst, BuildStats* stats);

 private:
  void bin_records(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst);
  void dedupe_bins();
  std::vector<uint32_t> overflowing_cells();
  std::vector<uint32_t> losing_cells(const std::vector<uint8_t>& moved);
  uint8_t choose_cell(uint32_t cell) const;
  void move_cell(uint32_t cell, uint8_t byte);
  absl::Status settle_cells(BuildStats* stats);
  void place(TableImage* image);

  // Sets bucket_[i] for records [begin, end) of one cell from its current byte.
  void locate(uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      bucket_[i] = gph::bucket_for_key(g_, records_[i].key, records_[i].cell, cells_[records_[i].cell]);
    }
  }
  uint32_t cell_size(uint32_t cell) const { return cell_begin_[cell + 1] - cell_begin_[cell]; }
  // Runs f(bin) for every bin over the pool; a bin owns a contiguous cell range.
  template <class F>
  void for_each_bin(F&& f) {
    pool_.run(bins_, [&](size_t b) { f(static_cast<uint32_t>(b)); });
  }
  // Cell c is in bin floor(c * bins / L) (bin_of_cell), so bin b starts at
  // the first c with c * bins / L >= b: ceil(b * L / bins).
  uint32_t bin_of_cell(uint32_t cell) const {
    return static_cast<uint32_t>(static_cast<uint64_t>(cell) * bins_ / g_.num_cells);
  }
  uint32_t bin_first_cell(uint32_t bin) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(bin) * g_.num_cells + bins_ - 1) / bins_);
  }

  const gph::Geometry& g_;
  WorkerPool& pool_;
  uint32_t bins_ = 1;
  std::vector<Record> records_;
  std::vector<uint64_t> bin_begin_;   // bins_ + 1 offsets into records_ (before dedupe)
  std::vector<uint64_t> bin_kept_;    // survivors of each bin, at the front of its range
  std::vector<uint64_t> cell_begin_;  // L + 1 offsets into records_ (after compaction)
  std::vector<uint8_t> cells_;
  std::vector<uint32_t> bucket_;       // each record's bucket under its cell's current byte
  std::vector<uint32_t> bucket_load_;  // keys per bucket under the current cells
  bool has_empty_key_ = false;
  uint64_t empty_key_value_ = 0;
};

absl::StatusOr<TableImage> Builder::run(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst,
                                        BuildStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t inputs = base.size() + burst.size();
  if (inputs >= (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat("bulk build takes at most 2^31 - 1 pairs and writes, got ", inputs));
  }
  stats->input_pairs = inputs;
  bins_ = static_cast<uint32_t>(std::clamp<uint64_t>(inputs / kRecordsPerBin, 1, g_.num_cells));
  bin_records(base, burst);
  dedupe_bins();
  const uint64_t keys = records_.size();
  if (keys > g_.num_slots()) {
    return absl::ResourceExhaustedError(absl::StrCat("bulk build: ", keys, " keys exceed the ", g_.num_slots(),
                                                     " slots of ", g_.num_buckets, " buckets; grow the table"));
  }
  cells_.assign(g_.num_cells, 0);
  if (auto s = settle_cells(stats); !s.ok()) return s;
  TableImage image;
  place(&image);
  stats->keys = keys + (has_empty_key_ ? 1 : 0);
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return image;
}

// HashGraph-V2 phase 1 and 2: count per (thread chunk, bin), prefix-sum, and
// scatter, so that each bin's records are contiguous and in input order.
void Builder::bin_records(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst) {
  const uint64_t n = base.size() + burst.size();
  // The key equal to the empty-slot sentinel is kept out of band.
  for (const KeyValue& kv : base) {
    if (kv.key != gph::kEmptyKey) continue;
    has_empty_key_ = true;
    empty_key_value_ = kv.value;
  }
  for (const WriteOp& w : burst) {
    if (w.key != gph::kEmptyKey) continue;
    has_empty_key_ = !w.erase;
    empty_key_value_ = w.erase ? 0 : w.value;
  }
  auto record_at = [&](uint64_t i) {
    if (i < base.size()) return Record{base[i].key, base[i].value, 0, static_cast<uint32_t>(i << 1)};
    const WriteOp& w = burst[i - base.size()];
    return Record{w.key, w.value, 0, static_cast<uint32_t>(i << 1 | (w.erase ? 1 : 0))};
  };
  const size_t chunks = n < 65536 ? 1 : pool_.size();
  std::vector<std::vector<uint64_t>> count(chunks, std::vector<uint64_t>(bins_ + 1, 0));
  std::vector<uint32_t> cell_of(n);
  pool_.run(chunks, [&](size_t c) {
    for (uint64_t i = c * n / chunks, end = (c + 1) * n / chunks; i < end; ++i) {
      const uint64_t key = i < base.size() ? base[i].key : burst[i - base.size()].key;
      if (key == gph::kEmptyKey) continue;
      cell_of[i] = gph::cell_of(g_, key);
      ++count[c][bin_of_cell(cell_of[i])];
    }
  });
  bin_begin_.assign(bins_ + 1, 0);
  uint64_t total = 0;
  for (uint32_t b = 0; b < bins_; ++b) {
    bin_begin_[b] = total;
    for (size_t c = 0; c < chunks; ++c) {
      const uint64_t k = count[c][b];
      count[c][b] = total;  // now the chunk's write cursor in bin b
      total += k;
    }
  }
  bin_begin_[bins_] = total;
  records_.resize(total);
  pool_.run(chunks, [&](size_t c) {
    for (uint64_t i = c * n / chunks, end = (c + 1) * n / chunks; i < end; ++i) {
      Record r = record_at(i);
      if (r.key == gph::kEmptyKey) continue;
      r.cell = cell_of[i];
      records_[count[c][bin_of_cell(r.cell)]++] = r;
    }
  });
}

// Within each bin (HashGraph-V2 phase 3, in cache): a counting sort by cell,
// then each cell's few records by (key, seq); keep each key's last write
// unless it is an erase. Then compact all bins and index records by cell.
void Builder::dedupe_bins() {
  bin_kept_.assign(bins_, 0);
  for_each_bin([&](uint32_t b) {
    Record* first = records_.data() + bin_begin_[b];
    const uint64_t n = bin_begin_[b + 1] - bin_begin_[b];
    const uint32_t cell0 = bin_first_cell(b), cells = bin_first_cell(b + 1) - cell0;
    std::vector<uint32_t> offset(cells + 1, 0);
    for (uint64_t i = 0; i < n; ++i) ++offset[first[i].cell - cell0 + 1];
    for (uint32_t c = 0; c < cells; ++c) offset[c + 1] += offset[c];
    std::vector<Record> sorted(n);
    std::vector<uint32_t> cursor(offset.begin(), offset.end() - 1);
    for (uint64_t i = 0; i < n; ++i) sorted[cursor[first[i].cell - cell0]++] = first[i];
    Record* out = first;
    for (uint32_t c = 0; c < cells; ++c) {
      Record* a = sorted.data() + offset[c];
      Record* z = sorted.data() + offset[c + 1];
      // Insertion sort: a cell holds a handful of records.
      for (Record* r = a + 1; r < z; ++r) {
        const Record x = *r;
        Record* q = r;
        for (; q > a && (q[-1].key > x.key || (q[-1].key == x.key && q[-1].seq_erase > x.seq_erase)); --q) *q = q[-1];
        *q = x;
      }
      for (Record* r = a; r != z; ++r) {
        if (r + 1 != z && r[1].key == r->key) continue;  // a later write of this key follows
        if (r->seq_erase & 1) continue;                  // the last write erased it
        *out++ = *r;
      }
    }
    bin_kept_[b] = static_cast<uint64_t>(out - first);
  });
  std::vector<uint64_t> dest(bins_ + 1, 0);
  for (uint32_t b = 0; b < bins_; ++b) dest[b + 1] = dest[b] + bin_kept_[b];
  std::vector<Record> compact(dest[bins_]);
  cell_begin_.assign(static_cast<uint64_t>(g_.num_cells) + 1, 0);
  for_each_bin([&](uint32_t b) {
    std::copy_n(records_.data() + bin_begin_[b], bin_kept_[b], compact.data() + dest[b]);
    // Cells of this bin are [first, next); their records are in cell order.
    const uint32_t first = bin_first_cell(b), next = bin_first_cell(b + 1);
    uint64_t at = dest[b];
    for (uint32_t cell = first; cell < next; ++cell) {
      cell_begin_[cell] = at;
      while (at < dest[b + 1] && compact[at].cell == cell) ++at;
    }
  });
  cell_begin_[g_.num_cells] = dest[bins_];
  records_ = std::move(compact);
}

// Cells with a key in an overflowing bucket: all of them must choose again.
std::vector<uint32_t> Builder::overflowing_cells() {
  std::vector<std::vector<uint32_t>> per_bin(bins_);
  for_each_bin([&](uint32_t b) {
    for (uint32_t cell = bin_first_cell(b), next = bin_first_cell(b + 1); cell < next; ++cell) {
      for (uint64_t k = cell_begin_[cell], end = cell_begin_[cell + 1]; k < end; ++k) {
        if (bucket_load_[bucket_[k]] > g_.slots_per_bucket) {
          per_bin[b].push_back(cell);
          break;
        }
      }
    }
  });
  std::vector<uint32_t> out;
  for (auto& v : per_bin) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// In every overflowing bucket, the cells already there keep their keys in it
// up to M slots, first those that did not just move (`moved` is 1 for the
// cells that moved last round), then by cell id; the cells past M lose. A
// cell that loses in any bucket must choose again. Keeping the residents
// keeps a collision from dragging settled cells along.
std::vector<uint32_t> Builder::losing_cells(const std::vector<uint8_t>& moved) {
  struct Entry {
    uint32_t bucket;
    uint32_t cell;
  };
  std::vector<std::vector<Entry>> per_bin(bins_);
  for_each_bin([&](uint32_t b) {
    for (uint32_t cell = bin_first_cell(b), next = bin_first_cell(b + 1); cell < next; ++cell) {
      for (uint64_t k = cell_begin_[cell], end = cell_begin_[cell + 1]; k < end; ++k) {
        if (bucket_load_[bucket_[k]] > g_.slots_per_bucket) per_bin[b].push_back({bucket_[k], cell});
      }
    }
  });
  std::vector<Entry> entries;
  for (auto& v : per_bin) entries.insert(entries.end(), v.begin(), v.end());
  std::sort(entries.begin(), entries.end(), [&](const Entry& x, const Entry& y) {
    if (x.bucket != y.bucket) return x.bucket < y.bucket;
    if (moved[x.cell] != moved[y.cell]) return moved[x.cell] < moved[y.cell];
    return x.cell < y.cell;
  });
  std::vector<uint32_t> losers;
  for (size_t i = 0; i < entries.size();) {
    const uint32_t bucket = entries[i].bucket;
    uint32_t kept = 0;
    while (i < entries.size() && entries[i].bucket == bucket) {
      const uint32_t cell = entries[i].cell;
      uint32_t n = 0;
      while (i < entries.size() && entries[i].bucket == bucket && entries[i].cell == cell) ++n, ++i;
      if (kept + n <= g_.slots_per_bucket)
        kept += n;
      else
        losers.push_back(cell);
    }
  }
  std::sort(losers.begin(), losers.end());
  losers.erase(std::unique(losers.begin(), losers.end()), losers.end());
  return losers;
}

// Picks a (Φ, Δ) for `cell` against the loads every other cell puts on the
// buckets now (its own keys discounted); returns its current byte when none fits.
uint8_t Builder::choose_cell(uint32_t cell) const {
  const uint64_t begin = cell_begin_[cell], end = cell_begin_[cell + 1];
  const uint32_t n = static_cast<uint32_t>(end - begin);
  if (n > g_.virtual_buckets * g_.slots_per_bucket) return cells_[cell];  // more than its buckets hold
  uint64_t keys[gph::kMaxVirtualBuckets * 64];                            // R * M at most
  for (uint32_t k = 0; k < n; ++k) keys[k] = records_[begin + k].key;
  auto others = [&](uint32_t b) {
    uint32_t own = 0;
    for (uint64_t k = begin; k < end; ++k) own += bucket_[k] == b;
    return std::min(atomic_load(&bucket_load_[b]) - own, g_.slots_per_bucket);
  };
  uint8_t chosen = cells_[cell];
  if (!gph::plan_extended_move(g_, cell, cells_[cell], keys, n, others, &chosen)) return cells_[cell];
  return chosen;
}

// Moves `cell` to `byte`: its keys leave their buckets' loads and join the new ones.
void Builder::move_cell(uint32_t cell, uint8_t byte) {
  const uint64_t begin = cell_begin_[cell], end = cell_begin_[cell + 1];
  for (uint64_t k = begin; k < end; ++k) atomic_add(&bucket_load_[bucket_[k]], -1);
  cells_[cell] = byte;
  locate(begin, end);
  for (uint64_t k = begin; k < end; ++k) atomic_add(&bucket_load_[bucket_[k]], +1);
}

// Every cell starts at (Φ=0, Δ=0). In each parallel round, the cells that
// lose a crowded bucket (losing_cells) choose again, all against the same
// loads (the other movers still counted where they are, so no mover counts on
// room another is leaving), then move together; two movers may still pick the
// same free room and overflow it, and the later-numbered loses next round. After
// kParallelRounds the rest choose and move one at a time, which is exact:
// a cell only enters buckets with room for it, so the pass ends with every
// bucket within M, or with a cell that fits nowhere (RESOURCE_EXHAUSTED).
absl::Status Builder::settle_cells(BuildStats* stats) {
  bucket_.resize(records_.size());
  for_each_bin([&](uint32_t b) { locate(cell_begin_[bin_first_cell(b)], cell_begin_[bin_first_cell(b + 1)]); });
  bucket_load_.assign(g_.num_buckets, 0);
  for_each_bin([&](uint32_t b) {
    for (uint64_t k = cell_begin_[bin_first_cell(b)], end = cell_begin_[bin_first_cell(b + 1)]; k < end; ++k) {
      atomic_add(&bucket_load_[bucket_[k]], +1);
    }
  });
  std::vector<uint8_t> moved(g_.num_cells, 0);
  for (uint32_t round = 0; round < kParallelRounds; ++round) {
    const std::vector<uint32_t> moving = losing_cells(moved);
    if (moving.empty()) break;
    ++stats->parallel_rounds;
    std::vector<uint8_t> next(moving.size());
    const size_t tasks = moving.size() < 1024 ? 1 : pool_.size() * 4;
    pool_.run(tasks, [&](size_t t) {
      for (size_t i = t * moving.size() / tasks, end = (t + 1) * moving.size() / tasks; i < end; ++i) {
        next[i] = choose_cell(moving[i]);
      }
    });
    std::fill(moved.begin(), moved.end(), 0);
    pool_.run(tasks, [&](size_t t) {
      for (size_t i = t * moving.size() / tasks, end = (t + 1) * moving.size() / tasks; i < end; ++i) {
        if (next[i] == cells_[moving[i]]) continue;
        move_cell(moving[i], next[i]);
        moved[moving[i]] = 1;
      }
    });
  }
  const std::vector<uint32_t> rest = overflowing_cells();
  stats->cells_serial = rest.size();
  for (uint32_t cell : rest) {
    const uint8_t byte = choose_cell(cell);
    if (byte != cells_[cell]) move_cell(cell, byte);
  }
  for (uint32_t cell : rest) {
    for (uint64_t k = cell_begin_[cell], end = cell_begin_[cell + 1]; k < end; ++k) {
      if (bucket_load_[bucket_[k]] > g_.slots_per_bucket) {
        return absl::ResourceExhaustedError(absl::StrCat("bulk build: cell ", cell, " with ", cell_size(cell),
                                                         " keys fits under no (mapping, offset) at ", g_.num_buckets,
                                                         " buckets; grow the table"));
      }
    }
  }
  for (uint8_t c : cells_) stats->cells_moved += c != 0;
  return absl::OkStatus();
}

// HashGraph's final pass: each key to the next free slot of its bucket, so a
// bucket's keys are contiguous from slot 0.
void Builder::place(TableImage* image) {
  const uint32_t M = g_.slots_per_bucket;
  image->geometry = g_;
  image->keys.assign(g_.num_slots(), gph::kEmptyKey);
  image->values.assign(g_.num_slots(), 0);
  std::fill(bucket_load_.begin(), bucket_load_.end(), 0);  // now the fill cursor of each bucket
  for_each_bin([&](uint32_t bin) {
    for (uint64_t i = cell_begin_[bin_first_cell(bin)], end = cell_begin_[bin_first_cell(bin + 1)]; i < end; ++i) {
      const Record& r = records_[i];
      const uint32_t b = bucket_[i];
      const uint32_t s = atomic_add(&bucket_load_[b], 1);
      if (s >= M) {
        // settle_cells() fitted every bucket; reaching here is a bug.
        std::fprintf(stderr, "gphkv: bulk build overfilled bucket %u\n", b);
        std::abort();
      }
      const uint64_t slot = static_cast<uint64_t>(b) * M + s;
      image->keys[slot] = r.key;
      image->values[slot] = r.value;
    }
  });
  image->cells = std::move(cells_);
  image->has_empty_key = has_empty_key_;
  image->empty_key_value = empty_key_value_;
}

}  // namespace

absl::StatusOr<TableImage> bulk_build_image(const gph::Geometry& geometry, absl::Span<const KeyValue> base,
                                            absl::Span<const WriteOp> burst, WorkerPool& pool, BuildStats* stats) {
  BuildStats local;
  Builder builder(geometry, pool);
  auto image = builder.run(base, burst, stats ? stats : &local);
  return image;
}

}  // namespace gphkv::engine::cpu
