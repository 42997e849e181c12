// Tokenizer throughput: the Qwen3 byte-level BPE tokenizer (Z-Image's text
// encoder) on about 10 MB of English-like text, in MB/s against the target of
// 5 MB/s. The text mixes common English words with made-up words of English
// syllables (a third of the words), so that the BPE word cache does not answer
// everything; a run with the cache off shows the uncached cost.
//
//   ./build/bin/tokenizer_bench [MEGABYTES] [TOKENIZER_DIR]
//
// Without TOKENIZER_DIR the committed tests/data/tokenizer/qwen3 files are
// used (tokenizer.json.xz decompressed with xz into a temporary directory).

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mold/model/tokenizer.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_paths.hpp"

namespace {

constexpr double kTargetMBps = 5.0;

const std::vector<std::string>& common_words() {
  static const std::vector<std::string> words = {
      "the",        "of",          "and",        "a",           "to",
      "in",         "is",          "you",        "that",        "it",
      "he",         "was",         "for",        "on",          "are",
      "as",         "with",        "his",        "they",        "at",
      "be",         "this",        "have",       "from",        "or",
      "one",        "had",         "by",         "word",        "but",
      "not",        "what",        "all",        "were",        "we",
      "when",       "your",        "can",        "said",        "there",
      "use",        "an",          "each",       "which",       "she",
      "do",         "how",         "their",      "if",          "will",
      "up",         "other",       "about",      "out",         "many",
      "then",       "them",        "these",      "so",          "some",
      "her",        "would",       "make",       "like",        "him",
      "into",       "time",        "has",        "look",        "two",
      "more",       "write",       "go",         "see",         "number",
      "no",         "way",         "could",      "people",      "my",
      "than",       "first",       "water",      "been",        "call",
      "who",        "oil",         "its",        "now",         "find",
      "long",       "down",        "day",        "did",         "get",
      "come",       "made",        "may",        "part",        "photograph",
      "portrait",   "landscape",   "mountain",   "river",       "forest",
      "golden",     "light",       "shadow",     "morning",     "evening",
      "winter",     "summer",      "snow",       "rain",        "city",
      "street",     "window",      "garden",     "ancient",     "castle",
      "dragon",     "painting",    "watercolor", "cinematic",   "detailed",
      "highly",     "realistic",   "beautiful",  "quiet",       "bright",
      "colorful",   "fox",         "red",        "running",     "through",
      "fresh",      "dawn",        "lighting",   "composition", "background",
      "foreground", "texture",     "reflection", "surface",     "crystal",
      "velvet",     "marble",      "wooden",     "bridge",      "harbor",
      "lantern",    "festival",    "market",     "children",    "playing",
      "elderly",    "woman",       "man",        "wearing",     "coat",
      "hat",        "scarf",       "standing",   "sitting",     "beside",
      "under",      "above",       "between",    "across",      "gentle",
      "dramatic",   "soft",        "focus",      "lens",        "camera",
      "angle",      "perspective", "wide",       "close",       "view",
      "style",      "artist",      "famous",     "museum",      "library",
      "kitchen",    "table",       "flowers",    "vase",        "candle",
      "night",      "stars",       "moon",       "ocean",       "waves",
      "beach",      "desert",      "sand",       "storm",       "clouds",
      "sky",        "blue",        "green",      "purple",      "orange",
      "silver"};
  return words;
}

/// Deterministic: only the engine's raw output is used (distributions differ
/// between standard libraries).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::size_t below(std::size_t n) { return engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

std::string made_up_word(Rng& rng) {
  static const char* onsets[] = {"b",  "br", "c",  "ch", "cl", "d", "dr", "f",
                                 "fl", "g",  "gr", "h",  "j",  "k", "l",  "m",
                                 "n",  "p",  "pl", "qu", "r",  "s", "sh", "sl",
                                 "st", "t",  "th", "tr", "v",  "w", "wh", "z"};
  static const char* vowels[] = {"a",  "e",  "i",  "o",  "u",  "ai",
                                 "ea", "ee", "io", "ou", "oo", "y"};
  static const char* codas[] = {"",   "",   "",   "n",  "r", "s", "t",  "l",
                                "nd", "ng", "st", "ck", "m", "x", "rt", "sh"};
  std::string word;
  const std::size_t syllables = 1 + rng.below(3);
  for (std::size_t i = 0; i < syllables; ++i) {
    word += onsets[rng.below(std::size(onsets))];
    word += vowels[rng.below(std::size(vowels))];
    word += codas[rng.below(std::size(codas))];
  }
  return word;
}

/// About `bytes` of English-like paragraphs of prompt size (~1 KB each).
std::vector<std::string> make_paragraphs(std::size_t bytes) {
  Rng rng(2026);
  const auto& words = common_words();
  std::vector<std::string> paragraphs;
  std::size_t total = 0;
  while (total < bytes) {
    std::string p;
    const std::size_t target = 600 + rng.below(800);
    bool sentence_start = true;
    while (p.size() < target) {
      std::string word = rng.below(3) == 0 ? made_up_word(rng)
                                           : words[rng.below(words.size())];
      if (rng.below(40) == 0) word = std::to_string(1800 + rng.below(230));
      if (sentence_start && word[0] >= 'a' && word[0] <= 'z')
        word[0] = static_cast<char>(word[0] - 'a' + 'A');
      if (!p.empty()) p += ' ';
      p += word;
      sentence_start = false;
      const std::size_t r = rng.below(20);
      if (r == 0) {
        p += ',';
      } else if (r == 1) {
        p += '.';
        sentence_start = true;
      } else if (r == 2 && rng.below(4) == 0) {
        p += rng.below(2) ? "'s" : ";";
      }
    }
    p += ".\n";
    total += p.size();
    paragraphs.push_back(std::move(p));
  }
  return paragraphs;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void report(const char* what, std::size_t bytes, std::size_t tokens,
            double seconds) {
  const double mbps = double(bytes) / 1e6 / seconds;
  fmt::print(
      "  {:<34}: {:7.2f} MB/s ({:.3f} s, {} tokens), {:.2f}x the {} MB/s "
      "target\n",
      what, mbps, seconds, tokens, mbps / kTargetMBps, kTargetMBps);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t megabytes =
      argc > 1 ? static_cast<std::size_t>(std::atol(argv[1])) : 10;
  std::filesystem::path dir;
  std::filesystem::path scratch;
  if (argc > 2) {
    dir = argv[2];
  } else {
    scratch = std::filesystem::temp_directory_path() /
              fmt::format("mold-tokenizer-bench-{}", ::getpid());
    std::filesystem::create_directories(scratch);
    const std::string data = mold_bench::kTokenizerDir;
    const std::string command = fmt::format(
        "xz -dc '{0}/tokenizer.json.xz' > '{1}/tokenizer.json' && cp "
        "'{0}/tokenizer_config.json' '{1}/'",
        data, scratch.string());
    if (std::system(command.c_str()) != 0) {
      fmt::print(stderr, "tokenizer_bench: could not run: {}\n", command);
      return 1;
    }
    dir = scratch;
  }

  auto start = std::chrono::steady_clock::now();
  mold::BpeTokenizer tokenizer = mold::BpeTokenizer::load(dir);
  const double load_seconds = seconds_since(start);
  if (!scratch.empty()) std::filesystem::remove_all(scratch);

  const auto paragraphs = make_paragraphs(megabytes * 1000 * 1000);
  std::string text;
  for (const auto& p : paragraphs) text += p;
  fmt::print("tokenizer: {} tokens, loaded in {:.2f} s\n",
             tokenizer.vocab_size(), load_seconds);
  fmt::print("text: {:.2f} MB of English-like text in {} paragraphs\n",
             double(text.size()) / 1e6, paragraphs.size());

  // Warm-up on a slice, then cold caches for each timed run.
  (void)tokenizer.encode(paragraphs.front());

  tokenizer.set_cache_capacity(65536);
  start = std::chrono::steady_clock::now();
  const auto ids = tokenizer.encode(text);
  report("one call, word cache on", text.size(), ids.size(),
         seconds_since(start));

  tokenizer.set_cache_capacity(65536);
  start = std::chrono::steady_clock::now();
  std::size_t tokens = 0;
  for (const auto& p : paragraphs) tokens += tokenizer.encode(p).size();
  report("one call per ~1 KB prompt, cache on", text.size(), tokens,
         seconds_since(start));

  tokenizer.set_cache_capacity(0);
  start = std::chrono::steady_clock::now();
  const auto uncached = tokenizer.encode(text);
  report("one call, word cache off", text.size(), uncached.size(),
         seconds_since(start));

  start = std::chrono::steady_clock::now();
  const std::string decoded = tokenizer.decode(ids);
  const double decode_seconds = seconds_since(start);
  fmt::print("  {:<34}: {:7.2f} MB/s\n", "decode",
             double(text.size()) / 1e6 / decode_seconds);
  if (decoded != text || uncached != ids) {
    fmt::print(stderr, "tokenizer_bench: round trip or cache mismatch\n");
    return 1;
  }
  return 0;
}
