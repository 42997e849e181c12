#include "readable_error.hpp"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <exception>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/cache/recovery.hpp>
#include <mold/plugin/oom_advice.hpp>
#include <mold/plugin/registry.hpp>
#include <new>

namespace mold::tools {

namespace {

std::vector<std::string> hints_for(const FailureContext& context,
                                   const mold::OomReport& report) {
  std::vector<std::string> hints =
      mold::advise(*context.registry, report,
                   context.workload ? &*context.workload : nullptr);
  hints.insert(hints.end(), context.extra_hints.begin(),
               context.extra_hints.end());
  return hints;
}

/// The report of `message` when the registry recognises an out-of-memory
/// error in it.
std::optional<mold::OomReport> classify(const FailureContext& context,
                                        std::string message, std::string kind) {
  if (!context.registry) return std::nullopt;
  mold::ErrorContext error;
  error.message = std::move(message);
  error.exception_kind = std::move(kind);
  error.origin = context.origin;
  error.origin.backend = context.backend;
  error.origin.device_name = context.device;
  std::optional<mold::OomReport> report = context.registry->classify(error);
  if (report && context.verbose) report->message = report->raw_message;
  return report;
}

}  // namespace

std::string oom_text(const mold::OomReport& report,
                     const std::vector<std::string>& hints) {
  std::string text = mold::oom_label(report);
  std::vector<std::string> numbers;
  auto number = [&](const char* name, const std::optional<mold::Bytes>& value) {
    if (value)
      numbers.push_back(fmt::format("{} {}", name, mold::format_bytes(*value)));
  };
  number("requested", report.requested);
  number("capacity", report.capacity);
  number("free", report.free);
  number("allocated", report.allocated);
  number("reserved but unallocated", report.reserved_unallocated);
  number("this process", report.process_in_use);
  number("other processes", report.other_processes);
  number("other allocations", report.other_allocations);
  if (!numbers.empty()) {
    std::string line;
    for (const auto& n : numbers) line += (line.empty() ? "" : "; ") + n;
    text += "\n  " + line + (report.fragmentation ? " (fragmentation)" : "");
  }
  text += "\n  " + report.message;
  if (!hints.empty()) {
    text += "\n\nTry:";
    for (const auto& h : hints) text += "\n  - " + h;
  }
  // The message is the error's own text: it may carry terminal escapes.
  return mold::escape_control(text);
}

DescribedFailure describe_failure(const FailureContext& context) {
  DescribedFailure out;
  auto with_oom = [&](mold::OomReport report, std::string kind) {
    out.hints = hints_for(context, report);
    out.message = oom_text(report, out.hints);
    out.oom = std::move(report);
    out.exception_kind = std::move(kind);
  };
  try {
    throw;
  } catch (const mold::RecoveryFailed& e) {
    out.exception_kind = "mold::RecoveryFailed";
    out.message = e.what();
    if (const mold::OomReport* oom = e.last_oom(); oom && context.registry) {
      with_oom(*oom, "mold::RecoveryFailed");
      out.message = fmt::format("{}\n\nThe last out-of-memory error: {}",
                                e.what(), out.message);
    }
  } catch (const mold::Error& e) {
    out.exception_kind = "mold::Error";
    out.message = e.what();
  } catch (const c10::Error& e) {
    const char* kind = dynamic_cast<const c10::OutOfMemoryError*>(&e)
                           ? "c10::OutOfMemoryError"
                           : "c10::Error";
    if (auto report = classify(context, e.what(), kind))
      with_oom(std::move(*report), kind);
    else {
      out.exception_kind = kind;
      out.message = context.verbose ? e.what() : e.what_without_backtrace();
    }
  } catch (const std::bad_alloc& e) {
    if (auto report = classify(context, e.what(), "std::bad_alloc"))
      with_oom(std::move(*report), "std::bad_alloc");
    else {
      out.exception_kind = "std::bad_alloc";
      out.message = e.what();
    }
  } catch (const std::exception& e) {
    out.exception_kind = "std::exception";
    out.message = e.what();
  } catch (...) {
    out.exception_kind = "unknown";
    out.message = "unknown error";
  }
  return out;
}

void rethrow_readable(const FailureContext& context) {
  try {
    throw;
  } catch (const mold::RecoveryFailed& e) {
    const mold::OomReport* oom = e.last_oom();
    if (!oom || !context.registry) throw;
    throw mold::Error(fmt::format("{}\n\nThe last out-of-memory error: {}",
                                  e.what(),
                                  oom_text(*oom, hints_for(context, *oom))));
  } catch (const mold::Error&) {
    throw;  // mold's own: already a message for a person
  } catch (const c10::Error& e) {
    const bool oom_kind = dynamic_cast<const c10::OutOfMemoryError*>(&e);
    if (auto report =
            classify(context, e.what(),
                     oom_kind ? "c10::OutOfMemoryError" : "c10::Error"))
      throw mold::Error(oom_text(*report, hints_for(context, *report)));
    throw mold::Error(context.verbose ? e.what() : e.what_without_backtrace());
  } catch (const std::bad_alloc& e) {
    if (auto report = classify(context, e.what(), "std::bad_alloc"))
      throw mold::Error(oom_text(*report, hints_for(context, *report)));
    throw;
  }
}

}  // namespace mold::tools
