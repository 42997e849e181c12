#pragma once
// Where the build put what the benchmarks need. Defined in the one generated
// source bench/CMakeLists.txt writes (bench_paths.cpp.in), not as -D flags, so
// that the benchmarks compile the same in any clone and ccache reuses them.

namespace mold_bench {
extern const char* const kMold;          // the mold binary
extern const char* const kPluginDir;     // the real plugins
extern const char* const kOomTexts;      // tests/data/oom_texts.json
extern const char* const kTokenizerDir;  // tests/data/tokenizer/qwen3
extern const char* const kTestDataDir;   // tests/data
}  // namespace mold_bench
