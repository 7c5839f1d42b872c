// The multi-session soak of the coordinator (coordination.hpp): 8 sessions (threads) run turns at once over
// three shared accounts, the bank that holds them and an audit log, each turn through one of the three entry
// points (static run_plan, the runtime form, json_tool_host::run), all under one local_coordinator. The
// resources are instrumented: every access checks, on entry, whether a conflicting access (access.hpp's modes)
// is in progress on the same data, and counts it as an overlap. Pass: 0 overlaps, exactly one outcome per call
// and one execution per call, every turn ends (a watchdog aborts a hung run). The control: the same sessions
// without the coordinator show overlaps (only conflicts between turns can: each turn is planned).
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/json.hpp>

namespace coordination_soak_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int sessions = 8;
constexpr int turns_per_session = 500;
constexpr int control_turns = 60;

// One piece of shared data: counts accesses in progress by mode; an entering access that conflicts with one in
// progress (access_modes_conflict: not both reads, not both appends) is an overlap.
struct monitor {
  std::mutex m;
  std::array<int, 3> active{};

  void enter(te::access_mode mode, std::atomic<long>& overlaps) {
    std::lock_guard l(m);
    for (const auto other : {te::access_mode::read, te::access_mode::write, te::access_mode::append})
      if (active[static_cast<int>(other)] > 0 && te::access_modes_conflict(mode, other)) ++overlaps;
    ++active[static_cast<int>(mode)];
  }
  void leave(te::access_mode mode) {
    std::lock_guard l(m);
    --active[static_cast<int>(mode)];
  }
};

struct world {
  std::array<monitor, 3> accounts;
  monitor log;
  std::atomic<long> overlaps{0};
  std::atomic<long> executions{0};
  std::array<std::atomic<long>, 3> balances{};
  std::atomic<long> increments{0};  // every read-modify-write that ran (lost updates: sum of balances < this)

  // An access to `m` that lasts a little (the window in which another session could overlap).
  template <class F>
  void access(monitor& m, te::access_mode mode, F&& f) {
    m.enter(mode, overlaps);
    ++executions;
    f();
    const auto until = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
    m.leave(mode);
  }
  // A read-modify-write increment of account i that takes a while between its read and its write: another
  // session's overlapping increment is lost.
  long increment(std::size_t i) {
    accounts[i].enter(te::access_mode::write, overlaps);
    ++executions;
    const long v = balances[i].load() + 1;
    const auto until = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
    balances[i].store(v);
    ++increments;
    accounts[i].leave(te::access_mode::write);
    return v;
  }
  // Reading the bank reads every account at once.
  void read_bank() {
    for (auto& a : accounts) a.enter(te::access_mode::read, overlaps);
    ++executions;
    const auto until = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
    for (auto& a : accounts) a.leave(te::access_mode::read);
  }
};

// ------------------------------------------------------------------------------------------- static tools
// Named so that every form names the same data alike: "bank", "bank/account<i>", "audit_log" (the json_tool_host
// tools name an account as a target of "bank": overlapping every account path, conservatively).
struct bank : te::resource<> {
  static constexpr std::string_view resource_name = "bank";
};
template <int I>
struct account : te::resource<bank> {
  static constexpr std::string_view resource_name = I == 0 ? "account0" : I == 1 ? "account1" : "account2";
};
struct audit_log : te::resource<> {
  static constexpr std::string_view resource_name = "audit_log";
};

template <int I>
struct get_balance {
  using side_effects = te::effects<te::reads<account<I>>, te::idempotent>;
  world* w;
  long operator()() const {
    long v = 0;
    w->access(w->accounts[I], te::access_mode::read, [&] { v = w->balances[I].load(); });
    return v;
  }
};
template <int I>
struct add_to_balance {
  using side_effects = te::effects<te::writes<account<I>>>;
  world* w;
  long operator()(long) const { return w->increment(I); }
};
struct audit {
  using side_effects = te::effects<te::appends<audit_log>>;
  world* w;
  long operator()() const {
    w->access(w->log, te::access_mode::append, [] {});
    return 0;
  }
};
struct total {
  using side_effects = te::effects<te::reads<bank>, te::idempotent>;
  world* w;
  long operator()() const {
    w->read_bank();
    return 0;
  }
};

template <int A, int B, class Options>
std::size_t static_turn(asio::thread_pool& pool, const Options& o, world& w, int shape) {
  auto ok = [](const auto&... x) { return ((x.has_value() ? std::size_t{1} : std::size_t{0}) + ...); };
  switch (shape) {
    case 0: {
      auto [x, y, z] = te::run_plan(pool, o, te::call(get_balance<A>{&w}), te::call(add_to_balance<A>{&w}, 1L),
                                    te::call(get_balance<A>{&w}));
      return ok(x, y, z);
    }
    case 1: {
      auto [x, y, z, v] = te::run_plan(pool, o, te::call(add_to_balance<A>{&w}, 1L), te::call(audit{&w}),
                                       te::call(total{&w}), te::call(add_to_balance<B>{&w}, 1L));
      return ok(x, y, z, v);
    }
    default: {
      auto [x, y, z] = te::run_plan(pool, o, te::call(get_balance<B>{&w}), te::call(audit{&w}),
                                    te::call(add_to_balance<A>{&w}, 1L));
      return ok(x, y, z);
    }
  }
}
constexpr std::size_t static_turn_size(int shape) { return shape == 1 ? 4 : 3; }

// ------------------------------------------------------------------------------------------- runtime form
struct runtime_task {
  world* w;
  int account;  // -1: the bank; -2: the log
  te::access_mode mode;
  long operator()() const {
    if (account == -1) {
      w->read_bank();
    } else if (account == -2) {
      w->access(w->log, te::access_mode::append, [] {});
    } else if (mode == te::access_mode::write) {
      w->increment(static_cast<std::size_t>(account));
    } else {
      w->access(w->accounts[account], mode, [] {});
    }
    return 0;
  }
};

te::call_description runtime_desc(int account, te::access_mode mode) {
  if (account == -1) return te::describe_runtime("total", {}, {{"bank", te::access_mode::read, {}}});
  if (account == -2) return te::describe_runtime("audit", {}, {{"audit_log", te::access_mode::append, {}}});
  return te::describe_runtime("acct", {}, {{"bank/account" + std::to_string(account), mode, std::nullopt}});
}

// ------------------------------------------------------------------------------------------- json_tool_host
using empty_registry = te::tool_registry<>;

struct json_session {
  empty_registry reg;
  te::json_tool_host<> host{reg};

  explicit json_session(world& w) {
    te::identity_policy by_account;
    by_account.target_arg = "acct";
    auto account_of = [](const json& a) { return static_cast<std::size_t>(std::stoi(a.at("acct").get<std::string>())); };
    host.add(te::dynamic_tool{"get_balance",
                              te::describe_runtime("get_balance", {}, {{"bank", te::access_mode::read, {}}}),
                              by_account},
             [&w, account_of](const te::attempt_context&, const json& a) -> json {
               const auto i = account_of(a);
               long v = 0;
               w.access(w.accounts[i], te::access_mode::read, [&] { v = w.balances[i].load(); });
               return v;
             });
    host.add(te::dynamic_tool{"add_to_balance",
                              te::describe_runtime("add_to_balance", {}, {{"bank", te::access_mode::write, {}}}),
                              by_account},
             [&w, account_of](const te::attempt_context&, const json& a) -> json {
               return w.increment(account_of(a));
             });
    host.add(te::dynamic_tool{"audit", te::describe_runtime("audit", {}, {{"audit_log", te::access_mode::append, {}}}), {}},
             [&w](const te::attempt_context&, const json&) -> json {
               w.access(w.log, te::access_mode::append, [] {});
               return 0;
             });
  }
};

struct totals {
  std::atomic<long> calls{0};
  std::atomic<long> outcomes{0};
  std::atomic<long> successes{0};
  std::atomic<long> turns{0};
};

template <class Options>
void run_session(int id, int turns, asio::thread_pool& pool, const Options& o, world& w, json_session& js,
                 totals& t) {
  std::mt19937 rng(static_cast<unsigned>(1000 + id));
  std::uniform_int_distribution<int> pick(0, 2);
  for (int turn = 0; turn < turns; ++turn) {
    const int form = pick(rng), shape = pick(rng), a = pick(rng), b = (a + 1 + pick(rng) % 2) % 3;
    if (form == 0) {
      const std::size_t n = static_turn_size(shape);
      std::size_t ok = 0;
      switch (a * 3 + b) {
        case 1: ok = static_turn<0, 1>(pool, o, w, shape); break;
        case 2: ok = static_turn<0, 2>(pool, o, w, shape); break;
        case 3: ok = static_turn<1, 0>(pool, o, w, shape); break;
        case 5: ok = static_turn<1, 2>(pool, o, w, shape); break;
        case 6: ok = static_turn<2, 0>(pool, o, w, shape); break;
        default: ok = static_turn<2, 1>(pool, o, w, shape); break;
      }
      t.calls += static_cast<long>(n);
      t.outcomes += static_cast<long>(n);  // a static turn returns exactly one outcome per call (its type)
      t.successes += static_cast<long>(ok);
    } else if (form == 1) {
      std::vector<te::call_description> d;
      std::vector<runtime_task> tasks;
      const int n = 2 + pick(rng);
      for (int k = 0; k < n; ++k) {
        const int r = std::uniform_int_distribution<int>(-2, 2)(rng);
        const auto mode = pick(rng) == 0 ? te::access_mode::write : te::access_mode::read;
        d.push_back(runtime_desc(r, mode));
        tasks.push_back({&w, r, mode});
      }
      const auto out = te::run_plan(pool, o, std::span<const te::call_description>(d), tasks);
      t.calls += n;
      t.outcomes += static_cast<long>(out.size());
      for (const auto& x : out) t.successes += x.has_value() ? 1 : 0;
    } else {
      json calls = json::array();
      const int n = 2 + pick(rng);
      static const char* const names[] = {"get_balance", "add_to_balance", "audit"};
      for (int k = 0; k < n; ++k)
        calls.push_back({{"id", std::to_string(k)},
                         {"name", names[pick(rng)]},
                         {"arguments", {{"acct", std::to_string(pick(rng))}}}});
      const auto parsed = te::parse_tool_calls(calls.dump());
      const auto out = js.host.run(pool, o, parsed, "s" + std::to_string(id) + "/t" + std::to_string(turn));
      t.calls += n;
      t.outcomes += static_cast<long>(out.size());
      for (const auto& x : out) t.successes += x.has_value() ? 1 : 0;
    }
    ++t.turns;
  }
}

// Runs `sessions` sessions of `turns` turns; aborts the process if they do not end within `limit` (a deadlock).
template <class Options>
void soak(int turns, const Options& o, world& w, totals& t, std::chrono::seconds limit) {
  asio::thread_pool pool(4);
  json_session js(w);
  std::mutex m;
  std::condition_variable cv;
  int done = 0;
  std::thread watchdog([&] {
    std::unique_lock l(m);
    if (!cv.wait_for(l, limit, [&] { return done == sessions; })) {
      std::fprintf(stderr, "coordination soak: %d of %d sessions ended within %lld s (deadlock?); aborting\n", done,
                   sessions, static_cast<long long>(limit.count()));
      std::abort();
    }
  });
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s)
    threads.emplace_back([&, s] {
      run_session(s, turns, pool, o, w, js, t);
      std::lock_guard l(m);
      ++done;
      cv.notify_all();
    });
  for (auto& th : threads) th.join();
  watchdog.join();
}

}  // namespace

TEST(CoordinationSoak, EightSessionsOverSharedAccountsNeverOverlap) {
  world w;
  totals t;
  te::local_coordinator coord;
  const auto start = std::chrono::steady_clock::now();
  soak(turns_per_session, te::run_options{}.with(coord), w, t, std::chrono::seconds(600));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(t.turns.load(), sessions * turns_per_session);
  EXPECT_EQ(w.overlaps.load(), 0) << "conflicting accesses of different turns overlapped";
  EXPECT_EQ(t.outcomes.load(), t.calls.load()) << "exactly one outcome per call";
  EXPECT_EQ(t.successes.load(), t.calls.load()) << "no call failed";
  EXPECT_EQ(w.executions.load(), t.calls.load()) << "every call ran exactly once";
  EXPECT_EQ(coord.queued(), 0u) << "every grant was released";
  EXPECT_EQ(w.balances[0] + w.balances[1] + w.balances[2], w.increments.load()) << "no increment was lost";
  std::printf("coordination soak: %d sessions x %d turns, %ld calls in %lld ms, 0 overlaps expected, %ld seen\n",
              sessions, turns_per_session, t.calls.load(), static_cast<long long>(ms.count()), w.overlaps.load());
}

TEST(CoordinationSoak, ControlWithoutTheCoordinatorOverlaps) {
  world w;
  totals t;
  soak(control_turns, te::run_options{}, w, t, std::chrono::seconds(300));
  EXPECT_EQ(t.outcomes.load(), t.calls.load());
  EXPECT_GT(w.overlaps.load(), 0) << "the control shows no overlap: the soak could not detect one";
  EXPECT_LT(w.balances[0] + w.balances[1] + w.balances[2], w.increments.load()) << "the control lost no increment";
  std::printf("coordination soak control: %ld of %ld increments lost\n",
              w.increments.load() - (w.balances[0] + w.balances[1] + w.balances[2]), w.increments.load());
  std::printf("coordination soak control: %d sessions x %d turns without a coordinator: %ld overlaps\n", sessions,
              control_turns, w.overlaps.load());
}

}  // namespace coordination_soak_test_ns
