#pragma once
/// The remote driver of molddiag leak and parity: N images of a model made
/// by a mold server (POST /api/generate, seed + i each), and after each the
/// server's own record of it (GET /api/memory: every phase's memory before
/// and after, its estimate, what was parked, the memory the image left after
/// the runtime's cleanup). The profile is the same as the local driver's
/// (attribution inferred from the phases: the scopes stay on the server).
/// Torch-free.

#include <mold/net/server_address.hpp>
#include <mold/profile/memory_profile.hpp>
#include <string>

#include "profile_driver.hpp"

namespace molddiag {

struct RemoteProfileRun {
  mold::net::ServerAddress server;
  std::string api_key;  ///< MOLD_API_KEY
  ProfileRun run;       ///< model, prompt, sizes, images, seed, quiet
};

/// Throws mold::Error naming the server: unreachable, an image it could not
/// make (its message), another client's request in between (the profile
/// needs the server to itself), an answer that is not a mold server's.
mold::MemoryProfile run_remote_profile(const RemoteProfileRun& run);

}  // namespace molddiag
