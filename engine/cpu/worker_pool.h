// A fixed set of threads that runs one bulk operation's tasks at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gphkv::engine::cpu {

class WorkerPool {
 public:
  // `threads` workers in all, the calling thread included (0 = hardware threads).
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned size() const { return size_; }

  // Runs task(0) .. task(tasks - 1) over the workers and the calling thread;
  // returns when all have finished. Not re-entrant: one run at a time.
  void run(size_t tasks, const std::function<void(size_t)>& task);

 private:
  void work();
  void drain();  // takes tasks of the current run until none is left

  unsigned size_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t tasks_ = 0;
  size_t next_ = 0;
  size_t finished_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
};

}  // namespace gphkv::engine::cpu
