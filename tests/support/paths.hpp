#pragma once
// Where the build put what the tests need (set by tests/CMakeLists.txt).

namespace mold::test {
inline constexpr const char* kMolddiag = MOLD_TEST_MOLDDIAG;
inline constexpr const char* kPluginDir =
    MOLD_TEST_PLUGIN_DIR;  // the real plugins
inline constexpr const char* kBadPluginRoot =
    MOLD_TEST_BAD_PLUGIN_ROOT;  // one dir per case
inline constexpr const char* kHostilePluginRoot =
    MOLD_TEST_HOSTILE_PLUGIN_ROOT;  // one dir per case
inline constexpr const char* kFaultyPluginDir =
    MOLD_TEST_FAULTY_PLUGIN_DIR;  // the planted-fault family
inline constexpr const char* kLeakyProcess =
    MOLD_TEST_LEAKY_PROCESS;  // a stand-in server (black-box driver)
inline constexpr const char* kDataDir = MOLD_TEST_DATA_DIR;
}  // namespace mold::test
