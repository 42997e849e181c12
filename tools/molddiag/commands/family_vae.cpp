#include "family_vae.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

#include "common/family_lookup.hpp"

namespace molddiag {

std::unique_ptr<mold::Vae> make_family_vae(const mold::Registry& registry,
                                           const std::string& family,
                                           const std::string& arch,
                                           std::uint64_t seed) {
  const mold::ModelFamily* f = &mold::tools::require_family(registry, family);
  if (!f->make_vae)
    throw mold::NotFound(
        fmt::format("family '{}' has no VAE in this build", family));
  return f->make_vae(arch, seed);
}

}  // namespace molddiag
