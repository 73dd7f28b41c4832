#include "client/thread_order.h"

#include <utility>
#include <vector>

namespace gphkv::detail {

void ThreadOrder::issue(Kind kind, absl::AnyInvocable<void(Ticket) &&> start) {
  const Ticket ticket{std::this_thread::get_id(), kind};
  {
    absl::MutexLock lock(&mu_);
    PerThread& t = threads_[ticket.thread];
    // Behind a held request, even a read that could start waits: a later
    // write must not pass a held earlier one, and reads keep their place.
    if (!t.held.empty() || !t.may_start(kind)) {
      t.held.push_back({kind, std::move(start)});
      return;
    }
    t.started(kind);
  }
  std::move(start)(ticket);
}

ThreadOrder::Ticket ThreadOrder::wait_turn(Kind kind) {
  const Ticket ticket{std::this_thread::get_id(), kind};
  absl::MutexLock lock(&mu_);
  PerThread* t = &threads_[ticket.thread];
  ++t->waiting;
  // The thread is blocked here, so nothing of its own is issued meanwhile:
  // only answers (finish) change its entry.
  struct Turn {
    const PerThread* t;
    Kind kind;
    bool come() const { return t->held.empty() && t->may_start(kind); }
  } turn{t, kind};
  mu_.Await(absl::Condition(&turn, &Turn::come));
  --t->waiting;
  t->started(kind);
  return ticket;
}

void ThreadOrder::finish(Ticket ticket) {
  std::vector<Held> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = threads_.find(ticket.thread);
    if (it == threads_.end()) return;  // not a ticket of this object: nothing to free
    PerThread& t = it->second;
    if (ticket.kind == Kind::kRead) {
      --t.reads;
    } else {
      t.write = false;
    }
    // Start, in order, what no earlier request holds back any more.
    while (!t.held.empty() && t.may_start(t.held.front().kind)) {
      t.started(t.held.front().kind);
      ready.push_back(std::move(t.held.front()));
      t.held.pop_front();
    }
    if (t.idle()) threads_.erase(it);
  }
  for (Held& h : ready) std::move(h.start)(Ticket{ticket.thread, h.kind});
}

size_t ThreadOrder::threads_tracked() const {
  absl::MutexLock lock(&mu_);
  return threads_.size();
}

}  // namespace gphkv::detail
