// molddiag classify: is this error an out-of-memory error, where, and what to
// do.

#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <mold/base/error.hpp>
#include <mold/base/text.hpp>
#include <mold/estimate/workload.hpp>
#include <mold/oom/oom.hpp>
#include <mold/plugin/oom_advice.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"
#include "common/readable_error.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

struct ClassifyRequest {
  tools::HostOptions host;
  mold::ErrorContext error;
  /// The failed operation, for hints with numbers; nullopt when not given.
  std::optional<mold::Workload> workload;
  bool json = false;
};

struct ClassifyResult {
  /// nullopt: not an out-of-memory error.
  std::optional<mold::OomReport> report;
  std::string label;
  std::vector<std::string> hints;
};

std::string read_all(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

/// Reads the error text from `input` when the arguments give none (or "-").
tools::Parsed<ClassifyRequest> parse_classify_options(
    const std::vector<std::string>& args, std::istream& input) {
  tools::Parsed<ClassifyRequest> parsed;
  ClassifyRequest& r = parsed.request;
  std::string backend, remote_host, remote_backend, remote_device;
  std::vector<std::string> words;
  mold::Workload w;
  w.width = w.height = 0;
  po::options_description options(
      "molddiag classify [options] [MESSAGE...]\n\n"
      "Classifies an error text (the arguments, or standard input when none or "
      "'-') with\n"
      "the registered OOM classifiers and prints the label and hints. The "
      "origin decides\n"
      "the label: --remote for an error a server returned, else a local one.\n"
      "Exit: 0 an out-of-memory error; 1 not one; 2 usage error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "backend", po::value(&backend),
      "the local backend the error came from (cuda, metal, ...)")(
      "remote", po::value(&remote_host),
      "the error came from the server HOST[:PORT]")(
      "remote-backend", po::value(&remote_backend),
      "the server's backend, from its status")(
      "remote-device", po::value(&remote_device),
      "the server's device name, from its status")(
      "family", po::value(&w.family),
      "the failed operation's family, for hints with numbers")(
      "model", po::value(&w.model),
      "model[:variant], e.g. qwen-image-edit-2511:q4")(
      "op", po::value(&w.op), "vae_decode, vae_encode, denoise, text_encode");
  tools::add_ranged_int(options, "width", &w.width, 1, mold::kMaxImageSide,
                        "image width");
  tools::add_ranged_int(options, "height", &w.height, 1, mold::kMaxImageSide,
                        "image height");
  tools::add_ranged_int(options, "batch", &w.batch, 1, mold::kMaxBatch,
                        "images at once", 1);
  options.add_options()("dtype", po::value(&w.dtype)->default_value("float16"),
                        "element type")("json", po::bool_switch(&r.json),
                                        "print JSON (fields in docs/oom.md)")(
      "message", po::value(&words)->composing(), "the error text (or stdin)");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("message", -1);
  const auto vm = tools::parse_args(args, options, &positional);
  if (vm.count("help")) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  if (!remote_host.empty() && !backend.empty())
    throw tools::UsageError(
        "give --backend (a local error) or --remote (a server's error), not "
        "both");
  if (remote_host.empty() &&
      (!remote_backend.empty() || !remote_device.empty()))
    throw tools::UsageError(
        "--remote-backend and --remote-device describe a --remote HOST: add "
        "it");

  if (!w.family.empty() || !w.op.empty() || w.width || w.height) {
    w.backend = remote_host.empty()
                    ? (backend.empty() ? "cpu" : backend)
                    : (remote_backend.empty() ? "cuda" : remote_backend);
    try {
      w.validate();
    } catch (const mold::Error& e) {
      throw tools::UsageError(
          std::string("the workload options: ") + e.what() +
          " (give --family, --op, --width and --height together)");
    }
    r.workload = w;
  }

  mold::ErrorContext& error = r.error;
  if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    error.message = read_all(input);
  } else {
    for (const auto& word : words)
      error.message += (error.message.empty() ? "" : " ") + word;
  }
  if (error.message.find_first_not_of(" \t\r\n") == std::string::npos)
    throw tools::UsageError(
        "no error text: give it as arguments or on standard input");
  if (!remote_host.empty()) {
    error.origin = {mold::Origin::Kind::remote, remote_host, remote_backend,
                    remote_device};
  } else {
    error.origin.backend = backend;
  }
  return parsed;
}

ClassifyResult run(const tools::Host& host, const ClassifyRequest& request) {
  ClassifyResult result;
  result.report = host.registry->classify(request.error);
  if (!result.report) return result;
  result.label = mold::oom_label(*result.report);
  result.hints = mold::advise(*host.registry, *result.report,
                              request.workload ? &*request.workload : nullptr);
  return result;
}

nlohmann::json optional_bytes(const std::optional<mold::Bytes>& bytes) {
  return bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr);
}

nlohmann::json origin_json(const mold::Origin& origin) {
  return {
      {"kind", origin.kind == mold::Origin::Kind::remote ? "remote" : "local"},
      {"host", origin.host},
      {"backend", origin.backend},
      {"device", origin.device_name}};
}

nlohmann::json to_json(const ClassifyRequest& request,
                       const ClassifyResult& result) {
  // Invalid UTF-8 is replaced in the JSON (print_json) and flagged here.
  const bool invalid_utf8 = !mold::is_valid_utf8(request.error.message);
  if (!result.report)
    return {{"is_oom", false},
            {"origin", origin_json(request.error.origin)},
            {"message", request.error.message},
            {"message_invalid_utf8", invalid_utf8}};
  const mold::OomReport& report = *result.report;
  return {
      {"message_invalid_utf8", invalid_utf8},
      {"is_oom", true},
      {"backend", report.backend},
      {"device", report.device},
      {"origin", origin_json(report.origin)},
      {"classifier", report.classifier},
      {"requested_bytes", optional_bytes(report.requested)},
      {"capacity_bytes", optional_bytes(report.capacity)},
      {"limit_bytes", optional_bytes(report.limit)},
      {"free_bytes", optional_bytes(report.free)},
      {"allocated_bytes", optional_bytes(report.allocated)},
      {"reserved_unallocated_bytes",
       optional_bytes(report.reserved_unallocated)},
      {"process_in_use_bytes", optional_bytes(report.process_in_use)},
      {"other_processes_bytes", optional_bytes(report.other_processes)},
      {"other_allocations_bytes", optional_bytes(report.other_allocations)},
      {"pool", report.pool},
      {"fragmentation", report.fragmentation},
      {"label", result.label},
      {"hints", result.hints},
      {"message", report.message},
  };
}

void print_text(const ClassifyResult& result) {
  if (!result.report) {
    std::cout << "not an out-of-memory error\n";
    return;
  }
  std::cout << mold::tools::oom_text(*result.report, result.hints) << "\n";
}

void print(const ClassifyRequest& request, const ClassifyResult& result) {
  if (request.json)
    tools::print_json(std::cout, to_json(request, result));
  else
    print_text(result);
}

}  // namespace

int classify_command(const std::vector<std::string>& args) {
  const auto parsed = parse_classify_options(args, std::cin);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const ClassifyRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  const ClassifyResult result = run(host, request);
  print(request, result);
  return result.report ? tools::kOk : tools::kFailure;
}

}  // namespace molddiag
