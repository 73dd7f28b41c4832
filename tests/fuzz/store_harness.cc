#include "tests/fuzz/store_harness.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
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

absl::Status validate_op(const server::Operation& op, const server::RequestLimits& limits) {
  // Packed gets were checked whole (validate_packed_gets), as the Intake skips them.
  if (auto* g = std::get_if<server::GetOp>(&op))
    return g->packed ? absl::OkStatus() : server::validate(*g->request, limits);
  if (auto* p = std::get_if<server::PutOp>(&op)) return server::validate(*p->request, limits);
  if (auto* d = std::get_if<server::DeleteOp>(&op)) return server::validate(*d->request, limits);
  return absl::InvalidArgumentError("not a get, put or delete");
}

// The operation of a PipelineRequest or a BatchRequest's Operation; nullopt
// when it carries none (the front end refuses those).
template <class M, class R>
std::optional<server::Operation> operation_of(const M& m, R* result) {
  if (m.has_get()) return server::GetOp{&m.get(), result->mutable_get()};
  if (m.has_put()) return server::PutOp{&m.put(), result->mutable_put()};
  if (m.has_delete_()) return server::DeleteOp{&m.delete_(), result->mutable_delete_()};
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
        admit(server::GetOp{&unary.get, &unary.get_out}, &runs);
      }
      break;
    case Message::kPut:
      if ((parsed = unary.put.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        admit(server::PutOp{&unary.put, &unary.put_out}, &runs);
      }
      break;
    case Message::kDelete:
      if ((parsed = unary.del.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        admit(server::DeleteOp{&unary.del, &unary.del_out}, &runs);
      }
      break;
    case Message::kPipeline:
      if ((parsed = pipe.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        if (auto op = operation_of(pipe, &pipe_out)) admit(*op, &runs);
      }
      break;
    case Message::kBatch:
      if ((parsed = batch.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))) {
        batch_out.mutable_results()->Reserve(batch.ops_size());
        for (int i = 0; i < batch.ops_size(); ++i) batch_out.add_results();
        for (int i = 0; i < batch.ops_size(); ++i) {
          if (auto op = operation_of(batch.ops(i), batch_out.mutable_results(i))) admit(*op, &runs);
        }
        // The packed gets go last, as one call, as the Batches stream queues them.
        const bool packed = batch.get_counts_size() > 0 || batch.gets().keys_size() > 0;
        if (packed && server::validate_packed_gets(batch, limits_, kMaxQueueKeys).ok()) {
          admit(server::GetOp{&batch.gets(), batch_out.mutable_gets()->mutable_get(), /*packed=*/true}, &runs);
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
        expect_get(*c.get().request, *c.get().response);
        break;
      case server::OpKind::kPut: {
        const v1::PutRequest& r = *c.put().request;
        if (!st.ok()) {
          // Over --memory: refused whole (check_contents confirms nothing changed).
          FUZZ_CHECK(st.code() == absl::StatusCode::kResourceExhausted, st.ToString());
          break;
        }
        const v1::PutResponse& out = *c.put().response;
        FUZZ_CHECK(out.created_size() == r.keys_size(), out.created_size(), " created for ", r.keys_size());
        for (int k = 0; k < r.keys_size(); ++k) {
          FUZZ_CHECK(out.created(k) == (model_.count(r.keys(k)) == 0), "key ", r.keys(k));
        }
        size_t off = 0;
        for (int k = 0; k < r.keys_size(); ++k) {
          model_[r.keys(k)] = r.values().substr(off, r.value_lengths(k));
          off += r.value_lengths(k);
        }
        break;
      }
      case server::OpKind::kDelete: {
        FUZZ_CHECK(st.ok(), st.ToString());
        const v1::DeleteRequest& r = *c.del().request;
        const v1::DeleteResponse& out = *c.del().response;
        FUZZ_CHECK(out.deleted_size() == r.keys_size(), out.deleted_size());
        // A key repeated in one call is deleted by its first occurrence.
        for (int k = 0; k < r.keys_size(); ++k)
          FUZZ_CHECK(out.deleted(k) == (model_.erase(r.keys(k)) == 1), "key ", r.keys(k));
        break;
      }
      case server::OpKind::kShrink: break;
    }
  }
}

void StoreHarness::expect_get(const v1::GetRequest& r, const v1::GetResponse& out) const {
  const bool values = r.value_mode() != v1::VALUE_MODE_EXISTS;
  FUZZ_CHECK(out.found_size() == r.keys_size(), out.found_size());
  FUZZ_CHECK(out.value_lengths_size() == r.keys_size(), out.value_lengths_size());
  size_t off = 0;
  for (int k = 0; k < r.keys_size(); ++k) {
    auto it = model_.find(r.keys(k));
    FUZZ_CHECK(out.found(k) == (it != model_.end()), "key ", r.keys(k));
    const uint32_t len = out.value_lengths(k);
    if (it == model_.end() || !values) {
      FUZZ_CHECK(len == 0, "key ", r.keys(k), " length ", len);
      continue;
    }
    FUZZ_CHECK(len == it->second.size(), "key ", r.keys(k));
    FUZZ_CHECK(out.values().compare(off, len, it->second) == 0, "key ", r.keys(k), " has other bytes");
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
  server::Call c = as_call(server::GetOp{&r, &out});
  server::Call* ptr = &c;
  std::vector<absl::Status> statuses;
  store_->apply_gets({&ptr, 1}, &statuses);
  FUZZ_CHECK(statuses[0].ok(), statuses[0].ToString());
  expect_get(r, out);
}

}  // namespace gphkv::fuzz
