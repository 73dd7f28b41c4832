#include "server/memcache/listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>

#include "absl/strings/str_cat.h"
#include "server/memcache/replies.h"
#include "server/thread_name.h"

namespace gphkv::server::memcache {
namespace {

// memcached's words to a connection past its -c.
constexpr std::string_view kTooManyConnections = "ERROR Too many open connections\r\n";

// Other threads post answers to the loop (event_active): libevent must lock.
void use_threads_once() {
  static const int once = evthread_use_pthreads();
  (void)once;
}

// "IP:PORT" or "[IPv6]:PORT", port 0 allowed (the kernel picks one), which
// evutil_parse_sockaddr_port refuses.
bool parse_address(const std::string& text, sockaddr_storage* out, int* length) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  uint32_t port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return false;
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* a = reinterpret_cast<sockaddr_in6*>(out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    *length = sizeof(sockaddr_in6);
    return evutil_inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(out);
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(port));
  *length = sizeof(sockaddr_in);
  return evutil_inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;
}

}  // namespace

Listener::Listener(const CallSink* sink, ListenerOptions options)
    : sink_(sink), options_(std::move(options)), started_(std::chrono::steady_clock::now()) {}

absl::StatusOr<std::unique_ptr<Listener>> Listener::start(const Intake* intake, ListenerOptions options) {
  auto owned = std::make_unique<IntakeSink>(intake);
  auto l = start(owned.get(), std::move(options));
  if (l.ok()) (*l)->owned_sink_ = std::move(owned);
  return l;
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::start(const CallSink* sink, ListenerOptions options) {
  use_threads_once();
  if (options.threads == 0) return absl::InvalidArgumentError("memcached listener: threads must be at least 1");
  sockaddr_storage address{};
  int length = 0;
  if (!parse_address(options.address, &address, &length)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memcached_address=", options.address, " is not IP:PORT (such as 0.0.0.0:11211 or [::]:11211)"));
  }
  std::unique_ptr<Listener> l(new Listener(sink, std::move(options)));
  for (uint32_t i = 0; i < l->options_.threads; ++i) {
    l->loops_.push_back(std::make_unique<Loop>(l.get(), i));
    if (absl::Status s = l->loops_.back()->init(); !s.ok()) return s;
  }
  l->accept_base_ = event_base_new();
  if (l->accept_base_ == nullptr) return absl::InternalError("libevent: event_base_new failed");
  l->listener_ =
      evconnlistener_new_bind(l->accept_base_, &Listener::on_accept, l.get(), LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                              /*backlog=*/1024, reinterpret_cast<sockaddr*>(&address), length);
  if (l->listener_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on --memcached_address=", l->options_.address, ": ", std::strerror(errno)));
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(evconnlistener_get_fd(l->listener_), reinterpret_cast<sockaddr*>(&bound), &bound_length);
  l->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  for (auto& loop : l->loops_) loop->start();
  Listener* self = l.get();
  l->accept_thread_ = std::thread([self] {
    name_this_thread("gphkv-memc-acc");
    event_base_loop(self->accept_base_, EVLOOP_NO_EXIT_ON_EMPTY);
  });
  return l;
}

Listener::~Listener() {
  stop(std::chrono::milliseconds(0));
  for (auto& loop : loops_) loop->drop_inbox();
  if (listener_ != nullptr) evconnlistener_free(listener_);
  if (accept_base_ != nullptr) event_base_free(accept_base_);
  loops_.clear();
}

void Listener::on_accept(evconnlistener*, int fd, sockaddr*, int, void* self) {
  static_cast<Listener*>(self)->accept(fd);
}

void Listener::accept(int fd) {
  if (!accepting_.load(std::memory_order_acquire)) {
    ::close(fd);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    if (open_ >= options_.max_connections) {
      // Best effort, as memcached: the socket is new, its buffer empty.
      (void)!::send(fd, kTooManyConnections.data(), kTooManyConnections.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      ::close(fd);
      rejected_connections_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ++open_;
  }
  total_connections_.fetch_add(1, std::memory_order_relaxed);
  Loop* loop = loops_[next_loop_].get();
  next_loop_ = (next_loop_ + 1) % loops_.size();
  loop->adopt(fd);
}

void Listener::connection_gone() {
  std::lock_guard<std::mutex> lock(open_mu_);
  --open_;
  if (open_ == 0) all_closed_.notify_all();
}

size_t Listener::open_connections() const {
  std::lock_guard<std::mutex> lock(open_mu_);
  return open_;
}

uint64_t Listener::spun_answers() const {
  uint64_t n = 0;
  for (const auto& loop : loops_) n += loop->spun_answers();
  return n;
}

PortCounters Listener::counters() const {
  PortCounters c;
  c.open_connections = open_connections();
  c.accepted_connections = total_connections_.load(std::memory_order_relaxed);
  c.rejected_connections = rejected_connections_.load(std::memory_order_relaxed);
  for (const auto& loop : loops_) {
    for (size_t k = 0; k < kCommandKinds; ++k) c.commands[k] += loop->commands(static_cast<CommandKind>(k));
    c.get_keys += loop->get_keys();
    c.store_calls += loop->store_calls();
    c.packed_gets += loop->packed_gets();
    c.spun_answers += loop->spun_answers();
  }
  return c;
}

void Listener::stop(std::chrono::milliseconds grace) {
  if (stopped_ || accept_base_ == nullptr) return;
  stopped_ = true;
  // The acceptor first: once its thread has ended no socket is handed to a
  // loop (a socket handed and not taken, close_all() closes).
  accepting_.store(false, std::memory_order_release);
  event_base_loopbreak(accept_base_);
  if (accept_thread_.joinable()) accept_thread_.join();
  for (auto& loop : loops_) loop->begin_stop();
  {
    std::unique_lock<std::mutex> lock(open_mu_);
    all_closed_.wait_for(lock, grace, [this] { return open_ == 0; });
  }
  for (auto& loop : loops_) loop->break_and_join();
  for (auto& loop : loops_) loop->close_all();
}

void Listener::append_stats(std::string* out) const {
  uint64_t get_keys = 0, sets = 0, deletes = 0;
  for (const auto& loop : loops_) {
    get_keys += loop->get_keys();
    sets += loop->sets();
    deletes += loop->deletes();
  }
  const auto now = std::chrono::steady_clock::now();
  append_stat(out, "pid", static_cast<uint64_t>(getpid()));
  append_stat(out, "uptime",
              static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(now - started_).count()));
  append_stat(out, "time", static_cast<uint64_t>(std::time(nullptr)));
  append_stat(out, "version", options_.version);
  append_stat(out, "pointer_size", static_cast<uint64_t>(8 * sizeof(void*)));
  append_stat(out, "threads", static_cast<uint64_t>(loops_.size()));
  append_stat(out, "curr_connections", static_cast<uint64_t>(open_connections()));
  append_stat(out, "total_connections", total_connections_.load(std::memory_order_relaxed));
  append_stat(out, "rejected_connections", rejected_connections_.load(std::memory_order_relaxed));
  append_stat(out, "cmd_get", get_keys);
  append_stat(out, "cmd_set", sets);
  append_stat(out, "cmd_delete", deletes);
  if (options_.store_totals) {
    const StoreTotals t = options_.store_totals();
    append_stat(out, "curr_items", t.items);
    append_stat(out, "limit_maxbytes", t.limit_bytes);
    append_stat(out, "evictions", t.evictions);
    append_stat(out, "crawler_reclaimed", t.swept);
  }
}

}  // namespace gphkv::server::memcache
