// libFuzzer target: the requests of the gphkv service below gRPC. Each input
// is a sequence of records (tests/fuzz/fuzz_records.h), each a GetRequest,
// PutRequest, DeleteRequest, PipelineRequest or BatchRequest, as raw wire
// bytes or built by a FuzzedDataProvider; each is parsed, validated as the
// front end validates, applied to a fresh CPU store when valid, and every
// answer and the store's contents are checked against a model
// (tests/fuzz/store_harness.h). A crash, a hang, a sanitizer report or a
// refused request that changed the store is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

#include "spdlog/spdlog.h"
#include "tests/fuzz/fuzz_records.h"
#include "tests/fuzz/store_harness.h"
#include "tests/fuzz/structured_requests.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::warn);  // rebuilds log at info: noise at 10^7 inputs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gphkv::fuzz;
  StoreHarness harness;
  for (const Record& r : split_records(data, size)) {
    if (r.structured) {
      FuzzedDataProvider fdp(reinterpret_cast<const uint8_t*>(r.payload.data()), r.payload.size());
      harness.handle(r.message, structured_request(r.message, fdp));
    } else {
      harness.handle(r.message, r.payload);
    }
  }
  return 0;
}
