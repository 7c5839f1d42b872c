// The agent-turn demo (`./scripts/demo`, `./scripts/demo --json`).
//
// A registry of eight realistic tools with simulated latencies, and one
// scripted model turn given as JSON tool calls. The demo prints the plan
// (which call waits for which, and why), runs the turn on an Asio thread
// pool with a retry policy and a confirmation gate, and compares its wall
// time with running the calls in sequence and with the reference packages'
// "parallel-safe calls first, then the rest in sequence".
//
// Scripted faults: the first attempt of search_web and of send_email times
// out (a transient error). search_web is retry-safe and is retried;
// send_email is not (a repeat could send the email twice) and fails with a
// failure record instead. delete_account is destructive and waits for the
// operator's approval (`--deny` makes the operator refuse).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/tool_effects.hpp>

namespace te = tool_effects;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace demo {

// ---- resources -------------------------------------------------------------
struct web {
  static constexpr std::string_view resource_name = "web";
};
struct workspace {
  static constexpr std::string_view resource_name = "files";
};
struct user_db {
  static constexpr std::string_view resource_name = "db";
};
struct users : te::resource<user_db> {
  static constexpr std::string_view resource_name = "users";
};
struct preferences : te::resource<user_db> {
  static constexpr std::string_view resource_name = "preferences";
};
struct outbox {
  static constexpr std::string_view resource_name = "outbox";
};

/// A transient error: the upstream did not answer in time.
struct upstream_timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- what the tools record ---------------------------------------------------
struct journal {
  clock_type::time_point start = clock_type::now();
  bool quiet = false;
  std::mutex m;
  std::vector<std::string> lines;
  std::map<std::string, std::pair<double, double>> spans;  // idempotency key -> first start, last end (ms)
  std::map<std::string, int> failures_left;                // scripted transient failures

  double now_ms() const { return std::chrono::duration<double, std::milli>(clock_type::now() - start).count(); }
  void log(std::string line) {
    std::lock_guard lock(m);
    char stamp[24];
    std::snprintf(stamp, sizeof stamp, "[%4.0f ms] ", now_ms());
    lines.push_back(stamp + line);
  }
  void span(const std::string& key, double from, double to) {
    std::lock_guard lock(m);
    auto [it, fresh] = spans.try_emplace(key, from, to);
    if (!fresh) it->second = {std::min(it->second.first, from), std::max(it->second.second, to)};
  }
  bool fail_now(const std::string& tool) {
    std::lock_guard lock(m);
    auto it = failures_left.find(tool);
    if (it == failures_left.end() || it->second == 0) return false;
    --it->second;
    return true;
  }
};
journal* current = nullptr;  // set by main before each run

// Every tool: waits `latency` on a timer (no pool thread is held), may fail
// once by script, and records its attempts.
template <class Derived>
struct simulated {
  boost::asio::awaitable<json> operator()(const te::attempt_context& ctx, const json& args) const {
    const std::string key = ctx.idempotency_key;  // one per logical call, the same for its retries
    const double from = current->now_ms();
    if (!current->quiet)
      current->log(std::string(Derived::name) + " " + args.dump() + ": attempt " + std::to_string(ctx.attempt) +
                   " starts (idempotency key " + ctx.idempotency_key + ")");
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, Derived::latency);
    co_await timer.async_wait(boost::asio::use_awaitable);
    current->span(key, from, current->now_ms());
    if (current->fail_now(std::string(Derived::name))) {
      if (!current->quiet) current->log(std::string(Derived::name) + ": attempt " + std::to_string(ctx.attempt) + " timed out");
      throw upstream_timeout(std::string(Derived::name) + ": upstream timed out");
    }
    co_return static_cast<const Derived&>(*this).result(args);
  }
};

// ---- the eight tools -----------------------------------------------------------
struct search_web : simulated<search_web> {
  static constexpr std::string_view name = "search_web";
  static constexpr milliseconds latency{120};
  using side_effects = te::effects<te::reads<web>, te::network, te::idempotent>;
  json result(const json& a) const { return {{"hits", 3}, {"query", a.value("query", "")}}; }
};
struct read_file : simulated<read_file> {
  static constexpr std::string_view name = "read_file";
  static constexpr std::string_view target_arg = "path";
  static constexpr milliseconds latency{20};
  using side_effects = te::effects<te::reads<workspace>>;
  json result(const json& a) const { return "contents of " + a.value("path", ""); }
};
struct write_file : simulated<write_file> {
  static constexpr std::string_view name = "write_file";
  static constexpr std::string_view target_arg = "path";
  static constexpr milliseconds latency{40};
  using side_effects = te::effects<te::writes<workspace>, te::idempotent>;
  json result(const json& a) const { return "wrote " + a.value("path", ""); }
};
struct fetch_user : simulated<fetch_user> {
  static constexpr std::string_view name = "fetch_user";
  static constexpr std::string_view target_arg = "user_id";
  static constexpr milliseconds latency{60};
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  json result(const json& a) const { return {{"id", a.value("user_id", "")}, {"name", "Ada"}}; }
};
struct fetch_and_touch_user : simulated<fetch_and_touch_user> {  // also writes last_seen
  static constexpr std::string_view name = "fetch_and_touch_user";
  static constexpr std::string_view target_arg = "user_id";
  static constexpr milliseconds latency{60};
  using side_effects = te::effects<te::reads<users>, te::writes<users>>;
  json result(const json& a) const { return {{"id", a.value("user_id", "")}, {"last_seen", "now"}}; }
};
struct upsert_preferences : simulated<upsert_preferences> {
  static constexpr std::string_view name = "upsert_preferences";
  static constexpr std::string_view target_arg = "user_id";
  static constexpr milliseconds latency{50};
  using side_effects = te::effects<te::writes<preferences>, te::idempotent>;
  json result(const json& a) const { return {{"saved", a.value("prefs", json::object())}}; }
};
struct delete_account : simulated<delete_account> {
  static constexpr std::string_view name = "delete_account";
  static constexpr std::string_view target_arg = "user_id";
  static constexpr milliseconds latency{80};
  using side_effects = te::effects<te::writes<user_db>, te::destructive>;
  json result(const json& a) const { return {{"deleted", a.value("user_id", "")}}; }
};
struct send_email : simulated<send_email> {
  static constexpr std::string_view name = "send_email";
  static constexpr milliseconds latency{100};
  using side_effects = te::effects<te::appends<outbox>, te::external, te::network>;
  json result(const json& a) const { return {{"sent_to", a.value("to", "")}}; }
};

using registry = te::tool_registry<search_web, read_file, write_file, fetch_user, fetch_and_touch_user,
                                   upsert_preferences, delete_account, send_email>;

// Compile-time truths of this registry, checked where the tools are defined.
static_assert(te::ParallelSafe<fetch_user> && te::RetrySafe<fetch_user>);
static_assert(!te::ParallelSafe<fetch_and_touch_user> && !te::RetrySafe<fetch_and_touch_user>);
static_assert(!te::ParallelBatch<fetch_user, fetch_and_touch_user>);  // the last-seen bug, refused
static_assert(te::ParallelBatch<search_web, write_file, upsert_preferences, send_email>);
static_assert(te::Destructive<delete_account> && !te::RetrySafe<send_email>);

// The model's turn, as its tool calls arrive.
constexpr std::string_view model_turn = R"([
  {"id": "1", "name": "search_web", "arguments": {"query": "refund policy duplicate charge"}},
  {"id": "2", "name": "fetch_user", "arguments": {"user_id": "42"}},
  {"id": "3", "name": "fetch_and_touch_user", "arguments": {"user_id": "42"}},
  {"id": "4", "name": "read_file", "arguments": {"path": "notes/42.md"}},
  {"id": "5", "name": "write_file", "arguments": {"path": "notes/42.md", "content": "refund issued"}},
  {"id": "6", "name": "upsert_preferences", "arguments": {"user_id": "42", "prefs": {"newsletter": false}}},
  {"id": "7", "name": "fetch_user", "arguments": {"user_id": "42"}},
  {"id": "8", "name": "send_email", "arguments": {"to": "ada@example.com", "subject": "Your refund"}},
  {"id": "9", "name": "delete_account", "arguments": {"user_id": "99"}},
  {"id": "10", "name": "write_file", "arguments": {"path": "notes/99.md", "content": "account closed"}}
])";

}  // namespace demo

namespace {

struct run_report {
  double wall_ms = 0;
  std::vector<te::outcome<json>> outcomes;
  std::vector<std::string> lines;
  std::map<std::string, std::pair<double, double>> spans;
};

// One run of (a subset of) the turn under `options`.
template <class Options>
run_report run(demo::registry& reg, const std::vector<te::tool_call>& calls, const Options& options, bool quiet,
               std::string_view scope) {
  demo::journal j;
  j.quiet = quiet;
  j.failures_left = {{"search_web", 1}, {"send_email", 1}};
  demo::current = &j;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(4);
  j.start = clock_type::now();
  run_report r;
  r.outcomes = host.run(pool, options, calls, scope);
  r.wall_ms = j.now_ms();
  pool.join();
  r.lines = j.lines;
  r.spans = j.spans;
  demo::current = nullptr;
  return r;
}

std::string short_args(const te::tool_call& c) {
  for (const char* k : {"user_id", "path", "query", "to"})
    if (auto it = c.arguments.find(k); it != c.arguments.end() && it->is_string()) return it->get<std::string>();
  return {};
}
std::string label(const te::tool_call& c) {
  std::string a = short_args(c);
  return "#" + c.id + " " + c.name + (a.empty() ? "" : "(" + a + ")");
}

// The longest chain of measured call spans along the plan's edges.
double critical_path(const te::turn_plan& p, const std::vector<te::tool_call>& calls, std::string_view scope,
                     const std::map<std::string, std::pair<double, double>>& spans) {
  std::vector<double> finish(calls.size(), 0);
  double best = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto it = spans.find(te::idempotency_key(p.identities[i], std::string(scope) + "/" + calls[i].id));
    const double own = it == spans.end() ? 0 : it->second.second - it->second.first;
    double ready = 0;
    for (const std::size_t j : p.plan.predecessors(i)) ready = std::max(ready, finish[j]);
    finish[i] = ready + own;
    best = std::max(best, finish[i]);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  bool as_json = false, deny = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--json") as_json = true;
    else if (a == "--deny") deny = true;
    else {
      std::cerr << "usage: agent_turn [--json] [--deny]\n";
      return 2;
    }
  }

  demo::registry reg;
  const auto calls = te::parse_tool_calls(demo::model_turn);
  te::json_tool_host planner(reg);
  const te::turn_plan plan = planner.plan(calls);

  // A loop guard over the calls' identities: the same identity twice in the
  // last 20 calls is flagged (agent runtimes use such guards to stop loops).
  te::repeat_detector guard(te::repeat_policy{.threshold = 2, .last_calls = 20});
  std::vector<std::string> repeats;
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (const auto v = guard.observe(plan.identities[i]); v.repeated)
      repeats.push_back(label(calls[i]) + " repeats identity " + plan.identities[i].key + " (" +
                        std::to_string(v.count) + " times)");

  // The operator who confirms destructive calls (scripted).
  std::vector<std::string> confirmations;
  std::mutex confirm_mutex;
  auto operator_decision = [&](const te::confirmation_request& r) {
    std::lock_guard lock(confirm_mutex);
    // to_string(r): terminal-safe and distinct per call (the call id and arguments are model-chosen text).
    confirmations.push_back(te::to_string(r) + " -> " + (deny ? "denied" : "approved"));
    if (demo::current) demo::current->log("operator asked to confirm " + confirmations.back());
    return deny ? te::confirmation::deny : te::confirmation::approve;
  };
  const te::retry_policy retry{.max_attempts = 3,
                               .base_delay = milliseconds(20),
                               .max_delay = milliseconds(100),
                               .jitter = te::jitter_mode::full,
                               .is_transient = te::transient_on<demo::upstream_timeout>(),
                               .seed = 7};
  const auto options = te::run_options{}.with(retry).with(te::approver(operator_decision));

  // The turn, three ways.
  const run_report ours = run(reg, calls, options, false, "turn-1");
  const auto silent = te::run_options{}.with(retry).with(te::approve_all());
  auto sequential_options = silent;
  sequential_options.max_concurrency = 1;
  const run_report sequential = run(reg, calls, sequential_options, true, "turn-1-seq");
  // The reference packages: parallel-safe calls first (concurrently), then the rest in sequence.
  std::vector<te::tool_call> safe, rest;
  for (std::size_t i = 0; i < calls.size(); ++i)
    (te::is_parallel_safe(plan.calls[i].effects) ? safe : rest).push_back(calls[i]);
  const run_report first_phase = run(reg, safe, silent, true, "turn-1-psf");
  const run_report second_phase = run(reg, rest, sequential_options, true, "turn-1-psf");
  const double psf_ms = first_phase.wall_ms + second_phase.wall_ms;
  std::vector<std::string> reordered;
  for (std::size_t j = 0; j < calls.size(); ++j)
    for (std::size_t i = 0; i < j; ++i)
      if (plan.plan.waits_for(j, i) && te::is_parallel_safe(plan.calls[j].effects) &&
          !te::is_parallel_safe(plan.calls[i].effects))
        reordered.push_back(label(calls[j]) + " ran before " + label(calls[i]) + ", which the model emitted first");
  const double lower_bound = critical_path(plan, calls, "turn-1", ours.spans);

  auto status = [](const te::outcome<json>& o) -> json {
    if (o.has_value()) return {{"status", "ok"}, {"value", o.value()}};
    try {
      std::rethrow_exception(o.error());
    } catch (const te::call_failure& f) {
      return {{"status", "failed"},
              {"reason", std::string(te::to_string(f.reason()))},
              {"attempts", f.record().attempts},
              {"class", std::string(te::to_string(f.record().effect_class))},
              {"error", f.record().last_error_message}};
    } catch (const std::exception& e) {
      return {{"status", "error"}, {"error", e.what()}};
    } catch (...) {
      return {{"status", "aborted"}};
    }
  };

  if (as_json) {
    json out;
    for (std::size_t i = 0; i < demo::registry::static_size; ++i)
      out["tools"].push_back({{"name", demo::registry::names[i]},
                              {"effects", demo::registry::effect_sets[i]},
                              {"class", demo::registry::classes[i]}});
    for (std::size_t i = 0; i < calls.size(); ++i) {
      json c = {{"id", calls[i].id},
                {"name", calls[i].name},
                {"wave", plan.plan.wave(i)},
                {"identity", plan.identities[i].key},
                {"result", status(ours.outcomes[i])}};
      out["calls"].push_back(c);
    }
    for (const auto& e : plan.edges)
      out["plan"].push_back({{"call", calls[e.to].id}, {"waits_for", calls[e.from].id}, {"reason", e.reason}});
    out["confirmations"] = confirmations;
    out["events"] = ours.lines;
    out["wall_ms"] = {{"run_plan", ours.wall_ms},
                      {"sequential", sequential.wall_ms},
                      {"parallel_safe_first", psf_ms},
                      {"critical_path", lower_bound}};
    out["parallel_safe_first_reorders"] = reordered;
    out["repeats"] = repeats;
    std::cout << out.dump(2) << "\n";
    return 0;
  }

  std::printf("tool_effects — one agent turn\n\nRegistry:\n");
  std::printf("  %-22s %-34s %-15s %-9s %-6s %s\n", "tool", "effects", "class", "parallel", "retry", "destructive");
  for (std::size_t i = 0; i < demo::registry::static_size; ++i) {
    const auto s = demo::registry::effect_sets[i];
    std::printf("  %-22s %-34s %-15s %-9s %-6s %s\n", std::string(demo::registry::names[i]).c_str(),
                te::to_string(s).c_str(), std::string(te::to_string(demo::registry::classes[i])).c_str(),
                te::is_parallel_safe(s) ? "yes" : "no", te::is_retry_safe(s) ? "yes" : "no",
                te::is_destructive(s) ? "yes" : "no");
  }
  std::printf("\nThe model's turn: %zu tool calls. The plan (a call starts once every earlier call it conflicts\n"
              "with has finished; calls on different targets of one resource do not conflict):\n",
              calls.size());
  {  // the library's plan printer (terminal-safe: names, ids and reasons come from the model)
    std::istringstream text(te::to_string(plan));
    for (std::string line; std::getline(text, line);) std::printf("  %s\n", line.c_str());
  }
  for (const auto& r : repeats) std::printf("  loop guard: %s\n", r.c_str());
  std::printf("\nRunning it on a 4-thread Asio pool (retry: up to 3 attempts on upstream_timeout, only where\n"
              "retry-safe; destructive calls need the operator's approval):\n");
  for (const auto& l : ours.lines) std::printf("  %s\n", l.c_str());
  std::printf("\nResults:\n");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const json s = status(ours.outcomes[i]);
    std::string what = s["status"].get<std::string>();
    if (what == "ok") what += "      " + s["value"].dump();
    else if (what == "failed")
      what += "  " + s["reason"].get<std::string>() + " after " + std::to_string(s["attempts"].get<std::size_t>()) +
              " attempt(s), class " + s["class"].get<std::string>() + ": " + s["error"].get<std::string>();
    else if (s.contains("error")) what += "   " + s["error"].get<std::string>();
    std::printf("  %-34s %s\n", label(calls[i]).c_str(), what.c_str());
  }
  std::printf("\nWall time of the turn:\n");
  std::printf("  tool_effects run_plan                      %6.0f ms\n", ours.wall_ms);
  std::printf("  all calls in sequence                      %6.0f ms  (%.1fx)\n", sequential.wall_ms,
              sequential.wall_ms / ours.wall_ms);
  std::printf("  parallel-safe first, then in sequence      %6.0f ms  (%.1fx)\n", psf_ms, psf_ms / ours.wall_ms);
  std::printf("  critical path (lower bound)                %6.0f ms\n", lower_bound);
  for (const auto& r : reordered) std::printf("  note: parallel-safe-first reordered the turn: %s\n", r.c_str());
  return 0;
}
