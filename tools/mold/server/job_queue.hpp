#pragma once
// mold serve's queue: one device job at a time, at most `capacity` waiting
// behind it, answered at once when full (QUEUE_FULL with a Retry-After from
// the jobs' mean time) or shutting down; control tasks (unload) run on the
// worker between jobs; a job whose client left is withdrawn at once; drain
// waits for the queue to empty. The jobs are
// opaque: what a job does is the service's.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "api_failure.hpp"

namespace mold_cli {

struct QueueSnapshot {
  std::size_t depth = 0;     ///< jobs waiting
  std::size_t capacity = 0;  ///< the most that may wait
  bool busy = false;         ///< a job is running
  std::uint64_t served = 0, failed = 0;
  std::uint64_t rejected = 0;  ///< refused: queue full or no memory
};

class JobQueue {
 public:
  struct Job {
    std::uint64_t id = 0;       ///< the caller's, for withdraw()
    std::function<void()> run;  ///< on the worker; answers its client itself
    std::function<void(int position)> on_queued;  ///< 1 = next
    /// Answers a job the queue drops unrun (shutting down).
    std::function<void(ApiFailure)> refuse;
  };

  /// `publish` is told the depth, capacity and busy flag whenever they change
  /// (the metrics' gauges), under the queue's lock: it must not call back.
  JobQueue(std::size_t capacity,
           std::function<void(const QueueSnapshot&)> publish);

  /// Queues `job`, or says why not (QUEUE_FULL, SHUTTING_DOWN) without
  /// calling any of its functions. A job that starts at once (idle device,
  /// empty queue) is accepted even with capacity 0.
  std::optional<ApiFailure> submit(Job job);
  /// Queues every job of `jobs` in order, or none (QUEUE_FULL when the last
  /// of them would not fit now, VALIDATION_ERROR when it never could: more
  /// than the capacity behind the first): the images of one request are
  /// admitted together.
  std::optional<ApiFailure> submit_all(std::vector<Job> jobs);
  /// The most jobs that may wait behind the running one.
  std::size_t capacity() const { return capacity_; }
  /// Takes the waiting job `id` out of the queue, unrun and unanswered (its
  /// client went away), so that its slot is free at once; those behind it
  /// are told their new positions. False when it is not waiting (it runs,
  /// ran, or never was).
  bool withdraw(std::uint64_t id);
  /// Runs `task` on the worker between jobs; false when the queue is stopping
  /// (the task is not run).
  bool control(std::function<void()> task);

  /// The worker's loop: runs control tasks and jobs in order until stop();
  /// then refuses every job still waiting with SHUTTING_DOWN.
  void run_worker();

  enum class Outcome { served, failed, rejected };
  /// The running job is done (called by it before its client hears the
  /// answer, so that the client's next request is not told it waits).
  /// `rejected`: refused for memory (INSUFFICIENT_MEMORY), counted with the
  /// queue's own refusals.
  void job_done(Outcome outcome, double seconds);

  /// New jobs are refused (SHUTTING_DOWN) from now on; waits up to `grace`
  /// for the queue and the running job to finish. Returns whether they did.
  bool drain(std::chrono::milliseconds grace);
  /// Ends run_worker() after the running job.
  void stop();
  bool refusing() const;

  QueueSnapshot snapshot() const;

 private:
  void publish_locked() const;
  /// QUEUE_FULL for `asked` jobs, with Retry-After; counted as rejected.
  ApiFailure full_locked(std::size_t asked);
  QueueSnapshot snapshot_locked() const;

  const std::size_t capacity_;
  std::function<void(const QueueSnapshot&)> publish_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Job> jobs_;
  std::deque<std::function<void()>> control_;
  bool busy_ = false, refusing_ = false, stopping_ = false;
  std::uint64_t served_ = 0, failed_ = 0, rejected_ = 0;
  std::uint64_t ran_ = 0;  ///< jobs that ran: seconds_total_'s count
  double seconds_total_ = 0;
};

}  // namespace mold_cli
