// molddiag classify: is this error an out-of-memory error, where, and what to
// do.

#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <mold/oom/oom_advice.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>

#include "diag_context.hpp"

namespace po = boost::program_options;

namespace molddiag {

namespace {

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

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin),
                     std::istreambuf_iterator<char>());
}

}  // namespace

int classify_command(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string backend, remote_host, remote_backend, remote_device;
  std::vector<std::string> words;
  mold::Workload w;
  w.width = w.height = 0;
  bool json = false;
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
      "op", po::value(&w.op), "vae_decode, vae_encode, denoise, text_encode")(
      "width", po::value(&w.width), "image width")(
      "height", po::value(&w.height), "image height")(
      "batch", po::value(&w.batch)->default_value(1), "images at once")(
      "dtype", po::value(&w.dtype)->default_value("float16"), "element type")(
      "json", po::bool_switch(&json), "print JSON (fields in docs/oom.md)")(
      "message", po::value(&words)->composing(), "the error text (or stdin)");
  add_common_options(options, common);
  po::positional_options_description positional;
  positional.add("message", -1);
  const auto vm = parse(args, options, &positional);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return kOk;
  }
  if (!remote_host.empty() && !backend.empty())
    throw UsageError(
        "give --backend (a local error) or --remote (a server's error), not "
        "both");
  if (remote_host.empty() &&
      (!remote_backend.empty() || !remote_device.empty()))
    throw UsageError(
        "--remote-backend and --remote-device describe a --remote HOST: add "
        "it");

  const bool has_workload =
      !w.family.empty() || !w.op.empty() || w.width || w.height;
  if (has_workload) {
    w.backend = remote_host.empty()
                    ? (backend.empty() ? "cpu" : backend)
                    : (remote_backend.empty() ? "cuda" : remote_backend);
    try {
      w.validate();
    } catch (const mold::Error& e) {
      throw UsageError(std::string("the workload options: ") + e.what() +
                       " (give --family, --op, --width and --height together)");
    }
  }

  mold::ErrorContext error;
  if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    error.message = read_stdin();
  } else {
    for (const auto& word : words)
      error.message += (error.message.empty() ? "" : " ") + word;
  }
  if (error.message.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(
        "no error text: give it as arguments or on standard input");
  if (!remote_host.empty()) {
    error.origin = {mold::Origin::Kind::remote, remote_host, remote_backend,
                    remote_device};
  } else {
    error.origin.backend = backend;
  }

  const DiagContext context = make_context(common);
  warn_load_errors(*context.registry);
  const auto report = context.registry->classify(error);
  if (!report) {
    if (json)
      std::cout << nlohmann::json{{"is_oom", false},
                                  {"origin", origin_json(error.origin)},
                                  {"message", error.message}}
                       .dump(2)
                << "\n";
    else
      std::cout << "not an out-of-memory error\n";
    return kFailure;
  }
  const std::string label = mold::oom_label(*report);
  const auto hints =
      mold::advise(*context.registry, *report, has_workload ? &w : nullptr);

  if (json) {
    std::cout << nlohmann::json{
                     {"is_oom", true},
                     {"backend", report->backend},
                     {"device", report->device},
                     {"origin", origin_json(report->origin)},
                     {"classifier", report->classifier},
                     {"requested_bytes", optional_bytes(report->requested)},
                     {"capacity_bytes", optional_bytes(report->capacity)},
                     {"free_bytes", optional_bytes(report->free)},
                     {"allocated_bytes", optional_bytes(report->allocated)},
                     {"reserved_unallocated_bytes", optional_bytes(report->reserved_unallocated)},
                     {"process_in_use_bytes", optional_bytes(report->process_in_use)},
                     {"other_processes_bytes", optional_bytes(report->other_processes)},
                     {"other_allocations_bytes", optional_bytes(report->other_allocations)},
                     {"pool", report->pool},
                     {"fragmentation", report->fragmentation},
                     {"label", label},
                     {"hints", hints},
                     {"message", report->message},
                 }
                     .dump(2)
              << "\n";
    return kOk;
  }
  std::cout << label << "\n";
  std::vector<std::string> numbers;
  auto number = [&](const char* name, const std::optional<mold::Bytes>& value) {
    if (value)
      numbers.push_back(fmt::format("{} {}", name, mold::format_bytes(*value)));
  };
  number("requested", report->requested);
  number("capacity", report->capacity);
  number("free", report->free);
  number("allocated", report->allocated);
  number("reserved but unallocated", report->reserved_unallocated);
  number("this process", report->process_in_use);
  number("other processes", report->other_processes);
  number("other allocations", report->other_allocations);
  if (!numbers.empty()) {
    std::string line;
    for (const auto& n : numbers) line += (line.empty() ? "" : "; ") + n;
    std::cout << "  " << line
              << (report->fragmentation ? " (fragmentation)" : "") << "\n";
  }
  std::cout << "  " << report->message << "\n";
  if (!hints.empty()) {
    std::cout << "\nTry:\n";
    for (const auto& h : hints) std::cout << "  - " << h << "\n";
  }
  return kOk;
}

}  // namespace molddiag
