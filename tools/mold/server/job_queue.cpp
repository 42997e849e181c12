#include "job_queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mold/net/api_error.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mold_cli {

namespace codes = mold::net::codes;

JobQueue::JobQueue(std::size_t capacity,
                   std::function<void(const QueueSnapshot&)> publish)
    : capacity_(capacity), publish_(std::move(publish)) {
  std::lock_guard<std::mutex> lock(mutex_);
  publish_locked();
}

QueueSnapshot JobQueue::snapshot_locked() const {
  QueueSnapshot s;
  s.depth = jobs_.size();
  s.capacity = capacity_;
  s.busy = busy_;
  s.served = served_;
  s.failed = failed_;
  s.rejected = rejected_;
  return s;
}

QueueSnapshot JobQueue::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_locked();
}

void JobQueue::publish_locked() const {
  if (publish_) publish_(snapshot_locked());
}

std::optional<ApiFailure> JobQueue::submit(Job job) {
  std::vector<Job> one;
  one.push_back(std::move(job));
  return submit_all(std::move(one));
}

std::optional<ApiFailure> JobQueue::submit_all(std::vector<Job> jobs) {
  if (jobs.empty()) return std::nullopt;
  if (jobs.size() - 1 > capacity_)
    return api_failure(
        codes::kValidationError,
        fmt::format("{} images at once need a queue of {} behind the first; "
                    "this server's holds {} (mold serve --queue): ask for "
                    "fewer at a time",
                    jobs.size(), jobs.size() - 1, capacity_));
  std::vector<std::pair<std::function<void(int)>, int>> notify;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (refusing_ || stopping_) return shutting_down();
    // The last of them would wait behind the running job, those queued and
    // the others.
    const std::size_t would_wait =
        jobs_.size() + (busy_ ? 1 : 0) + jobs.size() - 1;
    if (would_wait > capacity_) return full_locked(jobs.size());
    for (auto& job : jobs) {
      const int ahead = int(jobs_.size()) + (busy_ ? 1 : 0);
      if (job.on_queued && ahead > 0) notify.emplace_back(job.on_queued, ahead);
      jobs_.push_back(std::move(job));
    }
    publish_locked();
  }
  wake_.notify_one();
  for (const auto& [on_queued, ahead] : notify) on_queued(ahead);
  return std::nullopt;
}

ApiFailure JobQueue::full_locked(std::size_t asked) {
  ++rejected_;
  const double per_job = ran_ ? seconds_total_ / double(ran_) : 1.0;
  const int retry = std::max(
      1, std::min(60, int(per_job * double(jobs_.size() + asked) + 0.5)));
  const std::string what =
      asked == 1 ? "" : fmt::format(" for {} images at once", asked);
  ApiFailure full = api_failure(
      codes::kQueueFull,
      fmt::format("the queue is full{}: one request runs and {} wait for the "
                  "device (mold serve --queue {}); retry in {} s or send it to "
                  "another server",
                  what, jobs_.size(), capacity_, retry));
  full.headers = {{"Retry-After", std::to_string(retry)}};
  return full;
}

bool JobQueue::withdraw(std::uint64_t id) {
  std::vector<std::pair<std::function<void(int)>, int>> moved;
  Job gone;  // destroyed outside the lock: its closures may hold much
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(jobs_.begin(), jobs_.end(),
                                 [id](const Job& job) { return job.id == id; });
    if (it == jobs_.end()) return false;
    int position = int(it - jobs_.begin()) + (busy_ ? 1 : 0);
    for (auto behind = std::next(it); behind != jobs_.end(); ++behind)
      moved.emplace_back(behind->on_queued, position++);
    gone = std::move(*it);
    jobs_.erase(it);
    publish_locked();
  }
  idle_.notify_all();  // a drain may be waiting for this slot
  for (const auto& [notify, pos] : moved)
    if (notify && pos > 0) notify(pos);
  return true;
}

bool JobQueue::control(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    control_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void JobQueue::run_worker() {
  while (true) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(
        lock, [&] { return stopping_ || !jobs_.empty() || !control_.empty(); });
    if (!control_.empty()) {
      auto task = std::move(control_.front());
      control_.pop_front();
      lock.unlock();
      task();
      continue;
    }
    if (stopping_) break;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    std::vector<std::pair<std::function<void(int)>, int>> moved;
    int position = 1;
    for (const auto& waiting : jobs_)
      moved.emplace_back(waiting.on_queued, position++);
    publish_locked();
    lock.unlock();
    for (const auto& [notify, pos] : moved)
      if (notify) notify(pos);
    try {
      job.run();
    } catch (...) {
      // A job answers every failure itself; nothing may stop the worker.
    }
    lock.lock();
    busy_ = false;
    publish_locked();
    idle_.notify_all();
  }
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(jobs_);
    publish_locked();
  }
  idle_.notify_all();
  for (auto& job : left)
    if (job.refuse) job.refuse(shutting_down());
}

void JobQueue::job_done(Outcome outcome, double seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    (outcome == Outcome::served   ? served_
     : outcome == Outcome::failed ? failed_
                                  : rejected_)++;
    seconds_total_ += seconds;
    ++ran_;
    busy_ = false;
    publish_locked();
  }
  idle_.notify_all();
}

bool JobQueue::drain(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mutex_);
  refusing_ = true;
  return idle_.wait_for(lock, grace, [&] { return jobs_.empty() && !busy_; });
}

void JobQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool JobQueue::refusing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refusing_ || stopping_;
}

}  // namespace mold_cli
