// Two agent hosts that share one counter, coordinated through etcd (docs/coordination.md, "Across machines:
// etcd"). Start etcd as the docs say (one member is enough):
//
//   etcd --data-dir /tmp/etcd-example --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 &
//   TOOL_EFFECTS_ETCD_ENDPOINTS=http://127.0.0.1:2379 ./example_etcd_fleet
//
// As a test it uses the three-member cluster of the ctest fixture etcd_cluster; it exits 77 (skipped) when no
// etcd is given. Each host here is a thread with a coordinator of its own: the same as two processes on two
// machines, as far as etcd can tell (each has its own lease).
#include <tool_effects/dispatch.hpp>
#include <tool_effects/etcd.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

namespace te = tool_effects;

struct counter : te::resource<> {
  static constexpr std::string_view resource_name = "counter";
};

std::atomic<long> value{0};  // the shared resource: a read-modify-write with a window between read and write

// A tool declares its effects once; the coordinator derives what to lock from them.
struct increment {
  using side_effects = te::effects<te::writes<counter>>;
  long operator()(const te::attempt_context& ctx) const {
    const long v = value.load() + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    value.store(v);  // without the coordinator, another host's increment in between is lost
    return static_cast<long>(ctx.fencing_token);  // the etcd revision that fences this grant
  }
};

std::vector<std::string> endpoints() {
  std::vector<std::string> out;
  if (const char* e = std::getenv("TOOL_EFFECTS_ETCD_ENDPOINTS")) {
    std::stringstream s(e);
    for (std::string x; std::getline(s, x, ',');) out.push_back(x);
    return out;
  }
#ifdef TOOL_EFFECTS_ETCD_STATE_DIR
  std::ifstream in(std::string(TOOL_EFFECTS_ETCD_STATE_DIR) + "/cluster.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("endpoints")) out = j["endpoints"].get<std::vector<std::string>>();
#endif
  return out;
}

int main() {
  te::etcd::coordinator_options o;
  o.client.endpoints = endpoints();
  if (o.client.endpoints.empty()) {
    std::puts("no etcd: set TOOL_EFFECTS_ETCD_ENDPOINTS");
    return 77;
  }
  o.prefix = "example/" + std::to_string(std::random_device{}()) + "/";
  o.lease.ttl = std::chrono::seconds(5);  // a crashed host's grants pass on after at most this long

  constexpr int turns = 20;
  std::vector<long> last_token(2, 0);
  std::atomic<bool> tokens_grow{true};
  std::vector<std::thread> hosts;
  for (int h = 0; h < 2; ++h) {
    hosts.emplace_back([&, h] {
      te::etcd::etcd_coordinator coordinator(o);  // one per host process, shared by its sessions
      boost::asio::thread_pool pool(2);
      for (int t = 0; t < turns; ++t) {
        auto [r] = te::run_plan(pool, te::run_options{}.with(coordinator), te::call(increment{}));
        if (!r.has_value()) return;
        if (r.value() <= last_token[h]) tokens_grow = false;
        last_token[h] = r.value();
      }
    });
  }
  for (auto& t : hosts) t.join();
  std::printf("counter %ld of %d; fencing tokens grew: %s\n", value.load(), 2 * turns, tokens_grow ? "yes" : "no");
  return value == 2 * turns && tokens_grow ? 0 : 1;
}
