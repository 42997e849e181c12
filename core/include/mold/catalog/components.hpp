#pragma once
/// The components of a diffusion pipeline, named once: as diffusers names a
/// model directory's folders, as models.toml lists their sizes, and as the
/// model cache names its entries. Torch-free.

namespace mold::components {

inline constexpr const char* kTextEncoder = "text_encoder";
inline constexpr const char* kTransformer = "transformer";
inline constexpr const char* kVae = "vae";

}  // namespace mold::components
