// molddiag tokenize: the token ids of a text with a family's tokenizer.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <iterator>
#include <mold/base/error.hpp>
#include <mold/model/chat_template.hpp>
#include <mold/model/tokenizer.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/family_lookup.hpp"
#include "common/host.hpp"
#include "common/json_output.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

namespace {

/// The family whose pipeline wraps a prompt in Qwen3's chat template.
constexpr const char* kChatFamily = "zimage";

struct TokenizeRequest {
  tools::HostOptions host;
  std::string family;
  std::string tokenizer_dir;
  std::string text;
  bool chat = false;
  bool json = false;
};

struct TokenizeResult {
  std::vector<std::int32_t> ids;
  std::vector<std::string> tokens;
};

/// Reads the text from `input` when it is "-".
tools::Parsed<TokenizeRequest> parse_tokenize_options(
    const std::vector<std::string>& args, std::istream& input) {
  tools::Parsed<TokenizeRequest> parsed;
  TokenizeRequest& r = parsed.request;
  po::options_description options(
      "molddiag tokenize --family F [--tokenizer DIR] [options] TEXT\n\n"
      "Prints the token ids of TEXT (standard input when TEXT is '-') as the "
      "family's\n"
      "text encoder sees them, with the tokenizer the family's plugin ships "
      "or, with\n"
      "--tokenizer, a diffusers tokenizer/ folder (tokenizer.json and "
      "tokenizer_config.json).\n"
      "With --chat the text is first wrapped in the family's chat template\n"
      "(zimage: Qwen3's, as Z-Image's pipeline does).\n"
      "Exit: 0 tokenized; 1 no such family or a bad tokenizer file; 2 usage "
      "error\n"
      "(also text that is not UTF-8).\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "family", po::value(&r.family)->required(),
      "model family: zimage, qwen_image, ...")(
      "tokenizer", po::value(&r.tokenizer_dir),
      "a tokenizer/ folder instead of the family's own")(
      "chat", po::bool_switch(&r.chat),
      "wrap TEXT in the family's chat template first")(
      "json", po::bool_switch(&r.json),
      "print JSON (fields in docs/molddiag.md)")(
      "text", po::value(&r.text)->required(), "the text ('-': stdin)");
  tools::add_host_options(options, r.host);
  po::positional_options_description positional;
  positional.add("text", 1);
  // Before parsing: the required options would fail it.
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options, &positional);
  if (r.text == "-") {
    // A prompt is text: at most 16 MiB are read (stdin may be /dev/zero).
    constexpr std::size_t kMaxText = std::size_t(16) << 20;
    r.text.clear();
    char buffer[1 << 16];
    while (input.read(buffer, sizeof buffer) || input.gcount() > 0) {
      r.text.append(buffer, std::size_t(input.gcount()));
      if (r.text.size() > kMaxText)
        throw tools::UsageError(fmt::format(
            "standard input holds more than {} bytes: a prompt is text; give "
            "a shorter one",
            kMaxText));
    }
  }
  return parsed;
}

TokenizeResult run(const tools::Host& host, const TokenizeRequest& request) {
  const mold::ModelFamily& family =
      tools::require_family(*host.registry, request.family);
  if (request.chat && request.family != kChatFamily)
    throw tools::UsageError(fmt::format(
        "--chat: mold has no chat template for family '{}' yet ({} has "
        "Qwen3's)",
        request.family, kChatFamily));
  if (request.tokenizer_dir.empty() && !family.tokenizer)
    throw tools::UsageError(fmt::format(
        "family '{}' ships no tokenizer in this build: give --tokenizer DIR, "
        "the tokenizer/ folder of its diffusers checkpoint",
        family.name));
  const mold::BpeTokenizer tokenizer =
      request.tokenizer_dir.empty()
          ? mold::BpeTokenizer::load(family.tokenizer->tokenizer_json,
                                     family.tokenizer->tokenizer_config)
          : mold::BpeTokenizer::load(request.tokenizer_dir);
  TokenizeResult result;
  result.ids = tokenizer.encode(
      request.chat ? mold::qwen3_chat_prompt(request.text) : request.text);
  result.tokens.reserve(result.ids.size());
  for (const std::int32_t id : result.ids)
    result.tokens.push_back(tokenizer.id_to_token(id).value_or(""));
  return result;
}

void print(const TokenizeRequest& request, const TokenizeResult& result) {
  if (request.json) {
    tools::print_json(std::cout, {{"ids", result.ids},
                                  {"tokens", result.tokens},
                                  {"count", result.ids.size()}});
    return;
  }
  std::cout << fmt::format("{}\n", fmt::join(result.ids, " "));
}

}  // namespace

int tokenize_command(const std::vector<std::string>& args) {
  const auto parsed = parse_tokenize_options(args, std::cin);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  const TokenizeRequest& request = parsed.request;
  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, kPluginsCommand);
  print(request, run(host, request));
  return tools::kOk;
}

}  // namespace molddiag
