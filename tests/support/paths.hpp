#pragma once
// Where the build put what the tests need. Defined in the one generated source
// tests/CMakeLists.txt writes (paths.cpp.in), not as -D flags: every other
// test source then compiles the same in any clone, and ccache reuses it.

namespace mold::test {
extern const char* const kMolddiag;           // the molddiag binary
extern const char* const kMold;               // the mold binary
extern const char* const kPluginDir;          // the real plugins
extern const char* const kBadPluginRoot;      // one dir per case
extern const char* const kHostilePluginRoot;  // one dir per case
extern const char* const kFaultyPluginDir;    // the planted-fault family
extern const char* const kLeakyProcess;  // a stand-in server (black-box driver)
extern const char* const kPluginProbe;   // says whether plugins load libtorch
extern const char* const kDataDir;       // tests/data in the source tree
extern const char* const kDocsDir;       // docs/ in the source tree
extern const char* const kOpenAiClientSource;   // tests/openai_client
extern const char* const kOpenAiClientInstall;  // its npm ci, in the build
}  // namespace mold::test
