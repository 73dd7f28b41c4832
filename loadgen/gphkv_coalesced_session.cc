#include "loadgen/gphkv_coalesced_session.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "gphkv/client/sharded_client.h"
#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {
namespace {

class CoalescedSession final : public Session {
 public:
  CoalescedSession(std::unique_ptr<ShardedClient> client, size_t connections, const ValuePool* values)
      : connections_(connections), values_(values), client_(std::move(client)) {}

  ~CoalescedSession() override {
    // Answers still due arrive (or fail) before the client is gone.
    client_.reset();
  }

  size_t connections() const override { return connections_; }

  void Start(size_t /*connection*/, const Op& op, uint64_t tag) override {
    // The client picks the stream (by thread); the driver's connection
    // choice only spreads its depth, which the client does itself.
    switch (op.type) {
      case OpType::kGet:
        client_->GetAsync(op.keys, false, [this, tag](absl::StatusOr<GetResult> r) {
          OpResult res;
          if (r.ok()) {
            res.ok = true;
            for (size_t i = 0; i < r->size(); ++i) res.found += r->found(i);
            res.value_bytes = r->value_bytes();
          } else {
            res.error = GrpcStatusCodeName(static_cast<int>(r.status().code()));
          }
          deliver(tag, std::move(res));
        });
        break;
      case OpType::kPut: {
        std::vector<std::string_view> vals;
        vals.reserve(op.keys.size());
        uint64_t bytes = 0;
        for (size_t i = 0; i < op.keys.size(); ++i) {
          absl::string_view v = values_->ValueFor(op.keys[i], op.value_sizes[i]);
          vals.emplace_back(v.data(), v.size());
          bytes += v.size();
        }
        client_->PutAsync(op.keys, vals, [this, tag, bytes](absl::StatusOr<std::vector<bool>> r) {
          OpResult res;
          if (r.ok()) {
            res.ok = true;
            res.found = static_cast<uint32_t>(r->size());
            res.value_bytes = bytes;
          } else {
            res.error = GrpcStatusCodeName(static_cast<int>(r.status().code()));
          }
          deliver(tag, std::move(res));
        });
        break;
      }
      case OpType::kDelete:
        client_->DeleteAsync(op.keys, [this, tag](absl::StatusOr<std::vector<bool>> r) {
          OpResult res;
          if (r.ok()) {
            res.ok = true;
            for (bool d : *r) res.found += d;
          } else {
            res.error = GrpcStatusCodeName(static_cast<int>(r.status().code()));
          }
          deliver(tag, std::move(res));
        });
        break;
    }
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, deadline, [&] { return !ready_.empty(); });
      taking_.swap(ready_);
    }
    for (auto& [tag, r] : taking_) done(ctx, tag, r);
    const int n = static_cast<int>(taking_.size());
    taking_.clear();
    return n;
  }

 private:
  void deliver(uint64_t tag, OpResult r) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool wake = ready_.empty();
    ready_.emplace_back(tag, std::move(r));
    if (wake) cv_.notify_one();
  }

  const size_t connections_;
  const ValuePool* values_;
  std::unique_ptr<ShardedClient> client_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<uint64_t, OpResult>> ready_, taking_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> MakeGphkvCoalescedSession(const GphkvServers& servers, size_t connections,
                                                                   const ValuePool* values, int max_in_flight) {
  ClientOptions o;
  o.coalesce.enabled = true;
  o.coalesce.streams = static_cast<int>(connections);
  o.coalesce.max_in_flight = max_in_flight;
  o.max_message_bytes = -1;
  o.timeout = std::chrono::seconds(30);
  o.tls = servers.tls;
  auto client = ShardedClient::Connect(servers.list, o);
  if (!client.ok()) return client.status();
  return std::make_unique<CoalescedSession>(std::move(*client), connections, values);
}

}  // namespace gphkv::loadgen
