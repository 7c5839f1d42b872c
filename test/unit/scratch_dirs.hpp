// Scratch directories for tests: made empty under the system's temporary directory and removed when the test
// process that made them exits normally (one that crashes leaves them for inspection). The one helper every
// test support header uses, so that a suite run leaves nothing behind in /tmp.
#ifndef TOOL_EFFECTS_TEST_SCRATCH_DIRS_HPP
#define TOOL_EFFECTS_TEST_SCRATCH_DIRS_HPP

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace te_test {

namespace scratch_detail {
// The directories this process made. Removed at exit by the process that made them only: a forked child that
// exits through exit() (a fixture's helper process) must not remove its parent's directories.
struct registry {
  std::mutex m;
  std::vector<std::filesystem::path> dirs;
  pid_t owner = ::getpid();
  registry() = default;
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;
  ~registry() {
    if (::getpid() != owner) return;
    for (const auto& d : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(d, ignored);
    }
  }
  void add(const std::filesystem::path& d) {
    const std::lock_guard lock(m);
    for (const auto& known : dirs)
      if (known == d) return;
    dirs.push_back(d);
  }
};
inline registry& dirs() {
  static registry r;
  return r;
}
}  // namespace scratch_detail

// <tmp>/<name>, emptied (removed and made again) and removed when this process exits.
inline std::filesystem::path scratch_dir_named(const std::string& name) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  scratch_detail::dirs().add(d);
  return d;
}

// <tmp>/<tag>_<pid>_<name>: a directory of one test, in one process.
inline std::filesystem::path scratch_dir(const std::string& tag, const std::string& name) {
  return scratch_dir_named(tag + "_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace te_test

#endif  // TOOL_EFFECTS_TEST_SCRATCH_DIRS_HPP
