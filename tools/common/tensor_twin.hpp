#pragma once
/// A tool as two executables. Loading libtorch costs a process about 0.7 s
/// (Debian's build pulls in ~290 libraries; 2 s under AddressSanitizer), so
/// the tool on PATH links no libtorch and runs the commands that compute no
/// tensors (listing plugins, estimates, classifying errors, reports) itself.
/// A command that computes tensors it hands to its twin, the same tool with
/// libtorch (`<prefix>/libexec/mold/<tool>-torch`), by exec: the same
/// process, arguments, environment and open files, as git hands `git foo` to
/// `git-foo`. Torch-free.

#include <filesystem>
#include <string_view>

namespace mold::tools {

/// The twin of the running tool `program`: `<directory of this
/// executable>/<MOLD_TWIN_RELATIVE_DIR>/<program>-torch`.
std::filesystem::path tensor_twin_path(std::string_view program);

/// Replaces this process by the twin of `program`, with `argv` (argv[0]
/// kept). Returns only when that fails: then it has printed, on stderr, which
/// file it could not run, why and what to do, and the caller exits with
/// kFailure.
void exec_tensor_twin(std::string_view program, char** argv);

/// What hand_to_tensor_twin() runs the twin with: main()'s `program` and
/// `argv` (kept, not copied: they live as long as the process).
void remember_command_line(std::string_view program, char** argv);

/// For a command that runs here until it reaches its tensors (its arguments
/// parsed and checked, nothing written yet): exec_tensor_twin() with the
/// remembered command line, so the twin runs the command from the start; when
/// that fails, exits with kFailure after its message.
[[noreturn]] void hand_to_tensor_twin();

}  // namespace mold::tools
