#include "api_failure.hpp"

#include <fmt/format.h>

#include <exception>
#include <mold/base/error.hpp>
#include <mold/cache/cache.hpp>
#include <mold/net/api_error.hpp>
#include <mold/net/oom_json.hpp>
#include <mold/plugin/oom_advice.hpp>

namespace mold_cli {

namespace codes = mold::net::codes;
using Json = nlohmann::json;

ApiFailure api_failure(std::string_view code, std::string message) {
  ApiFailure failure;
  failure.code = std::string(code);
  failure.message = std::move(message);
  return failure;
}

ApiFailure shutting_down() {
  ApiFailure failure =
      api_failure(codes::kShuttingDown,
                  "the server is shutting down; retry on another server");
  failure.headers = {{"Retry-After", "5"}};
  return failure;
}

ApiFailure current_failure(const mold::tools::FailureContext& context) {
  try {
    throw;
  } catch (const mold::NotFound& e) {
    return api_failure(codes::kModelNotFound, e.what());
  } catch (const mold::InvalidArgument& e) {
    return api_failure(codes::kValidationError, e.what());
  } catch (const mold::Cancelled& e) {
    return api_failure(codes::kBadRequest, e.what());
  } catch (const mold::InsufficientMemory& e) {
    ApiFailure failure =
        api_failure(codes::kInsufficientMemory,
                    fmt::format("{} (on this server: {}, {})", e.what(),
                                context.backend, context.device));
    failure.oom = Json{{"admission",
                        {{"needed_bytes", e.needed()},
                         {"free_bytes", e.free()},
                         {"evictable_bytes", e.evictable()},
                         {"backend", context.backend},
                         {"device", context.device}}}};
    failure.headers = {{"Retry-After", std::to_string(kRetryAfterNoRoom)}};
    return failure;
  } catch (...) {
    const mold::tools::DescribedFailure d =
        mold::tools::describe_failure(context);
    ApiFailure failure = api_failure(codes::kInferenceError, d.message);
    if (d.oom)
      failure.oom = mold::net::oom_json(*d.oom, mold::oom_label(*d.oom),
                                        d.hints, d.exception_kind);
    return failure;
  }
}

}  // namespace mold_cli
