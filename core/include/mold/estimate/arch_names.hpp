#pragma once
/// The architectures' names, once: what ArchSpec, Workload::arch, the
/// estimators and the pipelines compare against. Torch-free.

namespace mold::archs {

inline constexpr const char* kDefault = "default";  ///< the published model
inline constexpr const char* kTiny = "tiny";      ///< small: tests, seeded runs
inline constexpr const char* kConfig = "config";  ///< from a config.json

}  // namespace mold::archs
