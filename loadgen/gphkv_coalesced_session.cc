#include "loadgen/gphkv_coalesced_session.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {
namespace {

// Where answers wait for the session's thread. The client's callbacks hold
// it, not the session: with a shared client, answers the drain gave up on
// may still arrive after the session is gone.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<uint64_t, OpResult>> ready;

  void Deliver(uint64_t tag, OpResult r) {
    std::lock_guard<std::mutex> lock(mu);
    const bool wake = ready.empty();
    ready.emplace_back(tag, std::move(r));
    if (wake) cv.notify_one();
  }
};

OpResult Failed(const absl::Status& s) {
  OpResult res;
  res.error = GrpcStatusCodeName(static_cast<int>(s.code()));
  return res;
}

class CoalescedSession final : public Session {
 public:
  CoalescedSession(std::shared_ptr<ShardedClient> client, size_t connections, const ValuePool* values,
                   bool inspect_reads, std::optional<ByteKeyNames> byte_keys)
      : byte_keys_(byte_keys),
        connections_(connections),
        values_(values),
        inspect_(inspect_reads ? values : nullptr),
        client_(std::move(client)),
        inbox_(std::make_shared<Inbox>()) {}

  ~CoalescedSession() override {
    // A client of its own answers (or fails) what is still due before it is
    // gone; a shared one answers into the inbox, which outlives the session.
    client_.reset();
  }

  size_t connections() const override { return connections_; }

  void Start(size_t /*connection*/, const Op& op, uint64_t tag) override {
    // The client picks the stream (by thread); the driver's connection
    // choice only spreads its depth, which the client does itself.
    std::shared_ptr<Inbox> inbox = inbox_;
    switch (op.type) {
      case OpType::kGet: {
        // The keys are copied for the check: an answer may come after the
        // drain gave up on it, when the driver's op is gone.
        std::vector<uint64_t> keys;
        if (inspect_ != nullptr) keys = op.keys;
        auto answered = [inbox, tag, keys = std::move(keys), inspect = inspect_](absl::StatusOr<GetResult> r) {
          if (!r.ok()) return inbox->Deliver(tag, Failed(r.status()));
          OpResult res;
          res.ok = true;
          for (size_t i = 0; i < r->size(); ++i) {
            if (!r->found(i)) continue;
            ++res.found;
            if (inspect != nullptr && i < keys.size()) {
              const std::string_view v = r->value(i);
              res.seen.push_back(inspect->Inspect(keys[i], absl::string_view(v.data(), v.size())));
            }
          }
          res.value_bytes = r->value_bytes();
          inbox->Deliver(tag, std::move(res));
        };
        if (byte_keys_) {
          client_->GetAsync(NameKeys(op), false, std::move(answered));
        } else {
          client_->GetAsync(op.keys, false, std::move(answered));
        }
        break;
      }
      case OpType::kPut: {
        // PutAsync copies the values into its message before it returns.
        put_bytes_.clear();
        for (size_t i = 0; i < op.keys.size(); ++i) {
          values_->AppendValue(op.keys[i], op.value_sizes[i], op.version, &put_bytes_);
        }
        put_views_.clear();
        size_t at = 0;
        for (uint32_t size : op.value_sizes) {
          put_views_.emplace_back(put_bytes_.data() + at, size);
          at += size;
        }
        auto answered = [inbox, tag, bytes = at](absl::StatusOr<std::vector<bool>> r) {
          if (!r.ok()) return inbox->Deliver(tag, Failed(r.status()));
          OpResult res;
          res.ok = true;
          res.found = static_cast<uint32_t>(r->size());
          res.value_bytes = bytes;
          inbox->Deliver(tag, std::move(res));
        };
        if (byte_keys_) {
          client_->PutAsync(NameKeys(op), put_views_, std::move(answered));
        } else {
          client_->PutAsync(op.keys, put_views_, std::move(answered));
        }
        break;
      }
      case OpType::kDelete: {
        auto answered = [inbox, tag](absl::StatusOr<std::vector<bool>> r) {
          if (!r.ok()) return inbox->Deliver(tag, Failed(r.status()));
          OpResult res;
          res.ok = true;
          for (bool d : *r) res.found += d;
          inbox->Deliver(tag, std::move(res));
        };
        if (byte_keys_) {
          client_->DeleteAsync(NameKeys(op), std::move(answered));
        } else {
          client_->DeleteAsync(op.keys, std::move(answered));
        }
        break;
      }
    }
  }

 private:
  // The op's keys as byte keys (the client copies them before its call returns).
  absl::Span<const std::string_view> NameKeys(const Op& op) {
    byte_keys_->Name(op.keys, &key_bytes_, &key_views_);
    return key_views_;
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    {
      std::unique_lock<std::mutex> lock(inbox_->mu);
      inbox_->cv.wait_until(lock, deadline, [&] { return !inbox_->ready.empty(); });
      taking_.swap(inbox_->ready);
    }
    for (auto& [tag, r] : taking_) done(ctx, tag, r);
    const int n = static_cast<int>(taking_.size());
    taking_.clear();
    return n;
  }

 private:
  const std::optional<ByteKeyNames> byte_keys_;  // --key_format=bytes|tao
  const size_t connections_;
  const ValuePool* values_;
  const ValuePool* inspect_;  // null: gets' values are not read back
  std::shared_ptr<ShardedClient> client_;
  std::shared_ptr<Inbox> inbox_;
  std::vector<std::pair<uint64_t, OpResult>> taking_;
  std::string put_bytes_;                    // Start's scratch: a put's values end to end
  std::vector<std::string_view> put_views_;  // ... and each of them
  std::string key_bytes_;                    // NameKeys' scratch: an op's byte keys end to end
  std::vector<std::string_view> key_views_;  // ... and each of them
};

}  // namespace

absl::StatusOr<std::shared_ptr<ShardedClient>> MakeGphkvCoalescingClient(const GphkvServers& servers, size_t streams,
                                                                         int max_in_flight) {
  ClientOptions o;
  o.coalesce.enabled = true;
  o.coalesce.streams = static_cast<int>(streams);
  o.coalesce.max_in_flight = max_in_flight;
  o.max_message_bytes = -1;
  o.timeout = std::chrono::seconds(30);
  o.tls = servers.tls;
  auto client = ShardedClient::Connect(servers.list, o);
  if (!client.ok()) return client.status();
  return std::shared_ptr<ShardedClient>(std::move(*client));
}

std::unique_ptr<Session> MakeGphkvCoalescedSession(std::shared_ptr<ShardedClient> client, size_t connections,
                                                   const ValuePool* values, bool inspect_reads,
                                                   std::optional<ByteKeyNames> byte_keys) {
  return std::make_unique<CoalescedSession>(std::move(client), connections, values, inspect_reads, byte_keys);
}

}  // namespace gphkv::loadgen
