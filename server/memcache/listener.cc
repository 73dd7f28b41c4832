#include "server/memcache/listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>

#include "absl/strings/str_cat.h"
#include "server/memcache/replies.h"
#include "server/thread_name.h"
#include "spdlog/spdlog.h"

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

Listener::Listener(const Intake* intake, ListenerOptions options)
    : intake_(intake), options_(std::move(options)), started_(std::chrono::steady_clock::now()) {}

absl::StatusOr<std::unique_ptr<Listener>> Listener::start(const Intake* intake, ListenerOptions options) {
  use_threads_once();
  sockaddr_storage address{};
  int length = 0;
  if (!parse_address(options.address, &address, &length)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memcached_address=", options.address, " is not IP:PORT (such as 0.0.0.0:11211 or [::]:11211)"));
  }
  std::unique_ptr<Listener> l(new Listener(intake, std::move(options)));
  l->base_ = event_base_new();
  if (l->base_ == nullptr) return absl::InternalError("libevent: event_base_new failed");
  l->listener_ =
      evconnlistener_new_bind(l->base_, &Listener::on_accept, l.get(), LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
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
  l->inbox_event_ = event_new(l->base_, -1, 0, &Listener::on_inbox, l.get());
  l->stop_event_ = event_new(l->base_, -1, 0, &Listener::on_stop, l.get());
  Listener* self = l.get();
  l->thread_ = std::thread([self] {
    name_this_thread("gphkv-memcache");
    event_base_loop(self->base_, EVLOOP_NO_EXIT_ON_EMPTY);
  });
  return l;
}

Listener::~Listener() {
  stop(std::chrono::milliseconds(0));
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.clear();
  }
  if (inbox_event_ != nullptr) event_free(inbox_event_);
  if (stop_event_ != nullptr) event_free(stop_event_);
  if (listener_ != nullptr) evconnlistener_free(listener_);
  if (base_ != nullptr) event_base_free(base_);
}

void Listener::on_accept(evconnlistener*, int fd, sockaddr*, int, void* self) {
  static_cast<Listener*>(self)->accept(fd);
}

void Listener::accept(int fd) {
  if (stopping_) {
    ::close(fd);
    return;
  }
  if (connections_.size() >= options_.max_connections) {
    // Best effort, as memcached: the socket is new, its buffer empty.
    (void)!::send(fd, kTooManyConnections.data(), kTooManyConnections.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::close(fd);
    rejected_connections_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Replies are whole when written: send them at once.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  bufferevent* bev = bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    ::close(fd);
    return;
  }
  auto connection = std::make_shared<Connection>(this, bev);
  connections_.emplace(connection.get(), connection);
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    ++open_;
  }
  total_connections_.fetch_add(1, std::memory_order_relaxed);
  connection->start();
}

void Listener::post_answer(std::shared_ptr<Connection> connection, void* slot) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    first = inbox_.empty();
    inbox_.push_back(Answer{std::move(connection), slot});
  }
  // One wake-up per batch of answers: the loop takes them all.
  if (first) event_active(inbox_event_, 0, 0);
}

void Listener::on_inbox(int, short, void* self) {
  auto* l = static_cast<Listener*>(self);
  std::vector<Answer> answers;
  {
    std::lock_guard<std::mutex> lock(l->inbox_mu_);
    answers.swap(l->inbox_);
  }
  for (Answer& a : answers) a.connection->answered(a.slot);
}

void Listener::closed(Connection* connection) {
  // The last reference may be an answer in flight; the connection ends with it.
  connections_.erase(connection);
  std::lock_guard<std::mutex> lock(open_mu_);
  --open_;
  if (open_ == 0) all_closed_.notify_all();
}

void Listener::on_stop(int, short, void* self) {
  auto* l = static_cast<Listener*>(self);
  l->stopping_ = true;
  evconnlistener_disable(l->listener_);
  // drain() may close a connection, which erases it from the map.
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [ptr, c] : l->connections_) open.push_back(c);
  for (auto& c : open) c->drain();
}

void Listener::close_all() {
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [ptr, c] : connections_) open.push_back(c);
  for (auto& c : open) c->close();
}

void Listener::stop(std::chrono::milliseconds grace) {
  if (stopped_ || base_ == nullptr) return;
  stopped_ = true;
  event_active(stop_event_, 0, 0);
  {
    std::unique_lock<std::mutex> lock(open_mu_);
    all_closed_.wait_for(lock, grace, [this] { return open_ == 0; });
  }
  event_base_loopbreak(base_);
  if (thread_.joinable()) thread_.join();
  // The loop has ended: what is still open (a client that did not read its
  // replies within the grace) closes here, on this thread. libevent closes a
  // freed bufferevent's socket in a finalizer the loop runs (a chain of
  // callbacks, each activated by the one before): run the loop a few times
  // more; event_base_free runs what is left.
  close_all();
  for (int i = 0; i < 4; ++i) event_base_loop(base_, EVLOOP_NONBLOCK);
}

void Listener::append_stats(std::string* out) const {
  const auto now = std::chrono::steady_clock::now();
  append_stat(out, "pid", static_cast<uint64_t>(getpid()));
  append_stat(out, "uptime",
              static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(now - started_).count()));
  append_stat(out, "time", static_cast<uint64_t>(std::time(nullptr)));
  append_stat(out, "version", options_.version);
  append_stat(out, "pointer_size", static_cast<uint64_t>(8 * sizeof(void*)));
  append_stat(out, "threads", 1);
  append_stat(out, "curr_connections", static_cast<uint64_t>(connections_.size()));
  append_stat(out, "total_connections", total_connections_.load(std::memory_order_relaxed));
  append_stat(out, "rejected_connections", rejected_connections_.load(std::memory_order_relaxed));
  append_stat(out, "cmd_get", get_keys_.load(std::memory_order_relaxed));
  append_stat(out, "cmd_set", sets_.load(std::memory_order_relaxed));
  append_stat(out, "cmd_delete", deletes_.load(std::memory_order_relaxed));
}

void Listener::count_command(CommandKind kind, size_t keys) {
  switch (kind) {
    case CommandKind::kGet:
    case CommandKind::kGets: get_keys_.fetch_add(keys, std::memory_order_relaxed); break;
    case CommandKind::kSet: sets_.fetch_add(1, std::memory_order_relaxed); break;
    case CommandKind::kDelete: deletes_.fetch_add(1, std::memory_order_relaxed); break;
    default: break;
  }
}

}  // namespace gphkv::server::memcache
