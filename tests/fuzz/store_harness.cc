#include "tests/fuzz/store_harness.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "server/wire_calls.h"
#include "tests/fuzz/structured_requests.h"
#include "tests/server/call_messages.h"

namespace gphkv::fuzz {
namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "request fuzzer: %s\n", what.c_str());
  std::abort();
}
#define FUZZ_CHECK(cond, ...) \
  if (!(cond)) fail(absl::StrCat("check failed: " #cond ": ", __VA_ARGS__))

// The one place the fuzzer builds a server::Call, whose shape is the front
// end's: an operation with no deadline and no callback, applied at once.
server::Call as_call(const server::Operation& op) {
  server::Call c;
  c.op = op;
  return c;
}

// The Intake's check (packed gets were checked whole, validate_packed_gets).
absl::Status validate_op(const server::Operation& op, const server::RequestLimits& limits) {
  return server::validate(as_call(op), limits);
}

// The operation of a request as the front ends build it; nullopt when they
// refuse it first (no get, put or delete; a get's value_mode not a ValueMode).
template <class Req, class Resp>
std::optional<server::Operation> operation_of(const Req& req, Resp* response) {
  absl::StatusOr<server::Operation> op = server::operation(req, response);
  if (!op.ok()) return std::nullopt;
  return *op;
}
template <class M, class R>
std::optional<server::Operation> operation_of_any(const M& m, R* result) {
  if (m.has_get()) return operation_of(m.get(), result->mutable_get());
  if (m.has_put()) return operation_of(m.put(), result->mutable_put());
  if (m.has_delete_()) return operation_of(m.delete_(), result->mutable_delete_());
  return std::nullopt;
}

}  // namespace

StoreHarness::StoreHarness() {
  server::StoreOptions o;
  o.initial_capacity = 64;
  // Two chunks of values: structured puts (up to 64 values of 4 KiB) meet
  // it, and a refusal must change nothing.
  o.memory_limit_bytes = uint64_t{512} << 10;
  o.max_value_bytes = kMaxValueBytes;
  o.table.cpu_threads = 1;
  auto store = server::Store::create(o);
  if (!store.ok()) fail(store.status().ToString());
  store_ = std::move(*store);
  limits_.max_call_keys = kMaxCallKeys;
  limits_.max_value_bytes = kMaxValueBytes;
}

void StoreHarness::handle(Message message, std::string_view bytes) {
  std::vector<Run> runs;
  // Requests and responses live until the runs are applied.
  server::testing::CallMessages unary;
  v1::PipelineRequest pipe;
  v1::PipelineResponse pipe_out;
  v1::BatchRequest batch;
  v1::BatchResponse batch_out;
  bool parsed = false;
  switch (message) {
    case Message::kGet:
      if ((parsed = unary.get.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        if (auto op = operation_of(unary.get, &unary.get_out)) admit(*op, &runs);
      }
      break;
    case Message::kPut:
      if ((parsed = unary.put.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        if (auto op = operation_of(unary.put, &unary.put_out)) admit(*op, &runs);
      }
      break;
    case Message::kDelete:
      if ((parsed = unary.del.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        if (auto op = operation_of(unary.del, &unary.del_out)) admit(*op, &runs);
      }
      break;
    case Message::kPipeline:
      if ((parsed = pipe.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        if (auto op = operation_of_any(pipe, &pipe_out)) admit(*op, &runs);
      }
      break;
    case Message::kBatch:
      if ((parsed = batch.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        batch_out.mutable_results()->Reserve(batch.ops_size());
        for (int i = 0; i < batch.ops_size(); ++i) batch_out.add_results();
        for (int i = 0; i < batch.ops_size(); ++i) {
          if (auto op = operation_of_any(batch.ops(i), batch_out.mutable_results(i))) admit(*op, &runs);
        }
        // The packed gets go last, as one call, as the Batches stream queues them.
        const bool packed = batch.get_counts_size() > 0 || batch.gets().keys_size() > 0;
        if (packed && server::validate_packed_gets(batch, limits_, kMaxQueueKeys).ok()) {
          // The harness's model has uint64 keys: packed gets of byte keys are refused here.
          auto gets = server::get_op(batch.gets(), batch_out.mutable_gets()->mutable_get(), /*packed=*/true);
          if (gets.ok()) admit(*gets, &runs);
        }
      }
      break;
  }
  (void)parsed;  // a message that does not parse is refused whole: nothing to apply
  for (const Run& run : runs) apply(run);
  FUZZ_CHECK(store_->table_bytes() + store_->value_heap_bytes() <= store_->memory_limit_bytes(), "over --memory");
  check_contents();
}

void StoreHarness::admit(const server::Operation& op, std::vector<Run>* runs) {
  if (!validate_op(op, limits_).ok()) return;  // refused: the store never sees it (checked after the message)
  if (runs->empty() || runs->back().front().index() != op.index()) runs->emplace_back();
  runs->back().push_back(op);
}

void StoreHarness::apply(const Run& run) {
  std::vector<server::Call> calls;
  for (const server::Operation& op : run) calls.push_back(as_call(op));
  std::vector<server::Call*> ptrs;
  for (server::Call& c : calls) ptrs.push_back(&c);
  std::vector<absl::Status> statuses;
  switch (calls.front().kind()) {
    case server::OpKind::kGet: store_->apply_gets(ptrs, &statuses); break;
    case server::OpKind::kPut: store_->apply_puts(ptrs, &statuses); break;
    case server::OpKind::kDelete: store_->apply_deletes(ptrs, &statuses); break;
    case server::OpKind::kShrink: fail("a shrink in a run");
  }
  FUZZ_CHECK(statuses.size() == calls.size(), statuses.size());
  // The model takes the calls in order, as the store must have.
  for (size_t i = 0; i < calls.size(); ++i) {
    const server::Call& c = calls[i];
    const absl::Status& st = statuses[i];
    switch (c.kind()) {
      case server::OpKind::kGet:
        FUZZ_CHECK(st.ok(), st.ToString());
        expect_get(c.get(), *c.get().response);
        break;
      case server::OpKind::kPut: {
        const server::PutOp& r = c.put();
        if (!st.ok()) {
          // Over --memory: refused whole (check_contents confirms nothing changed).
          FUZZ_CHECK(st.code() == absl::StatusCode::kResourceExhausted, st.ToString());
          break;
        }
        const v1::PutResponse& out = *c.put().response;
        const int n = static_cast<int>(r.keys.size());
        FUZZ_CHECK(out.created_size() == n, out.created_size(), " created for ", n);
        for (int k = 0; k < n; ++k) {
          FUZZ_CHECK(out.created(k) == (model_.count(r.keys[k]) == 0), "key ", r.keys[k]);
        }
        size_t off = 0;
        for (int k = 0; k < n; ++k) {
          model_[r.keys[k]] = std::string(r.values.substr(off, r.value_lengths[k]));
          off += r.value_lengths[k];
        }
        break;
      }
      case server::OpKind::kDelete: {
        FUZZ_CHECK(st.ok(), st.ToString());
        const server::KeySpan keys = c.del().keys;
        const v1::DeleteResponse& out = *c.del().response;
        FUZZ_CHECK(out.deleted_size() == static_cast<int>(keys.size()), out.deleted_size());
        // A key repeated in one call is deleted by its first occurrence.
        for (size_t k = 0; k < keys.size(); ++k)
          FUZZ_CHECK(out.deleted(static_cast<int>(k)) == (model_.erase(keys[k]) == 1), "key ", keys[k]);
        break;
      }
      case server::OpKind::kShrink: break;
    }
  }
}

void StoreHarness::expect_get(const server::GetOp& get, const v1::GetResponse& out) const {
  const bool values = !get.exists_only;
  const int n = static_cast<int>(get.keys.size());
  FUZZ_CHECK(out.found_size() == n, out.found_size());
  FUZZ_CHECK(out.value_lengths_size() == n, out.value_lengths_size());
  size_t off = 0;
  for (int k = 0; k < n; ++k) {
    const uint64_t key = get.keys[k];
    auto it = model_.find(key);
    FUZZ_CHECK(out.found(k) == (it != model_.end()), "key ", key);
    const uint32_t len = out.value_lengths(k);
    if (it == model_.end() || !values) {
      FUZZ_CHECK(len == 0, "key ", key, " length ", len);
      continue;
    }
    FUZZ_CHECK(len == it->second.size(), "key ", key);
    FUZZ_CHECK(out.values().compare(off, len, it->second) == 0, "key ", key, " has other bytes");
    off += len;
  }
  FUZZ_CHECK(off == out.values().size(), "values hold ", out.values().size(), " bytes, lengths say ", off);
}

void StoreHarness::check_contents() {
  FUZZ_CHECK(store_->keys() == model_.size(), store_->keys(), " keys stored, the model has ", model_.size());
  v1::GetRequest r;
  for (const auto& kv : model_) r.add_keys(kv.first);
  if (r.keys_size() == 0) return;
  v1::GetResponse out;
  server::Call c = as_call(*server::get_op(r, &out));
  server::Call* ptr = &c;
  std::vector<absl::Status> statuses;
  store_->apply_gets({&ptr, 1}, &statuses);
  FUZZ_CHECK(statuses[0].ok(), statuses[0].ToString());
  expect_get(c.get(), out);
}

}  // namespace gphkv::fuzz
