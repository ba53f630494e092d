// The bounded queue of callbacks that the asynchronous client runs on its
// one callback thread.

#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tb::client::detail {

/// A bounded FIFO of tasks with one consumer thread. Producers wait while
/// it is full; the consumer thread itself never waits (a callback that
/// unsubscribes must not deadlock), so it may exceed the bound by what
/// callbacks themselves queue.
class callback_queue {
public:
  /// Holds at most `capacity` tasks (at least 1).
  explicit callback_queue(std::size_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity) {}

  /// Queues `task`; waits for room unless called on the consumer thread.
  /// Returns false (and drops the task) once closed.
  bool push(std::function<void()> task) {
    std::unique_lock<std::mutex> guard{mutex_};
    if (std::this_thread::get_id() != consumer_)
      room_.wait(guard,
                 [this] { return closed_ || tasks_.size() < capacity_; });
    if (closed_)
      return false;
    tasks_.push_back(std::move(task));
    ready_.notify_one();
    return true;
  }

  /// Runs tasks on the calling thread until `close` and the queue is empty.
  void run() {
    std::unique_lock<std::mutex> guard{mutex_};
    consumer_ = std::this_thread::get_id();
    for (;;) {
      ready_.wait(guard, [this] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty())
        break;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      room_.notify_all();
      guard.unlock();
      task();
      guard.lock();
    }
    closed_ = true;
    room_.notify_all();
  }

  /// Lets `run` return once it ran every queued task.
  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closing_ = true;
    ready_.notify_all();
  }

private:
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<std::function<void()>> tasks_;
  std::thread::id consumer_;
  bool closing_ = false;
  bool closed_ = false;
};

} // namespace tb::client::detail
