// The router in front of the partitions: Intake places each key by a hash
// (KeyPlacement), queues a call whose keys lie on one partition as it is, and
// cuts any other call into a part per partition (SplitCall), whose answers
// merge back in request order. The batchers here are drained by hand and
// each part answered by a stand-in store, so every case is exact.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/call_split.h"
#include "server/intake.h"
#include "server/wire_calls.h"

namespace gphkv::server {
namespace {

constexpr uint32_t kPartitions = 4;

// The stand-in store's value of a key, and whether it holds it.
bool stored(uint64_t key) { return key % 3 != 0; }
std::string value_of(uint64_t key) { return absl::StrCat("value-of-", key, std::string(key % 7, '+')); }

struct Router {
  explicit Router(uint32_t partitions = kPartitions, BatcherOptions options = {},
                  uint64_t max_response_bytes = UINT64_MAX, const CallStageHistograms* stages = nullptr) {
    std::vector<Batcher*> raw;
    std::vector<std::string> names;
    for (uint32_t p = 0; p < partitions; ++p) {
      batchers.push_back(std::make_unique<Batcher>(options));
      raw.push_back(batchers.back().get());
      names.push_back(absl::StrCat("gpu ", p));
    }
    intake = std::make_unique<Intake>(raw, RequestLimits{}, names, max_response_bytes, stages);
  }

  // Every call queued on partition p, in order (closes its batcher).
  std::vector<Call> drain(uint32_t p) {
    batchers[p]->close();
    std::vector<Call> out;
    for (std::vector<Call> b = batchers[p]->next_batch(); !b.empty(); b = batchers[p]->next_batch()) {
      for (Call& c : b) out.push_back(std::move(c));
    }
    return out;
  }

  // Answers every queued call as the stand-in store would; partition
  // `failing` (if any) answers `failure` instead. Returns calls per partition.
  std::vector<size_t> answer_all(std::optional<uint32_t> failing = std::nullopt,
                                 absl::Status failure = absl::OkStatus()) {
    std::vector<size_t> counts;
    for (uint32_t p = 0; p < batchers.size(); ++p) {
      std::vector<Call> calls = drain(p);
      counts.push_back(calls.size());
      for (Call& c : calls) {
        for (uint64_t k : keys(c)) EXPECT_EQ(intake->placement().partition_of(k), p) << "key " << k;
        if (failing == p) {
          c.done(failure);
          continue;
        }
        fill(c, p);
        c.done(absl::OkStatus());
      }
    }
    return counts;
  }

  static std::vector<uint64_t> keys(const Call& c) {
    switch (c.kind()) {
      case OpKind::kGet:
      case OpKind::kPut:
      case OpKind::kDelete: return {c.keys().begin(), c.keys().end()};
      case OpKind::kShrink: return {};
    }
    return {};
  }

  static void fill(Call& c, uint32_t partition) {
    switch (c.kind()) {
      case OpKind::kGet:
        for (uint64_t k : c.get().keys) {
          c.get().response->add_found(stored(k));
          c.get().response->add_value_lengths(stored(k) ? value_of(k).size() : 0);
          if (stored(k)) c.get().response->mutable_values()->append(value_of(k));
        }
        break;
      case OpKind::kPut:
        for (uint64_t k : c.put().keys) c.put().response->add_created(k % 2 == 0);
        break;
      case OpKind::kDelete:
        for (uint64_t k : c.del().keys) c.del().response->add_deleted(k % 5 == 0);
        break;
      case OpKind::kShrink:
        c.shrink().response->set_started(partition == 1);
        c.shrink().response->set_keys(10 + partition);
        c.shrink().response->set_table_bytes(1000);
        c.shrink().response->set_new_table_bytes(partition == 1 ? 500 : 1000);
        break;
    }
  }

  std::vector<std::unique_ptr<Batcher>> batchers;
  std::unique_ptr<Intake> intake;
};

// Keys 1..n, which a hash spreads over every partition.
std::vector<uint64_t> many_keys(uint64_t n) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; k <= n; ++k) keys.push_back(k * 0x9e3779b97f4a7c15ull);
  return keys;
}

// The first `n` keys from `from` that land on partition p.
std::vector<uint64_t> keys_on(const KeyPlacement& placement, uint32_t p, size_t n, uint64_t from = 1) {
  std::vector<uint64_t> out;
  for (uint64_t k = from; out.size() < n; ++k) {
    if (placement.partition_of(k) == p) out.push_back(k);
  }
  return out;
}

struct Answer {
  std::optional<absl::Status> status;  // set once `done` ran
  int runs = 0;
};

// A call of `op` whose answers land in *answer.
template <class Op>
Call answered_call(Op op, Answer* answer) {
  Call c;
  c.op = op;
  c.done = [answer](absl::Status s) {
    answer->status = s;
    ++answer->runs;
  };
  return c;
}

Call get_call(v1::GetRequest* req, v1::GetResponse* resp, Answer* answer) {
  return answered_call(get_op(*req, resp).value(), answer);
}

TEST(KeyPlacement, SpreadsKeysWithinTenPercent) {
  for (uint32_t n : {2u, 3u, 4u, 8u}) {
    const KeyPlacement placement(n);
    std::vector<uint64_t> sequential(n, 0), shard(n, 0);
    const uint64_t keys = 200000;
    for (uint64_t k = 0; k < keys; ++k) ++sequential[placement.partition_of(k)];
    // The keys one shard of a sharded client holds are alike under the
    // client's fmix64 (here: its top bits are 0 mod 3): they still spread.
    uint64_t in_shard = 0;
    for (uint64_t k = 0; in_shard < keys; ++k) {
      uint64_t h = k;
      h ^= h >> 33;
      h *= 0xff51afd7ed558ccdull;
      h ^= h >> 33;
      h *= 0xc4ceb9fe1a85ec53ull;
      h ^= h >> 33;
      if ((h >> 40) % 3 != 0) continue;
      ++shard[placement.partition_of(k)];
      ++in_shard;
    }
    for (uint32_t p = 0; p < n; ++p) {
      EXPECT_NEAR(sequential[p], keys / n, keys / n / 10) << n << " partitions, partition " << p;
      EXPECT_NEAR(shard[p], keys / n, keys / n / 10) << n << " partitions, partition " << p;
    }
  }
  EXPECT_EQ(KeyPlacement(1).partition_of(12345), 0u);
}

TEST(Router, GetSplitsAndMergesInRequestOrder) {
  Router r;
  v1::GetRequest req;
  const std::vector<uint64_t> keys = many_keys(200);
  for (uint64_t k : keys) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(get_call(&req, &resp, &answer)).ok());
  EXPECT_EQ(answer.runs, 0) << "answered before its parts were";
  const std::vector<size_t> counts = r.answer_all();
  for (uint32_t p = 0; p < kPartitions; ++p) EXPECT_EQ(counts[p], 1u) << "one part on partition " << p;
  ASSERT_EQ(answer.runs, 1);
  ASSERT_TRUE(answer.status->ok()) << *answer.status;
  ASSERT_EQ(resp.found_size(), 200);
  ASSERT_EQ(resp.value_lengths_size(), 200);
  std::string values;
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(resp.found(i), stored(keys[i])) << i;
    EXPECT_EQ(resp.value_lengths(i), stored(keys[i]) ? value_of(keys[i]).size() : 0) << i;
    if (stored(keys[i])) values += value_of(keys[i]);
  }
  EXPECT_EQ(resp.values(), values);
}

// A packed get of several sessions (GetOp::key_sessions, the memcached
// port's): each part carries its keys' sessions, key for key, so every
// partition orders each key with its own session's calls.
TEST(Router, APackedGetsPartsKeepEachKeysSession) {
  Router r;
  v1::GetRequest req;
  const std::vector<uint64_t> keys = many_keys(200);
  std::vector<uint64_t> sessions;
  for (size_t i = 0; i < keys.size(); ++i) {
    req.add_keys(keys[i]);
    sessions.push_back(1 + i % 7);
  }
  v1::GetResponse resp;
  Answer answer;
  Call call = get_call(&req, &resp, &answer);
  std::get<GetOp>(call.op).key_sessions = sessions;
  ASSERT_TRUE(r.intake->submit(std::move(call)).ok());
  std::map<uint64_t, uint64_t> session_of;
  for (size_t i = 0; i < keys.size(); ++i) session_of[keys[i]] = sessions[i];
  size_t seen = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    for (Call& c : r.drain(p)) {
      const GetOp& get = c.get();
      ASSERT_EQ(get.key_sessions.size(), get.keys.size()) << "partition " << p;
      for (size_t j = 0; j < get.keys.size(); ++j) EXPECT_EQ(get.key_sessions[j], session_of[get.keys[j]]);
      seen += get.keys.size();
      Router::fill(c, p);
      c.done(absl::OkStatus());
    }
  }
  EXPECT_EQ(seen, keys.size());
  ASSERT_EQ(answer.runs, 1);
  EXPECT_TRUE(answer.status->ok()) << *answer.status;
}

TEST(Router, OnePartitionCallIsQueuedAsItIs) {
  Router r;
  const std::vector<uint64_t> keys = keys_on(r.intake->placement(), 2, 50);
  v1::GetRequest req;
  for (uint64_t k : keys) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(get_call(&req, &resp, &answer)).ok());
  for (uint32_t p = 0; p < kPartitions; ++p) {
    std::vector<Call> calls = r.drain(p);
    if (p != 2) {
      EXPECT_TRUE(calls.empty()) << "partition " << p;
      continue;
    }
    ASSERT_EQ(calls.size(), 1u);
    // The fast path: the caller's own request and response, no copy.
    EXPECT_EQ(calls[0].get().keys.data(), req.keys().data());
    EXPECT_EQ(calls[0].get().response, &resp);
    calls[0].done(absl::OkStatus());
  }
  EXPECT_EQ(answer.runs, 1);
}

TEST(Router, OnePartitionServerNeverSplits) {
  Router r(1);
  v1::GetRequest req;
  for (uint64_t k : many_keys(100)) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(get_call(&req, &resp, &answer)).ok());
  std::vector<Call> calls = r.drain(0);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].get().keys.data(), req.keys().data());
}

TEST(Router, PutKeepsRepeatedKeysInOrderAndValuesWithTheirKeys) {
  Router r;
  const KeyPlacement& placement = r.intake->placement();
  // Key a twice (its last value wins on its partition), b on another partition between them.
  const uint64_t a = keys_on(placement, 0, 1)[0];
  const uint64_t b = keys_on(placement, 3, 1)[0];
  v1::PutRequest req;
  const std::vector<std::pair<uint64_t, std::string>> writes = {{a, "first"}, {b, "bee"}, {a, "second!"}};
  for (const auto& [k, v] : writes) {
    req.add_keys(k);
    req.add_value_lengths(static_cast<uint32_t>(v.size()));
    req.mutable_values()->append(v);
  }
  v1::PutResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(answered_call(put_op(req, &resp).value(), &answer)).ok());
  std::vector<Call> p0 = r.drain(0), p3 = r.drain(3);
  ASSERT_EQ(p0.size(), 1u);
  ASSERT_EQ(p3.size(), 1u);
  const PutOp& part0 = p0[0].put();
  ASSERT_EQ(part0.keys.size(), 2u);
  EXPECT_EQ(part0.keys[0], a);
  EXPECT_EQ(part0.keys[1], a);
  EXPECT_EQ(part0.value_lengths[0], 5u);
  EXPECT_EQ(part0.value_lengths[1], 7u);
  EXPECT_EQ(part0.values, "firstsecond!");
  EXPECT_EQ(p3[0].put().values, "bee");
  p0[0].put().response->add_created(true);
  p0[0].put().response->add_created(false);
  p3[0].put().response->add_created(true);
  p3[0].done(absl::OkStatus());
  EXPECT_EQ(answer.runs, 0);
  p0[0].done(absl::OkStatus());
  ASSERT_EQ(answer.runs, 1);
  ASSERT_TRUE(answer.status->ok());
  ASSERT_EQ(resp.created_size(), 3);
  EXPECT_TRUE(resp.created(0));
  EXPECT_TRUE(resp.created(1));
  EXPECT_FALSE(resp.created(2));
}

TEST(Router, DeleteMerges) {
  Router r;
  v1::DeleteRequest req;
  const std::vector<uint64_t> keys = many_keys(64);
  for (uint64_t k : keys) req.add_keys(k);
  v1::DeleteResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(answered_call(delete_op(req, &resp).value(), &answer)).ok());
  r.answer_all();
  ASSERT_EQ(answer.runs, 1);
  ASSERT_EQ(resp.deleted_size(), 64);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(resp.deleted(i), keys[i] % 5 == 0) << i;
}

TEST(Router, EmptyCallIsRefusedAndQueuesNothing) {
  Router r;
  v1::GetRequest req;
  v1::GetResponse resp;
  Answer answer;
  const absl::Status s = r.intake->submit(get_call(&req, &resp, &answer));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (uint32_t p = 0; p < kPartitions; ++p) EXPECT_TRUE(r.drain(p).empty());
  EXPECT_EQ(answer.runs, 0);
}

TEST(Router, AFailedPartFailsTheCallNamingItsPartitionAndTheAppliedOnes) {
  Router r;
  v1::PutRequest req;
  for (uint64_t k : many_keys(100)) {
    req.add_keys(k);
    req.add_value_lengths(1);
    req.mutable_values()->append("x");
  }
  v1::PutResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(answered_call(put_op(req, &resp).value(), &answer)).ok());
  r.answer_all(2, absl::ResourceExhaustedError("put refused: memory"));
  ASSERT_EQ(answer.runs, 1);
  EXPECT_EQ(answer.status->code(), absl::StatusCode::kResourceExhausted);
  const std::string message(answer.status->message());
  EXPECT_NE(message.find("gpu 2: put refused: memory"), std::string::npos) << message;
  EXPECT_NE(message.find("gpu 0, gpu 1, gpu 3 were applied"), std::string::npos) << message;
}

TEST(Router, CallRefusedByEveryQueueIsRefusedAtOnce) {
  Router r;
  for (auto& b : r.batchers) b->close();  // every queue refuses (UNAVAILABLE)
  v1::GetRequest req;
  for (uint64_t k : many_keys(100)) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  const absl::Status s = r.intake->submit(get_call(&req, &resp, &answer));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(answer.runs, 0) << "a refused call's done must not run";
}

TEST(Router, PartRefusedByOneQueueFailsTheCallOnceTheOthersAnswered) {
  BatcherOptions small;
  small.max_queue_keys = 40;
  Router r(kPartitions, small);
  const KeyPlacement& placement = r.intake->placement();
  // Fill partition 1's queue, then send a call with keys on 0 and 1.
  v1::GetRequest filler;
  for (uint64_t k : keys_on(placement, 1, 40, 1000)) filler.add_keys(k);
  v1::GetResponse filler_resp;
  Answer filler_answer;
  ASSERT_TRUE(r.intake->submit(get_call(&filler, &filler_resp, &filler_answer)).ok());
  v1::GetRequest req;
  for (uint64_t k : keys_on(placement, 0, 3)) req.add_keys(k);
  for (uint64_t k : keys_on(placement, 1, 3)) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(get_call(&req, &resp, &answer)).ok()) << "one part was queued: answered by done";
  EXPECT_EQ(answer.runs, 0);
  r.answer_all();
  ASSERT_EQ(answer.runs, 1);
  EXPECT_EQ(answer.status->code(), absl::StatusCode::kResourceExhausted) << *answer.status;
  EXPECT_NE(answer.status->message().find("gpu 1: "), absl::string_view::npos) << *answer.status;
  EXPECT_EQ(filler_answer.runs, 1);
}

TEST(Router, MergedGetOverTheResponseLimitIsRefused) {
  Router r(kPartitions, {}, /*max_response_bytes=*/100);
  v1::GetRequest req;
  for (uint64_t k : many_keys(40)) req.add_keys(k);  // ~27 values of ~25 bytes
  v1::GetResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(get_call(&req, &resp, &answer)).ok());
  r.answer_all();
  ASSERT_EQ(answer.runs, 1);
  EXPECT_EQ(answer.status->code(), absl::StatusCode::kResourceExhausted) << *answer.status;
}

TEST(Router, ShrinkGoesToEveryPartitionAndSums) {
  Router r;
  v1::ShrinkResponse resp;
  Answer answer;
  ASSERT_TRUE(r.intake->submit(answered_call(ShrinkOp{&resp}, &answer)).ok());
  const std::vector<size_t> counts = r.answer_all();
  for (size_t n : counts) EXPECT_EQ(n, 1u);
  ASSERT_EQ(answer.runs, 1);
  EXPECT_TRUE(resp.started());
  EXPECT_EQ(resp.keys(), 10u + 11 + 12 + 13);
  EXPECT_EQ(resp.table_bytes(), 4000u);
  EXPECT_EQ(resp.new_table_bytes(), 3500u);
}

TEST(Router, MessageOperationsKeepTheirOrderOnEachPartition) {
  Router r;
  // put k=v1, get k, put k=v2 over keys on all partitions: on each partition
  // the parts must come in that order.
  const std::vector<uint64_t> keys = many_keys(32);
  v1::PutRequest put1, put2;
  v1::GetRequest get;
  for (uint64_t k : keys) {
    for (v1::PutRequest* p : {&put1, &put2}) {
      p->add_keys(k);
      p->add_value_lengths(1);
      p->mutable_values()->append(p == &put1 ? "1" : "2");
    }
    get.add_keys(k);
  }
  v1::PutResponse put1_resp, put2_resp;
  v1::GetResponse get_resp;
  std::vector<Answer> answers(4);
  std::vector<Call> calls(4);
  calls[0].op = put_op(put1, &put1_resp).value();
  calls[1].op = get_op(get, &get_resp).value();
  calls[2].op = put_op(put2, &put2_resp).value();
  v1::GetRequest empty;  // refused alone; the others still go
  v1::GetResponse empty_resp;
  calls[3].op = get_op(empty, &empty_resp).value();
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].done = [&answers, i](absl::Status s) {
      answers[i].status = s;
      ++answers[i].runs;
    };
  }
  std::vector<absl::Status> statuses(calls.size());
  r.intake->submit_all(absl::MakeSpan(calls), absl::MakeSpan(statuses));
  EXPECT_TRUE(statuses[0].ok() && statuses[1].ok() && statuses[2].ok());
  EXPECT_EQ(statuses[3].code(), absl::StatusCode::kInvalidArgument);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    std::vector<Call> queued = r.drain(p);
    ASSERT_EQ(queued.size(), 3u) << "partition " << p;
    EXPECT_EQ(queued[0].kind(), OpKind::kPut);
    EXPECT_EQ(queued[0].put().values.substr(0, 1), "1");
    EXPECT_EQ(queued[1].kind(), OpKind::kGet);
    EXPECT_EQ(queued[2].kind(), OpKind::kPut);
    EXPECT_EQ(queued[2].put().values.substr(0, 1), "2");
    for (Call& c : queued) {
      Router::fill(c, p);
      c.done(absl::OkStatus());
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answers[i].runs, 1) << i;
    EXPECT_TRUE(answers[i].status.has_value() && answers[i].status->ok()) << i;
  }
  EXPECT_EQ(answers[3].runs, 0);
  EXPECT_EQ(get_resp.found_size(), 32);
}

}  // namespace
}  // namespace gphkv::server

namespace gphkv::server {
namespace {

// The call stage histograms, as the server's metrics hold them.
struct StageHistograms {
  StageHistograms() {
    auto& family = prometheus::BuildHistogram().Name("stages").Register(registry);
    for (int st = 0; st < kNumCallStages; ++st) {
      histograms[st] = &family.Add({{"stage", call_stage_name(st)}}, call_stage_bounds());
    }
  }
  uint64_t count(CallStage st) const { return histograms[st]->Collect().histogram.sample_count; }
  double sum(CallStage st) const { return histograms[st]->Collect().histogram.sample_sum; }

  prometheus::Registry registry;
  CallStageHistograms histograms{};
};

// A split call observes its wait for the last part and its merge once each,
// when it is answered; a call queued whole observes neither.
TEST(Router, SplitCallObservesItsWaitForTheLastPartAndItsMerge) {
  StageHistograms stages;
  Router r(kPartitions, {}, UINT64_MAX, &stages.histograms);
  v1::GetRequest split_req, whole_req;
  for (uint64_t k : many_keys(64)) split_req.add_keys(k);
  for (uint64_t k : keys_on(r.intake->placement(), 1, 8)) whole_req.add_keys(k);
  v1::GetResponse split_resp, whole_resp;
  Answer split_answer, whole_answer;
  ASSERT_TRUE(r.intake->submit(get_call(&split_req, &split_resp, &split_answer)).ok());
  ASSERT_TRUE(r.intake->submit(get_call(&whole_req, &whole_resp, &whole_answer)).ok());
  EXPECT_EQ(stages.count(kCallSplitWait), 0u) << "observed before the call was answered";
  // Partition 0's parts answered, a pause, then the others: the wait is the pause at least.
  std::vector<std::vector<Call>> queued;
  for (uint32_t p = 0; p < kPartitions; ++p) queued.push_back(r.drain(p));
  for (uint32_t p = 0; p < kPartitions; ++p) {
    for (Call& c : queued[p]) {
      Router::fill(c, p);
      c.done(absl::OkStatus());
    }
    if (p == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(split_answer.runs, 1);
  ASSERT_EQ(whole_answer.runs, 1);
  ASSERT_TRUE(split_answer.status->ok()) << *split_answer.status;
  EXPECT_EQ(stages.count(kCallSplitWait), 1u);
  EXPECT_EQ(stages.count(kCallMerge), 1u);
  EXPECT_GE(stages.sum(kCallSplitWait), 0.02);
  EXPECT_LT(stages.sum(kCallSplitWait), 10.0);
  EXPECT_EQ(split_resp.found_size(), 64);
}

// A split call whose every part was refused is refused whole: nothing observed.
TEST(Router, RefusedSplitCallObservesNothing) {
  StageHistograms stages;
  Router r(kPartitions, {}, UINT64_MAX, &stages.histograms);
  for (auto& b : r.batchers) b->close();  // every queue refuses
  v1::GetRequest req;
  for (uint64_t k : many_keys(64)) req.add_keys(k);
  v1::GetResponse resp;
  Answer answer;
  EXPECT_FALSE(r.intake->submit(get_call(&req, &resp, &answer)).ok());
  EXPECT_EQ(answer.runs, 0);
  EXPECT_EQ(stages.count(kCallSplitWait), 0u);
  EXPECT_EQ(stages.count(kCallMerge), 0u);
}

}  // namespace
}  // namespace gphkv::server
