// Runtime plans (plan.hpp): the kept edges of call descriptions join conflicting calls only, and order every
// conflicting pair of the pairwise rule `conflicts(call_description, call_description)` (through a path of kept
// edges); waves follow the wave rule, the typed planner agrees with the compile-time matrix, and every kept edge
// comes with a reason.
#include <cstddef>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <tool_effects/plan.hpp>

namespace plan_test_ns {

namespace te = tool_effects;
using te::access_mode;

namespace {
struct db : te::resource<> {
  static constexpr std::string_view resource_name = "db";
};
struct users : te::resource<db> {
  static constexpr std::string_view resource_name = "users";
};
struct files : te::resource<> {
  static constexpr std::string_view resource_name = "files";
};
struct read_users { using side_effects = te::effects<te::reads<users>>; };
struct write_users { using side_effects = te::effects<te::writes<users>>; };
struct read_db { using side_effects = te::effects<te::reads<db>>; };
struct append_files { using side_effects = te::effects<te::appends<files>>; };
struct unknown_tool {};

te::call_description desc(std::string name, std::vector<te::runtime_access> acc) {
  return te::describe_runtime(std::move(name), {}, std::move(acc));
}

// Reference: waves from the pairwise rule, written directly from the issue's definition.
std::vector<std::size_t> reference_waves(const std::vector<te::call_description>& calls) {
  std::vector<std::size_t> w(calls.size(), 0);
  for (std::size_t i = 0; i < calls.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (te::conflicts(calls[j], calls[i])) w[i] = std::max(w[i], w[j] + 1);
  return w;
}

// Which earlier calls each call waits for through kept edges: reach[i][j] for j < i.
std::vector<std::vector<bool>> closure(const te::runtime_plan& p) {
  std::vector<std::vector<bool>> reach(p.size(), std::vector<bool>(p.size(), false));
  for (std::size_t i = 0; i < p.size(); ++i)
    for (const std::size_t j : p.direct_predecessors(i)) {
      reach[i][j] = true;
      for (std::size_t k = 0; k < j; ++k)
        if (reach[j][k]) reach[i][k] = true;
    }
  return reach;
}

// The kept edges order exactly the pairs the pairwise rule orders: each kept edge joins conflicting calls, and
// every conflicting pair j < i is reachable.
template <class Conflict>
void expect_orders_every_conflict(const te::runtime_plan& p, std::size_t n, Conflict&& conflict) {
  ASSERT_EQ(p.size(), n);
  const auto reach = closure(p);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t j : p.direct_predecessors(i)) {
      ASSERT_TRUE(j < i && conflict(i, j)) << i << " <- " << j;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (conflict(i, j)) {
        ASSERT_TRUE(reach[i][j]) << i << " does not wait for " << j;
      }
    }
  }
}

te::call_description random_call(std::mt19937& rng, std::size_t index) {
  static const std::vector<std::string> paths{"", "db", "db/users", "db/orders", "db/users/42", "files",
                                              "files/a", "dbx", "a//b", "a/", "/a", "a"};
  static const std::vector<std::string> targets{"x", "y", "z"};
  std::uniform_int_distribution<int> pct(0, 99);
  if (pct(rng) < 5) return te::call_description{"unknown" + std::to_string(index), {}, {}, true};
  std::vector<te::runtime_access> acc;
  const int k = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int a = 0; a < k; ++a) {
    te::runtime_access x;
    x.resource = paths[std::uniform_int_distribution<std::size_t>(0, paths.size() - 1)(rng)];
    x.mode = static_cast<access_mode>(std::uniform_int_distribution<int>(0, 2)(rng));
    if (pct(rng) < 40) x.target = targets[std::uniform_int_distribution<std::size_t>(0, targets.size() - 1)(rng)];
    acc.push_back(std::move(x));
  }
  te::call_description d;
  d.name = "call" + std::to_string(index);
  d.exclusive = false;  // may have no access at all: conflicts with nobody but unknown calls
  d.accesses = std::move(acc);
  return d;
}
}  // namespace

TEST(RuntimePlan, EmptyAndSingle) {
  const auto p0 = te::plan_calls(std::span<const te::call_description>{});
  EXPECT_EQ(p0.size(), 0u);
  EXPECT_EQ(p0.wave_count(), 0u);
  std::vector<te::call_description> one{desc("w", {{"db", access_mode::write, std::nullopt}})};
  const auto p1 = te::plan_calls(one);
  EXPECT_EQ(p1.wave_count(), 1u);
  EXPECT_TRUE(p1.predecessors(0).empty());
}

TEST(RuntimePlan, HierarchyTargetsAndModes) {
  std::vector<te::call_description> calls{
      desc("read users/42", {{"db/users", access_mode::read, "42"}}),           // 0
      desc("write users/7", {{"db/users", access_mode::write, "7"}}),           // 1: other target, no wait
      desc("write users/42", {{"db/users", access_mode::write, "42"}}),         // 2: waits for 0
      desc("read users", {{"db/users", access_mode::read, std::nullopt}}),      // 3: whole table: waits 1, 2
      desc("append log", {{"log", access_mode::append, std::nullopt}}),         // 4
      desc("append log again", {{"log", access_mode::append, std::nullopt}}),   // 5: appends commute
      desc("read db", {{"db", access_mode::read, std::nullopt}}),               // 6: reads commute with 3
      desc("write dbx", {{"dbx", access_mode::write, std::nullopt}}),           // 7: "dbx" is not under "db"
      desc("write everything", {{"", access_mode::write, std::nullopt}}),       // 8: waits for all
  };
  const auto p = te::plan_calls(calls);
  EXPECT_EQ(p.predecessors(1), (std::vector<std::size_t>{}));
  EXPECT_EQ(p.predecessors(2), (std::vector<std::size_t>{0}));
  EXPECT_EQ(p.predecessors(3), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(p.predecessors(5), (std::vector<std::size_t>{}));
  EXPECT_EQ(p.predecessors(6), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(p.predecessors(7), (std::vector<std::size_t>{}));
  // 0, 1 and 2 are ordered before 8 through 3 (which waits for 1 and 2, and 2 for 0): those edges are not kept.
  EXPECT_EQ(p.predecessors(8), (std::vector<std::size_t>{3, 4, 5, 6, 7}));
  EXPECT_TRUE(p.waits_for(8, 0));
  EXPECT_EQ(p.waves(), (std::vector<std::size_t>{0, 0, 1, 2, 0, 0, 2, 0, 3}));
  EXPECT_EQ(p.wave_count(), 4u);
  EXPECT_TRUE(p.waits_for(3, 1));
  EXPECT_FALSE(p.waits_for(1, 3));  // only earlier calls
  EXPECT_FALSE(p.waits_for(2, 1));  // other targets
  EXPECT_EQ(p.edge_count(), 10u);
}

TEST(RuntimePlan, UnknownCallRunsAlone) {
  std::vector<te::call_description> calls{desc("a", {{"x", access_mode::read, std::nullopt}}),
                                          te::call_description{"mystery", {}, {}, true},
                                          desc("b", {{"y", access_mode::read, std::nullopt}})};
  const auto p = te::plan_calls(calls);
  EXPECT_EQ(p.waves(), (std::vector<std::size_t>{0, 1, 2}));
  const auto edges = te::explain(calls, p);
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0].reason, "exclusive: mystery has unknown effects");
  EXPECT_EQ(edges[1].from, 1u);
  EXPECT_EQ(edges[1].to, 2u);
}

TEST(RuntimePlan, RandomPlansAgreeWithThePairwiseRule) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, round % 10 == 0 ? 140 : 24)(rng);
    std::vector<te::call_description> calls;
    for (std::size_t i = 0; i < n; ++i) calls.push_back(random_call(rng, i));
    const auto p = te::plan_calls(calls);
    expect_orders_every_conflict(p, n, [&](std::size_t i, std::size_t j) { return te::conflicts(calls[i], calls[j]); });
    if (HasFatalFailure()) FAIL() << "round " << round;
    ASSERT_EQ(p.waves(), reference_waves(calls)) << "round " << round;
    for (const auto& e : te::explain(calls, p)) {
      ASSERT_LT(e.from, e.to);
      ASSERT_TRUE(te::conflicts(calls[e.from], calls[e.to]));
      ASSERT_FALSE(e.reason.empty());
    }
  }
}

TEST(RuntimePlan, DescribedStaticToolsMatchTheCompileTimePlan) {
  std::vector<te::call_description> calls{te::describe<read_users>(), te::describe<write_users>(),
                                          te::describe<read_db>(),    te::describe<append_files>(),
                                          te::describe<unknown_tool>(), te::describe<append_files>()};
  const auto p = te::plan_calls(calls);
  constexpr auto w = te::plan_waves<read_users, write_users, read_db, append_files, unknown_tool, append_files>();
  EXPECT_EQ(p.waves(), std::vector<std::size_t>(w.begin(), w.end()));
  const auto& m = te::conflict_matrix_v<read_users, write_users, read_db, append_files, unknown_tool, append_files>;
  expect_orders_every_conflict(p, calls.size(), [&](std::size_t i, std::size_t j) { return m(i, j); });
}

TEST(RuntimePlan, TypedPlannerUsesTheCompileTimeMatrix) {
  const auto& tools = te::conflict_matrix_v<read_users, write_users, read_db, append_files, unknown_tool>;
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 130)(rng);
    std::vector<std::size_t> types(n);
    for (auto& t : types) t = std::uniform_int_distribution<std::size_t>(0, rng() % 7 == 0 ? 4 : 3)(rng);
    const auto typed = te::plan_calls(tools, types);
    std::vector<te::call_description> calls;
    const te::call_description by_type[] = {te::describe<read_users>(), te::describe<write_users>(),
                                            te::describe<read_db>(), te::describe<append_files>(),
                                            te::describe<unknown_tool>()};
    for (const auto t : types) calls.push_back(by_type[t]);
    const auto described = te::plan_calls(calls);
    expect_orders_every_conflict(typed, n, [&](std::size_t i, std::size_t j) { return tools(types[i], types[j]); });
    expect_orders_every_conflict(described, n, [&](std::size_t i, std::size_t j) { return tools(types[i], types[j]); });
    ASSERT_EQ(closure(typed), closure(described));
    ASSERT_EQ(typed.waves(), described.waves());
  }
}

TEST(RuntimePlan, TypedPlannerRejectsABadToolIndex) {
  const auto& tools = te::conflict_matrix_v<read_users, write_users>;
  const std::vector<std::size_t> types{0, 1, 2};
  try {
    (void)te::plan_calls(tools, types);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("call 2 has tool index 2"), std::string::npos) << e.what();
  }
}

TEST(RuntimePlan, RowsConstructorValidatesSize) {
  EXPECT_THROW(te::runtime_plan(3, std::vector<std::uint64_t>(2, 0)), std::invalid_argument);
  std::vector<std::uint64_t> rows(2, 0);
  rows[0] = 0b10;
  rows[1] = 0b01;
  const te::runtime_plan p(2, rows);
  EXPECT_EQ(p.waves(), (std::vector<std::size_t>{0, 1}));
}

TEST(RuntimePlan, ReasonsNameResourceTargetAndModes) {
  const auto a = desc("write_file", {{"files", access_mode::write, "a.txt"}});
  const auto b = desc("read_file", {{"files", access_mode::read, "a.txt"}});
  const auto c = desc("read_all", {{"", access_mode::read, std::nullopt}});
  const auto d = desc("read_other", {{"files", access_mode::read, "b.txt"}});
  EXPECT_EQ(te::conflict_reason(a, b).value(), "files[a.txt]: write / read");
  EXPECT_EQ(te::conflict_reason(a, c).value(), "files[a.txt] ~ *: write / read");
  EXPECT_FALSE(te::conflict_reason(a, d).has_value());
  EXPECT_FALSE(te::conflict_reason(b, c).has_value());
  std::vector<te::call_description> calls{a, b};
  EXPECT_THROW((void)te::explain(calls, te::plan_calls(std::span<const te::call_description>(calls).first(1))),
               std::invalid_argument);
}

TEST(RuntimePlan, LargeTurnsOrderEveryConflict) {
  std::mt19937 rng(99);
  std::vector<te::call_description> calls;
  for (std::size_t i = 0; i < 512; ++i) calls.push_back(random_call(rng, i));
  const auto p = te::plan_calls(calls);
  expect_orders_every_conflict(p, calls.size(), [&](std::size_t i, std::size_t j) { return te::conflicts(calls[i], calls[j]); });
  EXPECT_EQ(p.waves(), reference_waves(calls));
}

TEST(RuntimePlan, ChainsKeepOneEdgePerCall) {
  // n writers of one resource: n - 1 kept edges (the full relation has n (n - 1) / 2).
  std::vector<te::call_description> calls(300, desc("w", {{"db", access_mode::write, std::nullopt}}));
  const auto p = te::plan_calls(calls);
  EXPECT_EQ(p.edge_count(), 299u);
  EXPECT_EQ(p.wave_count(), 300u);
  EXPECT_TRUE(p.waits_for(299, 0));
  // readers between writers: each reader waits for the writer before it, each writer for the readers before it.
  std::vector<te::call_description> mixed;
  for (int k = 0; k < 4; ++k) {
    mixed.push_back(desc("w", {{"db", access_mode::write, std::nullopt}}));
    for (int r = 0; r < 3; ++r) mixed.push_back(desc("r", {{"db/users", access_mode::read, std::nullopt}}));
  }
  const auto q = te::plan_calls(mixed);
  // 12 readers wait for their writer; writers 4, 8, 12 wait for the 3 readers before them, and through them
  // for the writer before (kept edges are the transitive reduction: no direct edge 0 -> 4).
  EXPECT_EQ(q.edge_count(), 12u + 3u * 3u);
  EXPECT_EQ(q.predecessors(4), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_TRUE(q.waits_for(4, 0));
}

namespace {
// Which earlier calls each call must wait for under the full relation "conflicts with an earlier call":
// full[i][j] for j < i, the transitive closure of every conflicting pair (the reference the kept edges must match).
std::vector<std::vector<bool>> conflict_closure(const std::vector<te::call_description>& calls) {
  const std::size_t n = calls.size();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (te::conflicts(calls[j], calls[i])) {
        reach[i][j] = true;
        for (std::size_t k = 0; k < j; ++k)
          if (reach[j][k]) reach[i][k] = true;
      }
  return reach;
}

// Mostly one resource, many targets, a third of the accesses untargeted (the shapes that scan a node's targets).
te::call_description targeted_call(std::mt19937& rng, std::size_t index) {
  static const std::vector<std::string> paths{"files", "files", "files", "files/a", "db"};
  std::uniform_int_distribution<int> pct(0, 99);
  if (pct(rng) < 2) return te::call_description{"unknown" + std::to_string(index), {}, {}, true};
  std::vector<te::runtime_access> acc;
  const int k = 1 + static_cast<int>(pct(rng) < 20);
  for (int a = 0; a < k; ++a) {
    te::runtime_access x;
    x.resource = paths[std::uniform_int_distribution<std::size_t>(0, paths.size() - 1)(rng)];
    x.mode = static_cast<access_mode>(std::uniform_int_distribution<int>(0, 2)(rng));
    if (pct(rng) < 67) x.target = "t" + std::to_string(std::uniform_int_distribution<int>(0, 11)(rng));
    acc.push_back(std::move(x));
  }
  return desc("call" + std::to_string(index), std::move(acc));
}

// Peak resident set since the last reset, in KiB: VmHWM of /proc/self/status after writing "5" to
// /proc/self/clear_refs (Linux resets the peak then); getrusage's ru_maxrss where that is not possible.
struct peak_rss {
  bool reset = false;
  long before = 0;
  peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    reset = static_cast<bool>(clear);
    before = reset ? 0 : rusage_kib();
  }
  static long rusage_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
  }
  static long current_kib(const char* field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
    return -1;
  }
  // The peak since construction, minus the resident set at construction when the peak could be reset.
  long growth_kib(long resident_at_start) const {
    return reset ? current_kib("VmHWM:") - resident_at_start : rusage_kib() - before;
  }
};

// The prompt-injected shape of issue 19: write_file{path: f_i} alternating with an untargeted read_file{}
// (a read of the whole resource, so it conflicts with every earlier write of any path).
std::vector<te::call_description> alternating_writes_and_reads(std::size_t n) {
  std::vector<te::call_description> calls;
  calls.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    calls.push_back(i % 2 == 0 ? desc("write_file#" + std::to_string(i),
                                      {{"files", access_mode::write, "f" + std::to_string(i)}})
                               : desc("read_file#" + std::to_string(i), {{"files", access_mode::read, std::nullopt}}));
  return calls;
}
}  // namespace

TEST(RuntimePlan, KeptEdgesHaveTheReachabilityOfTheFullConflictRelation) {
  // Differential: on random turns, a path of kept edges leads from j to i exactly when the full relation orders
  // j before i (no pair lost, none added), and no kept edge is implied by the others (transitive reduction).
  std::mt19937 rng(20261125);
  std::size_t edges = 0, full_pairs = 0;
  for (int turn = 0; turn < 600; ++turn) {
    std::vector<te::call_description> calls;
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 70)(rng);
    for (std::size_t i = 0; i < n; ++i) calls.push_back(turn % 2 == 0 ? random_call(rng, i) : targeted_call(rng, i));
    const auto p = te::plan_calls(calls);
    const auto kept = closure(p);
    const auto full = conflict_closure(calls);
    ASSERT_EQ(kept, full) << "turn " << turn;
    for (std::size_t i = 0; i < n; ++i) {
      const auto preds = p.direct_predecessors(i);
      for (const std::size_t j : preds)
        for (const std::size_t k : preds)
          ASSERT_FALSE(k != j && kept[k][j]) << "turn " << turn << ": edge " << j << " -> " << i << " is implied by " << k;
      for (std::size_t j = 0; j < i; ++j) full_pairs += full[i][j] ? 1 : 0;
    }
    edges += p.edge_count();
  }
  EXPECT_LT(edges, full_pairs) << "the reduction keeps fewer edges than the ordered pairs";
  // Control: the comparison sees a lost edge. Dropping one kept edge of a chain loses its pairs.
  std::vector<te::call_description> chain(3, desc("w", {{"db", access_mode::write, std::nullopt}}));
  const auto p = te::plan_calls(chain);
  ASSERT_EQ(p.edge_count(), 2u);
  const te::runtime_plan dropped(te::runtime_plan::from_lists_t{}, 3, {0, 0, 1, 1}, {0});
  EXPECT_EQ(closure(p), conflict_closure(chain));
  EXPECT_NE(closure(dropped), conflict_closure(chain));
}

TEST(RuntimePlan, AlternatingTargetedWritesAndUntargetedReadsStayLinear) {
  // Issue 19: 4,000 calls used to keep 4,000,000 edges (837 MB through json_tool_host::plan), 8,000 calls 16,000,000
  // (3.3 GB). Every read waits for the write just before it, every write for the read just before it: n - 1 edges.
  {
    const auto small = alternating_writes_and_reads(300);
    const auto p = te::plan_calls(small);
    EXPECT_EQ(p.edge_count(), 299u);
    expect_orders_every_conflict(p, small.size(), [&](std::size_t i, std::size_t j) { return te::conflicts(small[i], small[j]); });
  }
  for (const std::size_t n : {std::size_t{4000}, std::size_t{8000}}) {
    const auto calls = alternating_writes_and_reads(n);
    const long resident = peak_rss::current_kib("VmRSS:");
    const peak_rss peak;
    std::size_t edges = 0, waves = 0;
    {
      const auto p = te::plan_calls(calls, te::plan_limits{n});
      edges = p.edge_count();
      waves = p.wave_count();
      EXPECT_TRUE(p.waits_for(n - 1, 0));
    }
    const long growth = peak.growth_kib(resident);
    EXPECT_EQ(edges, n - 1) << n << " calls";
    EXPECT_EQ(waves, n);
    EXPECT_LT(growth, 32 * 1024) << n << " calls: planning raised the peak resident set by " << growth << " KiB";
    std::cout << "[ plan ] " << n << " alternating calls: " << edges << " kept edges, peak RSS +" << growth << " KiB"
              << (peak.reset ? " (VmHWM after clear_refs)" : " (ru_maxrss)") << "\n";
  }
}

TEST(RuntimePlan, ATurnOverTheLimitIsRefusedWithAStableError) {
  std::vector<te::call_description> calls(5, desc("w", {{"db", access_mode::write, std::nullopt}}));
  EXPECT_NO_THROW((void)te::plan_calls(calls, te::plan_limits{5}));
  try {
    (void)te::plan_calls(calls, te::plan_limits{4});
    ADD_FAILURE() << "no throw";
  } catch (const te::turn_too_large& e) {
    EXPECT_STREQ(e.what(), "turn_too_large: 5 calls in one turn, over the limit of 4 (plan_limits::max_calls)");
    EXPECT_EQ(e.calls(), 5u);
    EXPECT_EQ(e.limit(), 4u);
  }
  EXPECT_EQ(te::plan_limits{}.max_calls, te::default_max_calls_per_turn);
  std::vector<te::call_description> many(te::default_max_calls_per_turn + 1, desc("r", {{"db", access_mode::read, std::nullopt}}));
  EXPECT_THROW((void)te::plan_calls(many), te::turn_too_large);
  many.pop_back();
  EXPECT_EQ(te::plan_calls(many).size(), te::default_max_calls_per_turn);
}

}  // namespace plan_test_ns
