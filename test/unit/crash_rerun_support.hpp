// The kill-and-rerun suite of a turn journal, shared by sqlite_crash_test.cpp and etcd_journal_test.cpp: a
// child process runs turns through json_tool_host with a journal and is SIGKILLed at a random moment; then the
// same turns run again in this process (same scopes, same journal). The tools' non-idempotent effects are
// recorded in a file outside the journal (appended and fsynced before the tool returns). Pass, for every kill:
// every non-idempotent effect happened at most once; every call that had ended before the kill is replayed, not
// re-run; every non-idempotent call the kill left in doubt is reported as in_doubt. The control: the same re-run
// without the journal repeats effects.
//
// A backend says where a run's journal lives and how to open and read it:
//   std::string location(const fs::path& dir, int run);         a fresh journal for run `run` (dir is empty)
//   void with_journal(const std::string& location, F f);         f(journal&) on an open journal there
//   std::map<std::string, int> states(const std::string& loc);  key -> 0 started / 1 ended, read directly
//   std::chrono::milliseconds settle;                            wait after a kill before reading the journal
//   std::string describe;                                        for the summary line
#ifndef TOOL_EFFECTS_TEST_CRASH_RERUN_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_CRASH_RERUN_SUPPORT_HPP

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/dispatch.hpp>
#include <tool_effects/json.hpp>

namespace crash_rerun {

namespace te = tool_effects;
namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr int turns = 4;

// Appends one line durably (the effect happened once this returns).
inline void append_line(const fs::path& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the effects file");
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
    ::close(fd);
    throw std::runtime_error("cannot write the effects file");
  }
  ::fsync(fd);
  ::close(fd);
}

// A host with two non-idempotent tools (their effects go to the effects file) and one idempotent read.
struct session {
  fs::path effects;
  std::atomic<int> executed{0};
  std::mutex m;
  std::multiset<std::string> executed_keys;
  te::tool_registry<> reg;
  te::json_tool_host<> host{reg};

  explicit session(fs::path effects_file, bool slow) : effects(std::move(effects_file)) {
    auto effect = [this, slow](std::string name, bool durable_effect) {
      return [this, slow, name, durable_effect](const te::attempt_context& ctx, const json& a) -> json {
        {
          std::lock_guard l(m);
          executed_keys.insert(ctx.idempotency_key);
        }
        ++executed;
        if (slow) std::this_thread::sleep_for(std::chrono::microseconds(200 + (std::hash<std::string>{}(ctx.idempotency_key) % 800)));
        if (durable_effect) append_line(effects, ctx.idempotency_key);
        return json{{"tool", name}, {"args", a}};
      };
    };
    host.add(te::dynamic_tool{"send_email",
                              te::describe_runtime("send_email", {te::effect::network}, {{"mailbox", te::access_mode::append, {}}}),
                              {}},
             effect("send_email", true));
    host.add(te::dynamic_tool{"charge_card",
                              te::describe_runtime("charge_card", {te::effect::network}, {{"ledger", te::access_mode::write, {}}}),
                              {}},
             effect("charge_card", true));
    host.add(te::dynamic_tool{"get_balance",
                              te::describe_runtime("get_balance", {te::effect::idempotent}, {{"ledger", te::access_mode::read, {}}}),
                              {}},
             effect("get_balance", false));
  }
};

inline const std::vector<te::tool_call>& turn_calls() {
  static const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "send_email", "arguments": {"to": "alice"}},
    {"id": "2", "name": "get_balance", "arguments": {}},
    {"id": "3", "name": "charge_card", "arguments": {"amount": 5}},
    {"id": "4", "name": "send_email", "arguments": {"to": "bob"}},
    {"id": "5", "name": "get_balance", "arguments": {"again": true}}
  ])");
  return calls;
}

template <class Options>
std::vector<std::vector<te::outcome<json>>> run_turns(session& s, const Options& o) {
  boost::asio::thread_pool pool(2);
  std::vector<std::vector<te::outcome<json>>> out;
  for (int t = 0; t < turns; ++t) out.push_back(s.host.run(pool, o, turn_calls(), "turn-" + std::to_string(t)));
  return out;
}

inline std::map<std::string, int> effect_counts(const fs::path& file) {
  std::map<std::string, int> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ++out[line];
  return out;
}

inline bool is_in_doubt(const te::outcome<json>& o) {
  if (!o.has_error()) return false;
  try {
    std::rethrow_exception(o.error());
  } catch (const te::call_failure& f) {
    return f.reason() == te::failure_reason::in_doubt;
  } catch (...) {
    return false;
  }
}

// Runs the turns with the backend's journal at `location` in a child process; kills it after `delay` (never,
// if negative); returns whether it was killed.
template <class Backend>
bool child_run(Backend& b, const std::string& location, const fs::path& effects, std::chrono::microseconds delay) {
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    try {
      session s(effects, true);
      b.with_journal(location, [&](auto& journal) { (void)run_turns(s, te::run_options{}.with(journal)); });
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  if (delay.count() >= 0) {
    std::this_thread::sleep_for(delay);
    ::kill(child, SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) return true;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the child failed on its own");
  return false;
}

// The suite: `kills` runs killed mid-run (at most 5 × kills attempts), each re-run and checked.
template <class Backend>
void kill_and_rerun(Backend& b, const fs::path& root, int kills) {
  std::mt19937 rng(20261125);
  // How long an uninterrupted run takes: kills land uniformly within it.
  const auto t0 = std::chrono::steady_clock::now();
  fs::create_directories(root / "probe");
  ASSERT_FALSE(child_run(b, b.location(root / "probe", -1), root / "probe" / "effects.log", std::chrono::microseconds(-1)));
  const auto full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  fs::remove_all(root / "probe");
  long replayed_total = 0, in_doubt_total = 0, rerun_total = 0, ended_before_total = 0;
  int killed_mid_turn = 0;
  int runs = 0;
  for (int k = 0; killed_mid_turn < kills && k < 5 * kills; ++k, ++runs) {
    const fs::path dir = root / std::to_string(k);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string location = b.location(dir, k);
    const fs::path effects = dir / "effects.log";
    const auto delay = std::chrono::microseconds(
        std::uniform_int_distribution<long>(0, static_cast<long>(full.count() * 8 / 10))(rng));
    if (child_run(b, location, effects, delay)) ++killed_mid_turn;
    // What the dead child had sent may still be applied (a remote journal): let it settle, so that the
    // snapshot below is what the re-run will find.
    std::this_thread::sleep_for(b.settle);

    const auto before = b.states(location);
    const auto effects_before = effect_counts(effects);
    // The same turns again, in this process.
    session again(effects, false);
    std::vector<std::vector<te::outcome<json>>> out;
    b.with_journal(location, [&](auto& journal) { out = run_turns(again, te::run_options{}.with(journal)); });
    const auto states_after = b.states(location);
    for (int t = 0; t < turns; ++t) {
      for (std::size_t i = 0; i < turn_calls().size(); ++i) {
        const auto& o = out[static_cast<std::size_t>(t)][i];
        const std::string name = turn_calls()[i].name;
        const bool non_idempotent = name != "get_balance";
        // The key: the one the journal holds for this call (the identity-derived key of scope turn-t / id).
        const std::string scope = "turn-" + std::to_string(t) + "/" + turn_calls()[i].id;
        const std::string key = te::idempotency_key(te::identify(name, te::identity_policy{}, turn_calls()[i].arguments), scope);
        ASSERT_TRUE(states_after.count(key)) << key;
        const auto found = before.find(key);
        if (found != before.end() && found->second == 1) {
          ++ended_before_total;
          EXPECT_TRUE(o.replayed()) << "kill " << k << ": a call that had ended was not replayed: " << key;
          EXPECT_EQ(again.executed_keys.count(key), 0u) << "kill " << k << ": an ended call ran again: " << key;
          ++replayed_total;
        } else if (found != before.end() && non_idempotent) {
          EXPECT_TRUE(is_in_doubt(o)) << "kill " << k << ": an in-doubt non-idempotent call was not reported: " << key;
          EXPECT_EQ(again.executed_keys.count(key), 0u) << "kill " << k << ": an in-doubt call ran again: " << key;
          ++in_doubt_total;
        } else {
          EXPECT_TRUE(o.has_value()) << "kill " << k << ": " << key;
          EXPECT_FALSE(o.replayed());
          ++rerun_total;
        }
      }
    }
    for (const auto& [key, n] : effect_counts(effects)) EXPECT_LE(n, 1) << "kill " << k << ": effect twice: " << key;
    // Every effect that the killed child made is accounted for: its call has a journal record.
    for (const auto& [key, n] : effects_before) EXPECT_TRUE(before.count(key)) << "an effect without a started record";
    fs::remove_all(dir);
  }
  std::printf("crash suite (%s, an uninterrupted run takes %lld us): %d runs, %d killed mid-run; re-run: %ld calls "
              "replayed, %ld in doubt reported, %ld run (not started before the kill, or retry-safe)\n",
              b.describe.c_str(), static_cast<long long>(full.count()), runs, killed_mid_turn, replayed_total,
              in_doubt_total, rerun_total);
  EXPECT_EQ(killed_mid_turn, kills) << "too few kills landed mid-run";
  EXPECT_GT(in_doubt_total, 0) << "no kill left a call in doubt: the suite did not exercise that state";
  EXPECT_GT(ended_before_total, 0);
}

// The control: two runs of the same turns without a journal repeat non-idempotent effects.
inline void control_without_journal_repeats_effects() {
  const fs::path dir = fs::temp_directory_path() / ("te_crash_control_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path effects = dir / "effects.log";
  for (int run = 0; run < 2; ++run) {
    session s(effects, false);
    (void)run_turns(s, te::run_options{});
  }
  int repeated = 0;
  for (const auto& [key, n] : effect_counts(effects)) repeated += n > 1 ? 1 : 0;
  EXPECT_GT(repeated, 0);
  fs::remove_all(dir);
}

}  // namespace crash_rerun

#endif  // TOOL_EFFECTS_TEST_CRASH_RERUN_SUPPORT_HPP
