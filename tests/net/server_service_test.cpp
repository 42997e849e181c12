// mold serve's device side in-process (tools/mold/server/): the queue, drain,
// unload, admission and the one exception map, driven with a fake family whose
// pipeline blocks until the test lets it finish. The real mold serve on
// loopback is tested end to end in serve_test.cpp.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mold/base/error.hpp>
#include <mold/cache/simulated_backend.hpp>
#include <mold/net/api_error.hpp>
#include <mold/plugin/registrar.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/generation_service.hpp"
#include "server/job_queue.hpp"
#include "support/aten_for_tests.hpp"
#include "support/wait.hpp"

using namespace mold_cli;
using namespace std::chrono_literals;
using Json = nlohmann::json;

namespace {

/// Jobs of the fake pipeline wait here until the test opens it.
struct JobGate {
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;
  bool open = false;

  void enter() {
    std::unique_lock<std::mutex> lock(mutex);
    ++started;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
  }
  void wait_started(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, 10s, [&] { return started >= n; }));
  }
  void let_go() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    changed.notify_all();
  }
};

JobGate* gate = nullptr;  // the running test's

/// The "shared" backend: a device of 1 GiB of which other processes hold
/// 600 MiB.
constexpr mold::Bytes kSharedDevice = mold::Bytes(1) << 30;
constexpr mold::Bytes kOtherProcesses = mold::Bytes(600) << 20;
std::atomic<int> steps_run{0};

/// The prompt says what the job does: "wait" blocks on the gate, "invalid"
/// and "crash" throw, "huge" plans a phase no device can hold.
class FakePipeline final : public mold::Pipeline {
 public:
  std::string family() const override { return "fake"; }
  std::string model() const override { return "fake-model"; }
  std::string variant() const override { return "v"; }
  bool seeded_weights() const override { return true; }
  std::string describe_weights() const override { return "none"; }
  std::vector<std::shared_ptr<mold::CachedComponent>> components()
      const override {
    return {};
  }
  mold::GenerateRequest resolve(
      const mold::GenerateRequest& request) const override {
    mold::GenerateRequest r = request;
    if (!r.width) r.width = 16;
    if (!r.height) r.height = 16;
    if (!r.steps) r.steps = 1;
    return r;
  }
  std::vector<mold::PlannedPhase> plan(
      const mold::GenerateRequest& r) const override {
    if (r.prompt != "huge" && r.prompt != "big") return {};
    mold::PlannedPhase phase;
    phase.phase = "denoise";
    phase.estimate = mold::Estimate{};
    phase.estimate->bytes = r.prompt == "big"
                                ? kSharedDevice / 2
                                : std::numeric_limits<mold::Bytes>::max() / 4;
    return {phase};
  }
  mold::GeneratedImage generate(const mold::GenerateRequest& r, std::uint64_t,
                                mold::RunContext& context) override {
    if (r.prompt == "wait") gate->enter();
    if (r.prompt == "steps") {
      // A phase of 100 steps that waits on the gate after its first.
      mold::PlannedPhase phase;
      phase.phase = "denoise";
      phase.steps = 100;
      context.run_phase(phase, [](mold::PhaseScope& scope) {
        for (int i = 1; i <= 100; ++i) {
          scope.step(i, 100);
          ++steps_run;
          if (i == 1) gate->enter();
        }
      });
    }
    if (r.prompt == "invalid")
      throw mold::InvalidArgument("--width 7: give a multiple of 16");
    if (r.prompt == "crash") throw std::runtime_error("the fake broke");
    mold::GeneratedImage image;
    image.rgb = at::zeros({3, r.height, r.width}, at::kByte);
    return image;
  }
};

/// A host whose registry has the core's cpu backend and the fake family.
mold::tools::Host fake_host() {
  mold::tools::Host host;
  host.registry = std::make_unique<mold::Registry>();
  mold::Registrar registrar("fake", "");
  mold::ModelFamily family;
  family.name = "fake";
  mold::ModelInfo model;
  model.name = "fake-model";
  model.default_variant = "v";
  model.variants.push_back({"v", {}, "test"});
  family.models.push_back(model);
  family.make_pipeline = [](const mold::PipelineOptions&) {
    return std::make_unique<FakePipeline>();
  };
  registrar.add_family(std::move(family));
  registrar.add_backend("shared", [] {
    auto device =
        std::make_shared<mold::SimulatedBackend>("Shared GPU", kSharedDevice);
    device->set_other_processes(kOtherProcesses);
    return device;
  });
  host.registry->commit(std::move(registrar), {"fake", "1", "", "", {}});
  return host;
}

/// What one job's callbacks saw.
struct Answer {
  std::promise<std::optional<ApiFailure>> done;
  std::vector<int> positions;
  bool started = false;
};

GenerationRequest request(const std::string& prompt) {
  GenerationRequest r;
  r.model_spec = "fake-model";
  r.tiny = true;
  r.generate.prompt = prompt;
  return r;
}

/// Submits `prompt`; the future is the failure (none: an image).
std::future<std::optional<ApiFailure>> submit(
    GenerationService& service, const std::string& prompt,
    std::shared_ptr<Answer> answer = std::make_shared<Answer>(),
    std::function<bool()> wanted = nullptr,
    std::optional<ApiFailure>* refused = nullptr,
    std::function<bool()> client_left = nullptr) {
  JobCallbacks callbacks;
  callbacks.on_queued = [answer](int position) {
    answer->positions.push_back(position);
  };
  callbacks.on_start = [answer] { answer->started = true; };
  callbacks.on_done = [answer](std::optional<GeneratedPng> png,
                               std::optional<ApiFailure> failure) {
    CHECK(bool(png) != bool(failure));
    answer->done.set_value(std::move(failure));
  };
  callbacks.wanted = std::move(wanted);
  callbacks.client_left = std::move(client_left);
  auto future = answer->done.get_future();
  auto no = service.submit(request(prompt), "id-" + prompt, "localhost",
                           std::move(callbacks));
  if (refused) *refused = std::move(no);
  return future;
}

ServeModels models_on(std::string backend) {
  ServeModels models;
  models.backend = std::move(backend);
  return models;
}

/// A service over the fake family, with a gate of its own.
struct FakeService {
  JobGate g;
  mold::tools::Host host = fake_host();
  mold::net::ServerMetrics metrics;
  GenerationService service;
  explicit FakeService(std::size_t queue = 4, std::string backend = "cpu")
      : service(host, models_on(std::move(backend)), queue, metrics) {
    gate = &g;
    steps_run = 0;
  }
  // A test that stopped early (a failed REQUIRE) must not leave the worker
  // waiting on the gate: the service's destructor joins it.
  ~FakeService() { g.let_go(); }
};

std::string header(const ApiFailure& f, const std::string& name) {
  for (const auto& [k, v] : f.headers)
    if (k == name) return v;
  return {};
}

}  // namespace

TEST_CASE("server in-process: a full queue answers QUEUE_FULL with Retry-After",
          "[net][server]") {
  FakeService fake(1);
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto first = submit(service, "wait");
  g.wait_started(1);
  auto waiting = std::make_shared<Answer>();
  auto second = submit(service, "ok", waiting);
  CHECK(waiting->positions == std::vector<int>{1});
  std::optional<ApiFailure> refused;
  submit(service, "ok", std::make_shared<Answer>(), nullptr, &refused);
  REQUIRE(refused);
  CHECK(refused->code == "QUEUE_FULL");
  CHECK(std::stoi(header(*refused, "Retry-After")) >= 1);
  const Json busy = service.status();
  CHECK(busy["busy"] == true);
  CHECK(busy["queue"]["depth"] == 1);
  CHECK(busy["current"]["request_id"] == "id-wait");
  g.let_go();
  CHECK_FALSE(first.get());
  CHECK_FALSE(second.get());
  const Json after = service.status();
  CHECK(after["requests"]["served"] == 2);
  CHECK(after["requests"]["rejected"] == 1);
}

TEST_CASE("server in-process: drain finishes the running job, refuses new ones",
          "[net][server]") {
  FakeService fake;
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto running = submit(service, "wait");
  g.wait_started(1);
  auto drained =
      std::async(std::launch::async, [&] { return service.drain(10s); });
  // Refused while draining, with a Retry-After: submit until the drain has
  // begun (the drain thread sets it; nothing else tells when).
  std::optional<ApiFailure> refused;
  mold::test::wait_until(
      [&] {
        submit(service, "ok", std::make_shared<Answer>(), nullptr, &refused);
        return refused.has_value();
      },
      "a submission refused while draining", 10s);
  REQUIRE(refused);
  CHECK(refused->code == "SHUTTING_DOWN");
  CHECK(header(*refused, "Retry-After") == "5");
  g.let_go();
  CHECK(drained.get());
  CHECK_FALSE(running.get());
}

TEST_CASE("job queue: one request's jobs are queued together or not at all",
          "[net][server]") {
  JobGate g;
  JobQueue queue(2, nullptr);
  std::thread worker([&] { queue.run_worker(); });
  std::vector<int> ran;
  std::mutex ran_mutex;
  const auto jobs = [&](int first, int count) {
    std::vector<JobQueue::Job> all(count);
    for (int i = 0; i < count; ++i)
      all[i].run = [&, n = first + i] {
        if (n == 0) g.enter();
        std::lock_guard<std::mutex> lock(ran_mutex);
        ran.push_back(n);
      };
    return all;
  };
  // More than one and the queue's capacity: never, whatever waits.
  const auto never = queue.submit_all(jobs(0, 4));
  REQUIRE(never);
  CHECK(never->code == "VALIDATION_ERROR");
  CHECK_THAT(never->message, Catch::Contains("4 images at once need a queue "
                                             "of 3") &&
                                 Catch::Contains("holds 2"));
  // One runs; two of three would not fit behind it: none is queued.
  REQUIRE_FALSE(queue.submit_all(jobs(0, 1)));
  g.wait_started(1);
  const auto full = queue.submit_all(jobs(10, 3));
  REQUIRE(full);
  CHECK(full->code == "QUEUE_FULL");
  CHECK_THAT(full->message, Catch::Contains("for 3 images at once"));
  CHECK(queue.snapshot().depth == 0);
  // Two fit, in order.
  REQUIRE_FALSE(queue.submit_all(jobs(20, 2)));
  CHECK(queue.snapshot().depth == 2);
  g.let_go();
  CHECK(queue.drain(std::chrono::seconds(30)));
  queue.stop();
  worker.join();
  CHECK(ran == std::vector<int>{0, 20, 21});
}

TEST_CASE("job queue: stop answers the jobs still waiting SHUTTING_DOWN",
          "[net][server]") {
  JobGate g;
  JobQueue queue(4, nullptr);
  std::thread worker([&] { queue.run_worker(); });
  bool second_ran = false;
  std::promise<ApiFailure> refused;
  JobQueue::Job first, second;
  first.run = [&] { g.enter(); };
  second.run = [&] { second_ran = true; };
  second.refuse = [&](ApiFailure f) { refused.set_value(std::move(f)); };
  REQUIRE_FALSE(queue.submit(std::move(first)));
  g.wait_started(1);
  REQUIRE_FALSE(queue.submit(std::move(second)));
  queue.stop();  // before the running job ends: the second must not start
  g.let_go();
  worker.join();
  const ApiFailure failure = refused.get_future().get();
  CHECK(failure.code == "SHUTTING_DOWN");
  CHECK(header(failure, "Retry-After") == "5");
  CHECK_FALSE(second_ran);
  CHECK(queue.snapshot().depth == 0);
  // Stopped: new control tasks are not taken.
  CHECK_FALSE(queue.control([] {}));
}

TEST_CASE("server in-process: a job whose client left is not run",
          "[net][server]") {
  FakeService fake;
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto running = submit(service, "wait");
  g.wait_started(1);
  auto gone = std::make_shared<Answer>();
  auto left = submit(service, "wait", gone, [] { return false; });
  g.let_go();
  CHECK_FALSE(running.get());
  const auto failure = left.get();
  REQUIRE(failure);
  CHECK_THAT(failure->message, Catch::Contains("went away"));
  CHECK_FALSE(gone->started);
  CHECK(g.started == 1);  // the second never reached the pipeline
}

TEST_CASE(
    "server in-process: an image stopped because another of its request "
    "failed is counted as batch_failed, not as a client that left",
    "[net][server]") {
  FakeService fake;
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto running = submit(service, "wait");
  g.wait_started(1);
  // Its sibling failed; its client is still there.
  auto stopped = submit(
      service, "wait", std::make_shared<Answer>(), [] { return false; },
      nullptr, [] { return false; });
  g.let_go();
  CHECK_FALSE(running.get());
  const auto failure = stopped.get();
  REQUIRE(failure);
  CHECK_THAT(failure->message, Catch::Contains("another image"));
  const std::string metrics = fake.metrics.serialize();
  CHECK_THAT(
      metrics,
      Catch::Contains("mold_generations_total{outcome=\"batch_failed\"} 1"));
  CHECK_THAT(metrics, !Catch::Contains("outcome=\"cancelled\"} 1"));
  CHECK_THAT(metrics, !Catch::Contains("when=\"queued\"} 1"));
  CHECK(g.started == 1);  // it never reached the pipeline
}

TEST_CASE(
    "server in-process: a queued job whose client leaves frees its slot at "
    "once",
    "[net][server]") {
  FakeService fake(1);
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto running = submit(service, "wait");
  g.wait_started(1);
  // The second waits in the queue's one slot; the transport is given what to
  // call when its client leaves.
  std::function<void()> gone;
  JobCallbacks callbacks;
  bool answered = false;
  callbacks.on_done = [&answered](std::optional<GeneratedPng>,
                                  std::optional<ApiFailure>) {
    answered = true;
  };
  callbacks.wanted = [] { return true; };
  callbacks.watch_gone = [&gone](std::function<void()> f) {
    gone = std::move(f);
  };
  REQUIRE_FALSE(service.submit(request("wait"), "id-left", "localhost",
                               std::move(callbacks)));
  REQUIRE(gone);
  std::optional<ApiFailure> refused;
  submit(service, "ok", std::make_shared<Answer>(), nullptr, &refused);
  REQUIRE(refused);
  CHECK(refused->code == "QUEUE_FULL");
  // Its client leaves while the first still runs: the slot is free now.
  gone();
  CHECK(service.status()["queue"]["depth"] == 0);
  auto waiting = std::make_shared<Answer>();
  refused.reset();
  auto third = submit(service, "ok", waiting, nullptr, &refused);
  CHECK_FALSE(refused);
  CHECK(waiting->positions == std::vector<int>{1});
  gone();  // a second close changes nothing
  const std::string metrics = fake.metrics.serialize();
  CHECK_THAT(metrics,
             Catch::Contains("mold_client_gone_total{when=\"queued\"} 1"));
  CHECK_THAT(metrics, Catch::Contains(
                          "mold_generations_total{outcome=\"cancelled\"} 1"));
  g.let_go();
  CHECK_FALSE(running.get());
  CHECK_FALSE(third.get());
  CHECK_FALSE(answered);  // a withdrawn job is never answered: nobody listens
  CHECK(g.started == 1);  // and never ran (it would have waited too)
}

TEST_CASE(
    "server in-process: a client that leaves stops its job at the next step",
    "[net][server]") {
  FakeService fake;
  JobGate& g = fake.g;
  GenerationService& service = fake.service;
  auto here = std::make_shared<std::atomic<bool>>(true);
  auto job = submit(service, "steps", std::make_shared<Answer>(),
                    [here] { return here->load(); });
  g.wait_started(1);
  *here = false;  // the client disconnects during step 1
  g.let_go();
  const auto failure = job.get();
  REQUIRE(failure);
  CHECK(failure->code == "BAD_REQUEST");
  CHECK_THAT(failure->message, Catch::Contains("the client went away"));
  CHECK(steps_run == 1);  // step 2 never ran
  CHECK_THAT(fake.metrics.serialize(),
             Catch::Contains("mold_client_gone_total{when=\"running\"} 1"));
  // /api/memory's record says what the metrics say: cancelled, not an error.
  const auto last = service.memory()["last_request"];
  INFO(last.dump());
  CHECK(last["status"] == "cancelled");
  CHECK_FALSE(last["phases"].empty());
  // The runner is the model's: the next job is not cancelled by the last.
  CHECK_FALSE(submit(service, "ok").get());
}

TEST_CASE("server in-process: failures map to API errors in one place",
          "[net][server]") {
  FakeService fake;
  GenerationService& service = fake.service;
  mold::net::ServerMetrics& metrics = fake.metrics;
  // The counters alerts watch exist from the start, at 0.
  const std::string fresh = metrics.serialize();
  CHECK_THAT(fresh, Catch::Contains("mold_ooms_total{backend=\"cpu\"} 0"));
  CHECK_THAT(
      fresh,
      Catch::Contains("mold_rejections_total{code=\"INSUFFICIENT_MEMORY\"} 0"));
  CHECK_THAT(fresh,
             Catch::Contains("mold_rejections_total{code=\"QUEUE_FULL\"} 0"));
  const auto invalid = submit(service, "invalid").get();
  REQUIRE(invalid);
  CHECK(invalid->code == "VALIDATION_ERROR");
  CHECK_THAT(invalid->message, Catch::Contains("--width 7"));
  const auto crash = submit(service, "crash").get();
  REQUIRE(crash);
  CHECK(crash->code == "INFERENCE_ERROR");
  CHECK_THAT(crash->message, Catch::Contains("the fake broke"));
  // Admission: a phase no device holds is refused before it runs, as one
  // that will never fit (no Retry-After: retrying cannot help).
  const auto huge = submit(service, "huge").get();
  REQUIRE(huge);
  CHECK(huge->code == "NEVER_FITS");
  CHECK(mold::net::status_of(huge->code) == 422);
  CHECK(header(*huge, "Retry-After").empty());
  CHECK(huge->oom->at("admission")["phase"] == "denoise");
  CHECK(huge->oom->at("admission")["retry"] == false);
  CHECK(huge->oom->at("admission")["verdict"] == "never fits");
  CHECK_THAT(huge->message, Catch::Contains("will never fit") &&
                                Catch::Contains("retrying here will not help"));
  const Json status = service.status();
  CHECK(status["requests"]["failed"] == 2);
  CHECK(status["requests"]["rejected"] == 1);
  CHECK(status["requests"]["served"] == 0);
  CHECK_THAT(metrics.serialize(),
             Catch::Contains("mold_rejections_total{code=\"NEVER_FITS\"} 1"));
  CHECK(service.memory()["busy"] == false);
}

TEST_CASE(
    "server in-process: admission tells a job that does not fit now "
    "from one that never will",
    "[net][server]") {
  // 1 GiB, 600 MiB of it held by other processes: half the device fits
  // once they are gone, not now.
  FakeService fake(4, "shared");
  GenerationService& service = fake.service;
  const auto big = submit(service, "big").get();
  REQUIRE(big);
  CHECK(big->code == "INSUFFICIENT_MEMORY");
  CHECK(mold::net::status_of(big->code) == 503);
  CHECK(header(*big, "Retry-After") == std::to_string(kRetryAfterNoRoom));
  const Json admission = big->oom->at("admission");
  CHECK(admission["retry"] == true);
  CHECK(admission["verdict"] == "not now");
  CHECK(admission["device_max_bytes"] == kSharedDevice);
  CHECK(admission["available_bytes"] == kSharedDevice - kOtherProcesses);
  CHECK(admission["needed_bytes"].get<mold::Bytes>() >= kSharedDevice / 2);
  CHECK_THAT(big->message, Catch::Contains("now") &&
                               Catch::Contains("Shared GPU") &&
                               Catch::Contains("Retry later"));
  const auto huge = submit(service, "huge").get();
  REQUIRE(huge);
  CHECK(huge->code == "NEVER_FITS");
  CHECK(huge->oom->at("admission")["device_max_bytes"] == kSharedDevice);
  // What fits is admitted.
  CHECK_FALSE(submit(service, "ok").get());
}

TEST_CASE("server in-process: unload runs between jobs and names what went",
          "[net][server]") {
  FakeService fake;
  GenerationService& service = fake.service;
  CHECK_FALSE(submit(service, "ok").get());
  CHECK(service.models()["models"][0]["loaded"].size() == 1);
  std::promise<Json> unloaded;
  service.unload("fake-model", [&](std::optional<Json> done,
                                   std::optional<ApiFailure> failure) {
    CHECK_FALSE(failure);
    unloaded.set_value(done.value_or(Json()));
  });
  const Json result = unloaded.get_future().get();
  CHECK(result["unloaded"] == Json::array({"fake-model:v+tiny"}));
  CHECK(service.models()["models"][0]["loaded"].empty());
  std::promise<std::string> unknown;
  service.unload("no-such-model",
                 [&](std::optional<Json>, std::optional<ApiFailure> failure) {
                   unknown.set_value(failure ? failure->code : "");
                 });
  CHECK(unknown.get_future().get() == "MODEL_NOT_FOUND");
}
