#pragma once
/// Moved: the denoiser interface is mold/model/denoiser.hpp. This path keeps
/// working for plugins built against mold 0.1 and goes in the next minor
/// version.
#include "mold/model/denoiser.hpp"
