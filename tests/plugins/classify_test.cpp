// The classifiers registered so far (their depth is issue 3's): real texts per
// backend, and lookalikes that must never be reported as OOMs.
#include <catch2/catch.hpp>
#include <mold/base/bytes.hpp>
#include <mold/oom/oom_text.hpp>

#include "support/test_registry.hpp"

using namespace mold;

namespace {
std::optional<OomReport> classify(const std::string& text, Origin origin = {}) {
  return mold::test::real_plugins().classify({text, "", origin});
}
}  // namespace

TEST_CASE("PyTorch CUDA OOM, current format (incident 3)", "[oom]") {
  const auto r = classify(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.01 GiB. "
      "GPU 0 has a "
      "total capacity of 44.98 GiB of which 3.69 GiB is free. Of the allocated "
      "memory 38.12 "
      "GiB is allocated by PyTorch, and 2.48 GiB is reserved by PyTorch but "
      "unallocated. If "
      "reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
      "fragmentation.");
  REQUIRE(r);
  CHECK(r->backend == "cuda");
  CHECK(r->classifier == "cuda");
  CHECK(r->device == "GPU 0");
  CHECK(r->requested == parse_bytes("5.01 GiB"));
  CHECK(r->capacity == parse_bytes("44.98 GiB"));
  CHECK(r->free == parse_bytes("3.69 GiB"));
  CHECK(r->allocated == parse_bytes("38.12 GiB"));
  CHECK(r->reserved_unallocated == parse_bytes("2.48 GiB"));
  CHECK_FALSE(r->fragmentation);
}

TEST_CASE("PyTorch CUDA OOM, older format, GB meaning GiB", "[oom]") {
  const auto r = classify(
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
      "7.79 GiB total "
      "capacity; 5.47 GiB already allocated; 1.94 MiB free; 6.27 GiB reserved "
      "in total by "
      "PyTorch) If reserved memory is >> allocated memory try setting "
      "max_split_size_mb");
  REQUIRE(r);
  CHECK(r->requested == 20 * kMiB);
  CHECK(r->capacity == parse_bytes("7.79 GiB"));
  CHECK(r->allocated == parse_bytes("5.47 GiB"));
  CHECK(r->free == parse_bytes("1.94 MiB"));
  CHECK(r->reserved_unallocated ==
        parse_bytes("6.27 GiB") - parse_bytes("5.47 GiB"));
  CHECK(r->fragmentation);  // 0.8 GiB reserved-unallocated >= 20 MiB requested
}

TEST_CASE("the origin decides the backend", "[oom]") {
  Origin rocm;
  rocm.backend = "rocm";
  CHECK(classify("CUDA out of memory. Tried to allocate 1.00 GiB.", rocm)
            ->backend == "rocm");
  CHECK(classify("HIP out of memory. Tried to allocate 2.00 GiB.")->backend ==
        "rocm");
  Origin metal;
  metal.backend = "metal";
  CHECK(classify("DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")",
                 metal)
            ->backend == "metal");
  Origin remote{Origin::Kind::remote, "gpu-box:7680", "cuda", "NVIDIA H200"};
  const auto r = classify(
      "DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")", remote);
  REQUIRE(r);
  CHECK(r->backend == "cuda");
  CHECK(r->origin.kind == Origin::Kind::remote);
  CHECK(r->origin.host == "gpu-box:7680");
}

TEST_CASE("runtime library and framework OOM texts", "[oom]") {
  struct Case {
    const char* text;
    const char* backend;
    std::optional<Bytes> requested;
  };
  const Case cases[] = {
      {"RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be "
       "asynchronously "
       "reported",
       "cuda", std::nullopt},
      {"CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda",
       std::nullopt},
      {"cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "cuda", std::nullopt},
      {"cudaErrorMemoryAllocation: out of memory", "cuda", std::nullopt},
      {"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1536.00 MiB on "
       "device 0: "
       "cudaMalloc failed: out of memory",
       "cuda", 1536 * kMiB},
      {"ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size "
       "2147483648",
       "cuda", 2 * kGiB},
      {"MPS backend out of memory (MPS allocated: 17.63 GB, other allocations: "
       "1.38 GB, max "
       "allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.",
       "mps", 256 * kMiB},
      {"Error: command buffer exited with error status.\n\tThe Metal "
       "Performance Shaders "
       "operations encoded on it may not have completed.\n\tError: "
       "\n\t(null)\n\tInsufficient "
       "Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
       "metal", std::nullopt},
      {"Failed to create metal resource: MTLBuffer", "metal", std::nullopt},
      {"[enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: "
       "can't allocate "
       "memory: you tried to allocate 10737418240 bytes. Error code 12 (Cannot "
       "allocate memory)",
       "cpu", 10 * kGiB},
      {"CPU out of memory. Tried to allocate 64.00 MiB. Limit 1.00 GiB, of "
       "which 12.00 MiB is "
       "free.",
       "cpu", 64 * kMiB},
      {"vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "unknown",
       std::nullopt},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto r = classify(c.text);
    REQUIRE(r);
    CHECK(r->backend == c.backend);
    CHECK(r->requested == c.requested);
  }
  const auto mps = classify(cases[6].text);
  CHECK(mps->capacity == parse_bytes("18.13 GB"));
  // 17.63 + 1.38 GB in use exceed the 18.13 GB allowed: there is no free figure
  // to report.
  CHECK_FALSE(mps->free);
  const auto fits = classify(
      "MPS backend out of memory (MPS allocated: 10.00 GB, other allocations: "
      "2.00 GB, max "
      "allowed: 18.00 GB). Tried to allocate 8.00 GB on shared pool.");
  REQUIRE(fits);
  CHECK(fits->free == 6 * kGiB);
  CHECK(fits->pool == "shared");
}

TEST_CASE("lookalikes are not OOMs", "[oom]") {
  for (const char* text : {
           "RuntimeError: CUDA error: an illegal memory access was encountered",
           "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if "
           "you passed in a "
           "non-contiguous input.",
           "Expected all tensors to be on the same device, but found at least "
           "two devices, "
           "cuda:0 and cpu!",
           "Error: command buffer exited with error "
           "status.\n\t(null)\n\tCaused GPU Timeout "
           "Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)",
           "INTERNAL ASSERT FAILED at \"../c10/core/Allocator.cpp\":42, please "
           "report a bug",
           "cannot open /var/log/out-of-memory.log: No such file or directory",
           "failed to read /data/out_of_memory/model.safetensors",
       }) {
    INFO(text);
    CHECK_FALSE(classify(text));
  }
}

TEST_CASE("backtraces are stripped from the message shown, kept in the raw one",
          "[oom]") {
  const std::string text =
      "CUDA out of memory. Tried to allocate 2.00 GiB.\n"
      "Exception raised from malloc at "
      "../c10/cuda/CUDACachingAllocator.cpp:1438 (most recent "
      "call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 "
      "(0x7f in libc10.so)\n"
      "frame #1: <unknown function> + 0x2a3b1 (0x7f in libc10_cuda.so)\n";
  const auto r = classify(text);
  REQUIRE(r);
  CHECK(r->message == "CUDA out of memory. Tried to allocate 2.00 GiB.");
  CHECK(r->raw_message == text);
}

TEST_CASE("numbers an OOM text cannot mean are absent, never misread",
          "[oom]") {
  const auto& registry = mold::test::real_plugins();
  auto cuda = [&](const std::string& text) {
    return registry.classify({text, "", {}});
  };
  // Past 8 EiB: absent, not 1 byte (the mantissa) or 16 MiB (the number).
  for (const char* text :
       {"CUDA out of memory. Tried to allocate 1e308 GiB.",
        "CUDA out of memory. Tried to allocate 16777216 TiB."}) {
    INFO(text);
    const auto r = cuda(text);
    REQUIRE(r);
    CHECK_FALSE(r->requested.has_value());
  }
  // A negative figure is absent, not its absolute value.
  const auto negative = cuda(
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
      "capacity of 7.79 GiB of which -5 MiB is free.");
  REQUIRE(negative);
  CHECK(negative->requested == 20 * kMiB);
  CHECK_FALSE(negative->free.has_value());
  // Scientific forms that fit are read.
  const auto scientific =
      cuda("CUDA out of memory. Tried to allocate 1.5e3 MiB.");
  REQUIRE(scientific);
  CHECK(scientific->requested == 1500 * kMiB);
}
