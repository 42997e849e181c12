#pragma once
/// The exit codes of mold's command-line tools, documented in docs/molddiag.md.
/// Shared so that every tool (molddiag today, the mold CLI later) means the
/// same thing by the same number, and scripts can rely on it.

namespace mold::tools {

/// A tool's exit status.
enum ExitCode : int {
  kOk = 0,  ///< done as asked
  kFailure =
      1,       ///< the command could not do what was asked (message on stderr)
  kUsage = 2,  ///< bad flags or values
  kPluginErrors = 3,  ///< `plugins --strict`: a plugin failed to load
  kWarnings = 3,      ///< `doctor --strict`: it warned
  kLeak = 3,          ///< `leak`: memory grows from image to image
  kParityBroken = 4,  ///< `leak`, `parity`: a phase of image k needs more
                      ///< working memory than in the first
  kUndecided = 5,     ///< `leak`: the run is too short to tell a leak
  kCarried = 6,       ///< `parity`: memory carried in from earlier
                      ///< images makes a phase of image k peak higher
  kDoesNotLoad = 7,   ///< `inspect`: read, but no component would load it
                      ///< (missing, mis-shaped or unreadable tensors)
};

}  // namespace mold::tools
