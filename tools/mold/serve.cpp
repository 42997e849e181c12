// mold serve: the HTTP API (docs/http-api.md) over one device. Models stay
// resident between requests under their model cache; one device job at a
// time from a bounded queue; admission by memory before a job runs; metrics
// for Prometheus at /metrics; one JSON log line per request on stderr.

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <mold/base/build_config.hpp>
#include <mold/base/bytes.hpp>
#include <mold/base/error.hpp>
#include <mold/base/file_io.hpp>
#include <mold/base/text.hpp>
#include <mold/net/http_server.hpp>
#include <mold/net/server_address.hpp>
#include <mold/net/server_metrics.hpp>
#include <mold/tensor/compute_threads.hpp>
#include <mutex>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/host.hpp"
#include "common/options.hpp"
#include "server/api_routes.hpp"
#include "server/generation_service.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;
namespace net = mold::net;

namespace mold_cli {

namespace {

struct ServeRequest {
  tools::HostOptions host;
  ServeModels models;
  net::ServerOptions server;
  std::string token;
  std::string max_body = "64 MiB";
  int port = net::kDefaultPort;
  /// Room behind the running job for an OpenAI request's n = 10 images (9)
  /// and a few other clients'.
  int queue = 16;
  int read_timeout = 30;
  int write_timeout = 60;
  int drain_timeout = 30;
  int max_connections = 1024;
  int io_threads = 2;
  int compute_threads = 0;  ///< 0: libtorch's own default
  int heartbeat = 15;
  std::string port_file;
  bool quiet = false;
};

tools::Parsed<ServeRequest> parse_serve_options(
    const std::vector<std::string>& args) {
  tools::Parsed<ServeRequest> parsed;
  ServeRequest& r = parsed.request;
  po::options_description options(
      "mold serve [options]\n\n"
      "Serves the HTTP API of docs/http-api.md: POST /api/generate (a PNG), "
      "POST\n"
      "/api/generate/stream (server-sent events), GET /api/status, "
      "/api/memory,\n"
      "/api/models, /health, /metrics (Prometheus). One device job at a time; "
      "up to\n"
      "--queue more wait (then 503 QUEUE_FULL). Admission refuses a "
      "request before it\n"
      "runs: 503 INSUFFICIENT_MEMORY (Retry-After) when it does not fit now "
      "but would\n"
      "once memory frees, 422 NEVER_FITS when this device could never hold "
      "it.\n"
      "Listens on loopback\n"
      "unless --bind says otherwise; then --token (or MOLD_API_KEY) is "
      "required.\n"
      "SIGINT/SIGTERM: stop taking jobs, finish the queue (--drain-timeout), "
      "exit 0.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "bind", po::value(&r.server.bind)->default_value("127.0.0.1"),
      "address to listen on (0.0.0.0 or :: for every interface)");
  tools::add_ranged_int(options, "port", &r.port, 0, 65535,
                        "port (0: any free one; see --port-file)",
                        net::kDefaultPort);
  options.add_options()(
      "token", po::value(&r.token),
      "API key clients must send (default: MOLD_API_KEY); required when not "
      "bound to loopback")("max-body",
                           po::value(&r.max_body)->default_value(r.max_body),
                           "largest request body, e.g. \"64 MiB\"");
  tools::add_ranged_int(options, "queue", &r.queue, 0, 100000,
                        "requests that may wait for the device (an OpenAI "
                        "request of n images takes n - 1)",
                        r.queue);
  tools::add_ranged_int(options, "read-timeout", &r.read_timeout, 1, 3600,
                        "seconds a request may take to arrive", 30);
  tools::add_ranged_int(options, "write-timeout", &r.write_timeout, 1, 3600,
                        "seconds one write to a client may take", 60);
  tools::add_ranged_int(options, "drain-timeout", &r.drain_timeout, 0, 86400,
                        "seconds to finish queued work on SIGTERM", 30);
  tools::add_ranged_int(options, "max-connections", &r.max_connections, 1,
                        100000, "open connections at most", 1024);
  tools::add_ranged_int(options, "io-threads", &r.io_threads, 1, 64,
                        "threads reading and writing connections", 2);
  tools::add_ranged_int(
      options, "threads", &r.compute_threads, 1, 4096,
      "compute threads: libtorch's and the BLAS's pools (default: "
      "OMP_NUM_THREADS, else the CPUs this process may run on: its affinity "
      "mask, capped by a cgroup CPU quota)");
  tools::add_ranged_int(options, "heartbeat", &r.heartbeat, 1, 3600,
                        "seconds between keep-alive comments on event streams",
                        15);
  options.add_options()(
      "tiny", po::bool_switch(&r.models.tiny),
      "serve every model at its tiny architecture with seeded weights")(
      "model-dir", po::value(&r.models.model_dirs)->composing(),
      "a model directory, or a directory of them (repeatable)")(
      "dtype", po::value(&r.models.dtype),
      "float32, float16 or bfloat16 (default: bfloat16; float32 with --tiny)")(
      "backend", po::value(&r.models.backend)->default_value("cpu"),
      "the device: cpu, cuda, ...")(
      "port-file", po::value(&r.port_file),
      "write the port listened on to this file once listening")(
      "quiet", po::bool_switch(&r.quiet), "no log line per request");
  tools::add_host_options(options, r.host);
  if (tools::wants_help(args)) {
    parsed.help = tools::help_text(options);
    return parsed;
  }
  tools::parse_args(args, options);
  tools::refuse_tiny_with_model_dirs(r.models.tiny, r.models.model_dirs);
  const auto body = mold::try_parse_bytes(r.max_body);
  if (!body || *body < 1024 || *body > (mold::Bytes(4) << 30))
    throw tools::UsageError(fmt::format(
        "--max-body '{}': give a size from 1 KiB to 4 GiB, e.g. \"64 MiB\"",
        r.max_body));
  r.server.max_body = std::size_t(*body);
  r.server.port = static_cast<unsigned short>(r.port);
  r.server.read_timeout = std::chrono::seconds(r.read_timeout);
  r.server.write_timeout = std::chrono::seconds(r.write_timeout);
  r.server.max_connections = std::size_t(r.max_connections);
  r.server.threads = r.io_threads;
  r.server.server_name = fmt::format("mold/{}", MOLD_VERSION);
  if (r.token.empty())
    if (const char* key = std::getenv("MOLD_API_KEY")) r.token = key;
  // localhost is the loopback by definition (RFC 6761), no lookup needed.
  if (mold::ascii_lower(r.server.bind) == "localhost")
    r.server.bind = "127.0.0.1";
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(r.server.bind, ec);
  if (ec)
    throw tools::UsageError(fmt::format(
        "--bind '{}': not an IP address; give one such as 127.0.0.1, "
        "0.0.0.0 or localhost",
        r.server.bind));
  if (!address.is_loopback() && r.token.empty())
    throw tools::UsageError(fmt::format(
        "--bind {} lets other machines in: give --token KEY (or set "
        "MOLD_API_KEY) so that only clients with the key are served",
        r.server.bind));
  return parsed;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      now.time_since_epoch())
                      .count() %
                  1000;
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", text, int(ms));
}

/// Raises the soft limit on open files to the hard one, and lowers
/// `connections` to what fits under it with kReservedFiles left for the
/// models' files, the plugins and the log; says so on stderr when it lowers
/// it. Accepts beyond the limit are answered 503 by the server itself.
constexpr std::size_t kReservedFiles = 128;
std::size_t connections_within_file_limit(std::size_t connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return connections;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY) return connections;
  const std::size_t files = std::size_t(limit.rlim_cur);
  const std::size_t fit =
      files > 2 * kReservedFiles ? files - kReservedFiles : files / 2;
  if (connections <= fit) return connections;
  std::cerr << fmt::format(
      "mold serve: --max-connections {} lowered to {}: the open-file limit is "
      "{} (ulimit -n; raise its hard limit for more)\n",
      connections, fit, files);
  return fit;
}

int serve(const ServeRequest& request) {
  // The signals are taken by this thread alone (sigwait), so every thread
  // started from here on has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const tools::Host host = tools::open_host(request.host);
  tools::warn_load_errors(*host.registry, "molddiag plugins");
  net::ServerMetrics metrics;
  // Every compute pool at one count, before the worker starts.
  const mold::ThreadCounts threads =
      mold::start_compute_threads(request.compute_threads);
  GenerationService service(host, request.models, std::size_t(request.queue),
                            metrics);
  ApiSettings settings;
  settings.token = request.token;
  settings.heartbeat = std::chrono::seconds(request.heartbeat);
  ApiRoutes routes(service, metrics, settings);

  std::mutex log_mutex;
  net::ServerOptions options = request.server;
  options.max_connections =
      connections_within_file_limit(options.max_connections);
  const bool quiet = request.quiet;
  options.log = [&](const net::RequestLogEntry& e) {
    metrics.observe_request(ApiRoutes::route_of(e.path),
                            e.method.empty() ? "-" : e.method, e.status,
                            e.seconds);
    if (quiet) return;
    nlohmann::json line = {
        {"time", utc_now()},      {"request_id", e.request_id},
        {"method", e.method},     {"path", e.path},
        {"status", e.status},     {"seconds", e.seconds},
        {"bytes_in", e.bytes_in}, {"bytes_out", e.bytes_out},
        {"remote", e.remote}};
    if (e.stream) line["stream"] = true;
    if (!e.error.empty()) line["error"] = e.error;
    const std::string text =
        line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard<std::mutex> lock(log_mutex);
    std::cerr << text << "\n" << std::flush;
  };
  net::HttpServer server(options, [&](net::HttpRequest r,
                                      std::shared_ptr<net::ResponseChannel> c) {
    routes.handle(std::move(r), std::move(c));
  });
  server.start();
  if (!request.port_file.empty())
    mold::write_file_atomically(
        request.port_file, "port file",
        [&](std::ostream& out) { out << server.port() << "\n"; });
  std::cerr << fmt::format(
                   "mold serve: listening on http://{} ({}, {}; {}; queue "
                   "{}{}{})",
                   server.endpoint(), service.backend_name(),
                   service.device_name(), mold::describe(threads),
                   request.queue,
                   request.token.empty() ? "" : "; API key required",
                   request.models.tiny ? "; tiny seeded models" : "")
            << std::endl;

  int signal = 0;
  sigwait(&signals, &signal);
  std::cerr << fmt::format("mold serve: {}: finishing queued work (up to {} s)",
                           signal == SIGINT ? "SIGINT" : "SIGTERM",
                           request.drain_timeout)
            << std::endl;
  routes.set_draining();
  const bool drained =
      service.drain(std::chrono::seconds(request.drain_timeout));
  service.stop();
  routes.stop();
  server.stop();
  std::cerr << (drained
                    ? "mold serve: stopped\n"
                    : "mold serve: stopped with work left (drain timeout)\n");
  return tools::kOk;
}

}  // namespace

int serve_command(const std::vector<std::string>& args) {
  const auto parsed = parse_serve_options(args);
  if (parsed.help) {
    std::cout << *parsed.help;
    return tools::kOk;
  }
  return serve(parsed.request);
}

}  // namespace mold_cli
