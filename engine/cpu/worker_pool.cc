#include "engine/cpu/worker_pool.h"

namespace gphkv::engine::cpu {

WorkerPool::WorkerPool(unsigned threads) {
  size_ = threads != 0 ? threads : std::thread::hardware_concurrency();
  if (size_ == 0) size_ = 1;
  for (unsigned i = 1; i < size_; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(size_t tasks, const std::function<void(size_t)>& task) {
  if (tasks == 0) return;
  if (tasks == 1 || threads_.empty()) {
    for (size_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    tasks_ = tasks;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  start_cv_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_ == tasks_; });
  task_ = nullptr;
}

void WorkerPool::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (task_ != nullptr && next_ < tasks_) {
    const size_t i = next_++;
    const auto* task = task_;
    lock.unlock();
    (*task)(i);
    lock.lock();
    if (++finished_ == tasks_) done_cv_.notify_all();
  }
}

void WorkerPool::work() {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

}  // namespace gphkv::engine::cpu
