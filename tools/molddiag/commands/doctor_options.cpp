// molddiag doctor's options (doctor_options.hpp).

#include "doctor_options.hpp"

namespace po = boost::program_options;
namespace tools = mold::tools;

namespace molddiag {

tools::Parsed<DoctorRequest> parse_doctor_options(
    const std::vector<std::string>& args) {
  tools::Parsed<DoctorRequest> parsed;
  DoctorRequest& r = parsed.request;
  int rows = 0, in = 0, out = 0;
  bool no_gemm = false;
  po::options_description options(
      "molddiag doctor [--json] [--strict] [--no-gemm] [--gemm-rows N] "
      "[--gemm-in N] [--gemm-out N]\n\n"
      "What mold computes with on this machine: libtorch's version and "
      "threads, the BLAS\n"
      "library its float32 matrix products call (found in this process), and "
      "the rate of one\n"
      "matrix product (at::linear of a [rows, in] input by an [out, in] "
      "weight) in float32\n"
      "and bfloat16. Warns when the BLAS is the reference one.\n"
      "Exit: 0 reported; 3 with --strict when there is a warning; 2 usage "
      "error.\n\n"
      "options");
  options.add_options()("help,h", "this help")(
      "json", po::bool_switch(&r.json),
      "print JSON (fields in docs/molddiag.md)")(
      "strict", po::bool_switch(&r.strict), "exit 3 when there is a warning")(
      "no-gemm", po::bool_switch(&no_gemm), "skip the matrix-product timing");
  tools::add_host_options(options, r.host);
  tools::add_ranged_int(options, "gemm-rows", &rows, 1, 65536,
                        "rows (tokens) of the timed product", 256);
  tools::add_ranged_int(options, "gemm-in", &in, 1, 65536,
                        "input features of the timed product", 1024);
  tools::add_ranged_int(options, "gemm-out", &out, 1, 65536,
                        "output features of the timed product", 1024);
  const auto vm = tools::parse_args(args, options);
  if (vm.count("help")) parsed.help = tools::help_text(options);
  r.gemm = !no_gemm;
  r.gemm_rows = rows;
  r.gemm_in = in;
  r.gemm_out = out;
  return parsed;
}

}  // namespace molddiag
