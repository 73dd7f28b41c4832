// A CPU-backend store behind the server's request validation, checked
// against a model (std::unordered_map) after every request: what the request
// fuzzer drives. Any disagreement aborts (libFuzzer reports it as a crash
// with the input that caused it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"
#include "server/request_validation.h"
#include "server/store.h"
#include "tests/fuzz/fuzz_records.h"

namespace gphkv::fuzz {

class StoreHarness {
 public:
  StoreHarness();

  // Parses `bytes` as `message`, validates it as the front end does, applies
  // what is valid and checks every answer against the model; a refused
  // request must leave the store as the model says.
  void handle(Message message, std::string_view bytes);
  // Every key of the model reads back with its value; the store holds no
  // other key.
  void check_contents();

 private:
  using Run = std::vector<server::Operation>;
  // Validates op as the front end does: a refused one is checked to have
  // changed nothing; a valid one joins the last run if of the same kind
  // (the executor applies consecutive operations of one kind together).
  void admit(const server::Operation& op, std::vector<Run>* runs);
  void apply(const Run& run);
  void expect_get(const server::GetOp& get, const v1::GetResponse& out) const;

  std::unique_ptr<server::Store> store_;
  std::unordered_map<uint64_t, std::string> model_;
  server::RequestLimits limits_;
};

}  // namespace gphkv::fuzz
