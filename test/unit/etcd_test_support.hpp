// Shared by the tests that run against the three-member etcd cluster of the ctest fixture etcd_cluster
// (test/etcd/cluster.py writes <TOOL_EFFECTS_ETCD_STATE_DIR>/cluster.json: the members' pids and endpoints):
// the cluster's state and endpoints, and the fenced test resource of the fault tests.
#ifndef TOOL_EFFECTS_TEST_ETCD_TEST_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_ETCD_TEST_SUPPORT_HPP

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/etcd.hpp>

#include "scratch_dirs.hpp"

namespace etcd_test {

// cluster.json as the fixture wrote it; an empty object when there is none (no etcd: the tests skip).
inline nlohmann::json cluster() {
  std::ifstream in(std::string(TOOL_EFFECTS_ETCD_STATE_DIR) + "/cluster.json");
  if (!in) return nlohmann::json::object();
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

// The members' client URLs (empty without a cluster).
inline std::vector<std::string> endpoints() {
  const auto j = cluster();
  const auto e = j.find("endpoints");
  return e != j.end() && e->is_array() ? e->get<std::vector<std::string>>() : std::vector<std::string>{};
}

// Coordinator options on the fixture's cluster: `prefix`, a lease of `ttl` kept alive every ttl / 4.
inline tool_effects::etcd::coordinator_options coordinator_options(const std::string& prefix, std::chrono::seconds ttl) {
  tool_effects::etcd::coordinator_options o;
  o.client.endpoints = endpoints();
  o.prefix = prefix;
  o.lease.ttl = ttl;
  o.lease.keepalive = std::chrono::milliseconds(ttl) / 4;
  return o;
}

// A key prefix no other run uses: "<tag>/<random>/".
inline std::string fresh_prefix(const std::string& tag) { return tag + "/" + std::to_string(std::random_device{}()) + "/"; }

// A new, empty directory <tmp>/<tag>_<pid>_<n>, removed when the test process exits.
inline std::string temp_dir(const std::string& tag) {
  static std::atomic<int> n{0};
  return te_test::scratch_dir(tag, std::to_string(n++)).string();
}

// A fenced test resource: a file holding "<largest token> <value>"; a write with a smaller token than the
// largest seen is refused (false), as a storage system that checks fencing tokens would refuse it.
inline bool fenced_write(const std::string& path, std::uint64_t token, long value) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return false;
  ::flock(fd, LOCK_EX);
  char buf[64] = {};
  const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  unsigned long long last = 0;
  long old = 0;
  if (n > 0) std::sscanf(buf, "%llu %ld", &last, &old);
  bool ok = token >= last;
  if (ok) {
    const auto s = std::to_string(token) + " " + std::to_string(value) + "\n";
    ok = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, s.data(), s.size(), 0) == static_cast<ssize_t>(s.size());
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

}  // namespace etcd_test

#endif  // TOOL_EFFECTS_TEST_ETCD_TEST_SUPPORT_HPP
