// Where the memcached front end sends the calls it builds: the server's
// Intake (IntakeSink), or anything else that answers a Call, such as the
// null server's table-less answers (bench/null_memcached.h), which measure
// the listener, the parser and the replies alone.
#pragma once

#include "absl/status/status.h"
#include "server/call.h"
#include "server/intake.h"

namespace gphkv::server::memcache {

class CallSink {
 public:
  virtual ~CallSink() = default;
  // Intake::submit's contract: on a non-OK return nothing was queued and
  // `done` will not run; otherwise `done` runs exactly once, on any thread
  // (the calling loop thread included).
  virtual absl::Status submit(Call call) const = 0;
};

class IntakeSink final : public CallSink {
 public:
  explicit IntakeSink(const Intake* intake) : intake_(intake) {}
  absl::Status submit(Call call) const override { return intake_->submit(std::move(call)); }

 private:
  const Intake* intake_;
};

}  // namespace gphkv::server::memcache
