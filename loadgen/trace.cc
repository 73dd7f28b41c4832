#include "loadgen/trace.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gphkv::loadgen {

absl::StatusOr<Trace> ReadTrace(std::istream& in) {
  Trace trace;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("trace line ", number, ": ", why, ": '", line, "'"));
    };
    uint32_t thread = 0;
    // A thread number far beyond any run's threads is a broken file, not a run.
    if (f.size() < 2 || !absl::SimpleAtoi(f[0], &thread) || thread >= (1u << 20)) return bad("want THREAD OP KEY...");
    TraceCall call;
    if (f[1] == "get") {
      call.type = OpType::kGet;
    } else if (f[1] == "put") {
      call.type = OpType::kPut;
    } else if (f[1] == "delete") {
      call.type = OpType::kDelete;
    } else {
      return bad("the operation is not get, put or delete");
    }
    call.keys.reserve(f.size() - 2);
    for (size_t i = 2; i < f.size(); ++i) {
      uint64_t key = 0;
      if (!absl::SimpleAtoi(f[i], &key)) return bad("a key is not a 64-bit number");
      call.keys.push_back(key);
    }
    if (trace.size() <= thread) trace.resize(thread + 1);
    trace[thread].push_back(std::move(call));
  }
  if (in.bad()) return absl::DataLossError("the trace could not be read");
  return trace;
}

uint64_t ReplayTrace(const Trace& trace, CacheModel* model) {
  uint64_t played = 0;
  for (size_t k = 0;; ++k) {
    bool any = false;
    for (const auto& calls : trace) {
      if (k >= calls.size()) continue;
      any = true;
      const TraceCall& c = calls[k];
      switch (c.type) {
        case OpType::kGet: model->Get(c.keys); break;
        case OpType::kPut: model->Put(c.keys); break;
        case OpType::kDelete: model->Delete(c.keys); break;
      }
      ++played;
    }
    if (!any) return played;
  }
}

}  // namespace gphkv::loadgen
