#include "mold/cache/recovery.hpp"

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <new>
#include <utility>

namespace mold {

std::string_view to_string(RecoveryAttempt::Outcome outcome) {
  switch (outcome) {
  case RecoveryAttempt::Outcome::succeeded:
    return "succeeded";
  case RecoveryAttempt::Outcome::out_of_memory:
    return "out_of_memory";
  case RecoveryAttempt::Outcome::invalid_output:
    return "invalid_output";
  case RecoveryAttempt::Outcome::skipped:
    return "skipped";
  }
  return "unknown";
}

namespace {

std::string describe(const std::vector<RecoveryAttempt>& attempts) {
  std::string out;
  for (const auto& a : attempts) {
    out += fmt::format("\n  {}: {}", a.rung, to_string(a.outcome));
    if (!a.error.empty()) out += " (" + a.error + ")";
  }
  return out;
}

/// The text and kind of the exception in flight.
ErrorContext context_of(const std::exception_ptr& error,
                        const Backend& backend) {
  ErrorContext context;
  context.origin.backend = backend.name();
  context.origin.device_name = backend.device_name();
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc& e) {
    context.message = e.what();
    context.exception_kind = "std::bad_alloc";
  } catch (const std::exception& e) {
    context.message = e.what();
    context.exception_kind = "std::exception";
  } catch (...) {
    context.exception_kind = "unknown";
  }
  return context;
}

}  // namespace

RecoveryFailed::RecoveryFailed(std::string operation,
                               std::vector<RecoveryAttempt> attempts)
    : Error(fmt::format("{} failed on every way to run it:{}", operation,
                        describe(attempts))),
      attempts_(std::move(attempts)) {}

const OomReport* RecoveryFailed::last_oom() const {
  for (auto it = attempts_.rbegin(); it != attempts_.rend(); ++it)
    if (it->oom) return &*it->oom;
  return nullptr;
}

RecoveryPolicy::RecoveryPolicy(OomClassifier classify)
    : classify_(std::move(classify)) {}

RecoveryResult RecoveryPolicy::run(
    const std::string& operation,
    const std::vector<RecoveryRung>& rungs) const {
  if (rungs.empty())
    throw InvalidArgument(operation + ": a recovery ladder needs a rung");
  RecoveryResult result;
  for (const auto& rung : rungs) {
    if (!rung.backend || !rung.run)
      throw InvalidArgument(
          fmt::format("{}: rung '{}' needs a backend and a run function",
                      operation, rung.name));
    RecoveryAttempt attempt;
    attempt.rung = rung.name;
    if (rung.working_bytes) {
      const MemoryStats s = rung.backend->stats();
      const Bytes available = s.free + s.reserved_unallocated();
      if (*rung.working_bytes > available) {
        attempt.outcome = RecoveryAttempt::Outcome::skipped;
        attempt.error =
            fmt::format("needs ~{}, {} is available on {}",
                        format_bytes(*rung.working_bytes),
                        format_bytes(available), rung.backend->name());
        result.attempts.push_back(std::move(attempt));
        continue;
      }
    }

    rung.backend->reset_peak();
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
      rung.run();
      rung.backend->synchronize_and_check();
      if (rung.validate) rung.validate();
    } catch (...) {
      failure = std::current_exception();
    }
    attempt.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    attempt.peak_bytes = rung.backend->stats().peak_allocated;

    if (!failure) {
      attempt.outcome = RecoveryAttempt::Outcome::succeeded;
      result.attempts.push_back(std::move(attempt));
      result.rung = rung.name;
      return result;
    }

    bool invalid = false;
    try {
      std::rethrow_exception(failure);
    } catch (const InvalidOutput& e) {
      invalid = true;
      attempt.error = e.what();
    } catch (...) {
    }
    if (!invalid) {
      auto report = classify_(context_of(failure, *rung.backend));
      if (!report)
        std::rethrow_exception(failure);  // unrelated: propagate unchanged
      attempt.error = report->message;
      attempt.oom = std::move(report);
    }
    attempt.outcome = invalid ? RecoveryAttempt::Outcome::invalid_output
                              : RecoveryAttempt::Outcome::out_of_memory;
    // Give back what the failed attempt held; a failure here (an OOM while
    // cleaning up) is recorded and cannot stop the next rung.
    try {
      rung.backend->empty_cache();
      rung.backend->synchronize_and_check();
    } catch (const std::exception& e) {
      attempt.cleanup_error = e.what();
    } catch (...) {
      attempt.cleanup_error = "a non-standard exception";
    }
    result.attempts.push_back(std::move(attempt));
  }
  throw RecoveryFailed(operation, std::move(result.attempts));
}

}  // namespace mold
