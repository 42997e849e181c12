#pragma once
// mold run against a server (MOLD_HOST): one request per image (seed + i)
// over the event stream, the same progress lines as a local run, the PNGs
// written here; the server's errors labelled as the server's. Torch-free.

#include <mold/net/server_address.hpp>
#include <mold/plan/generate_settings.hpp>
#include <string>
#include <vector>

namespace mold_cli {

struct RemoteRun {
  mold::net::ServerAddress server;
  std::string server_source;  ///< "MOLD_HOST=gpu-box" or "--host gpu-box"
  std::string api_key;        ///< MOLD_API_KEY
  std::string model_spec;
  mold::GenerateSettings generate;  ///< batch N, seed of the first image
  /// Source images of an edit, PNG bytes as read from --image files.
  std::vector<std::string> images_png;
  bool tiny = false;
  std::string output = ".";
  bool json = false;
};

/// The platform the client says it runs on (User-Agent): MOLD_CLIENT_PLATFORM
/// when set (tests play a Mac client with it), else the build's ("linux",
/// "macos", ...). Nothing but the User-Agent depends on it.
std::string client_platform();

/// Runs it; exit code 0. Throws mold::Error with the message to print: a
/// connection failure names the server and what to do; a server error is
/// the server's (an out-of-memory error labelled "Remote server out of
/// memory on HOST (BACKEND, DEVICE)" with the server's hints).
int run_remote(const RemoteRun& run);

}  // namespace mold_cli
