// The dispatcher (dispatch.hpp) with threads: outcomes in submission order, errors kept, conflicting calls
// serialised in program order, no wave barriers, unknown tools alone, abort and concurrency-limit options,
// every kind of executor, argument binding, and the runtime (type-erased) form. No timed assertions.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <tool_effects/dispatch.hpp>

// Unity-built with the other dispatch tests (test/CMakeLists.txt): all below is this file's own.
namespace dispatch_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {
struct db : te::resource<> {};
struct users : te::resource<db> {};
struct orders : te::resource<db> {};

struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  int operator()(const int& store) const { return store; }
};
struct set_user {
  using side_effects = te::effects<te::writes<users>>;
  void operator()(int& store, int v) const { store = v; }
};
struct failing_write {
  using side_effects = te::effects<te::writes<orders>>;
  int operator()() const { throw std::runtime_error("disk full"); }
};
struct search {
  using side_effects = te::effects<te::network, te::idempotent>;
  std::string operator()(std::string q) const { return "results for " + q; }
};

// A one-shot latch with a safety bound (not an assertion on time: a missing signal fails the test instead of
// hanging it).
class latch {
 public:
  void open() {
    std::lock_guard l(m_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock l(m_);
    return cv_.wait_for(l, std::chrono::seconds(20), [this] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Counts calls in flight; records the largest count seen.
struct activity {
  std::atomic<int> active{0}, peak{0}, runs{0};
  void enter() {
    const int now = ++active;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    ++runs;
  }
  void leave() { --active; }
};
}  // namespace

TEST(Dispatch, ResultsInSubmissionOrderWithVoidAndErrors) {
  asio::thread_pool pool(2);
  int store = 1;
  auto [a, b, c, d, e] = te::run_plan(pool, te::call(fetch_user{}, std::cref(store)), te::call(set_user{}, std::ref(store), 7),
                                      te::call(failing_write{}), te::call(fetch_user{}, std::cref(store)),
                                      te::call(search{}, std::string("q")));
  EXPECT_EQ(a.value(), 1);  // before the write, in program order
  EXPECT_TRUE(b.has_value());
  static_assert(std::is_same_v<decltype(b), te::outcome<void>>);
  ASSERT_TRUE(c.has_error());
  EXPECT_THROW(c.value(), std::runtime_error);
  EXPECT_EQ(d.value(), 7);  // after the write
  EXPECT_EQ(e.value(), "results for q");
  EXPECT_EQ(store, 7);
}

TEST(Dispatch, ConflictingCallsRunInProgramOrder) {
  asio::thread_pool pool(2);
  for (int round = 0; round < 200; ++round) {
    int store = 0;  // plain int: TSan reports any unordered access
    auto r = te::run_plan(pool, te::call(set_user{}, std::ref(store), 1), te::call(fetch_user{}, std::cref(store)),
                          te::call(set_user{}, std::ref(store), 2), te::call(fetch_user{}, std::cref(store)),
                          te::call(fetch_user{}, std::cref(store)), te::call(set_user{}, std::ref(store), 3));
    ASSERT_EQ(get<1>(r).value(), 1);
    ASSERT_EQ(get<3>(r).value(), 2);
    ASSERT_EQ(get<4>(r).value(), 2);
    ASSERT_EQ(store, 3);
  }
}

TEST(Dispatch, DataflowHasNoWaveBarriers) {
  // 0: write users; 1: write orders (holds until call 2 ran); 2: read users (waits only for 0).
  // With wave barriers, 2 (wave 1) would wait for 1 (wave 0), which waits for 2: a deadlock.
  asio::thread_pool pool(2);
  latch second_ran;
  int store = 0;
  bool saw_it = false;
  auto blocked_write = te::tag<te::writes<orders>>([&] { saw_it = second_ran.wait(); });
  auto signalling_read = te::tag<te::reads<users>>([&] {
    const int v = store;
    second_ran.open();
    return v;
  });
  auto r = te::run_plan(pool, te::call(set_user{}, std::ref(store), 5), te::call(blocked_write),
                        te::call(signalling_read));
  EXPECT_TRUE(saw_it);
  EXPECT_EQ(get<2>(r).value(), 5);
}

TEST(Dispatch, UndeclaredToolRunsAlone) {
  asio::thread_pool pool(2);
  activity act;
  std::atomic<int> alone_violations{0};
  auto reader = te::tag<te::read>([&] {
    act.enter();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    act.leave();
  });
  auto undeclared = [&] {
    act.enter();
    if (act.active.load() != 1) ++alone_violations;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (act.active.load() != 1) ++alone_violations;
    act.leave();
  };
  static_assert(!te::DeclaresSideEffects<decltype(undeclared)>);
  for (int round = 0; round < 20; ++round)
    (void)te::run_plan(pool, te::run_options{}.with(te::run_unknown_tools_unconfirmed{}), te::call(reader),
                       te::call(reader), te::call(undeclared), te::call(reader), te::call(reader));
  EXPECT_EQ(alone_violations.load(), 0);
  EXPECT_EQ(act.runs.load(), 100);
}

TEST(Dispatch, AbortOnErrorSkipsCallsNotYetStarted) {
  int invoked = 0;
  auto count = te::tag<te::reads<users>>([&] { return ++invoked; });
  auto r = te::run_plan(te::inline_executor{}, te::run_options{.abort_on_error = true}, te::call(count),
                        te::call(failing_write{}), te::call(count), te::call(search{}, std::string("x")));
  EXPECT_EQ(get<0>(r).value(), 1);
  EXPECT_TRUE(get<1>(r).has_error());
  EXPECT_TRUE(get<2>(r).aborted());
  EXPECT_FALSE(get<2>(r).has_error());
  EXPECT_EQ(get<2>(r).error(), nullptr);
  EXPECT_THROW(get<2>(r).value(), te::call_aborted);
  EXPECT_TRUE(get<3>(r).aborted());
  EXPECT_EQ(invoked, 1);

  // Without the option every call runs.
  auto all = te::run_plan(te::inline_executor{}, te::call(count), te::call(failing_write{}), te::call(count));
  EXPECT_EQ(get<2>(all).value(), 3);
}

TEST(Dispatch, AbortOnErrorOnAPoolAbortsEverySuccessorOfTheFailure) {
  asio::thread_pool pool(2);
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> after{0};
    auto late = te::tag<te::writes<orders>>([&] { ++after; });
    auto r = te::run_plan(pool, te::run_options{.abort_on_error = true}, te::call(failing_write{}), te::call(late),
                          te::call(late));
    ASSERT_TRUE(get<0>(r).has_error());
    ASSERT_TRUE(get<1>(r).aborted());  // waits for the failed call: never started
    ASSERT_TRUE(get<2>(r).aborted());
    ASSERT_EQ(after.load(), 0);
  }
}

TEST(Dispatch, ConcurrencyLimitIsHonoured) {
  asio::thread_pool pool(4);
  for (const std::size_t limit : {1u, 2u, 3u}) {
    activity act;
    auto work = te::tag<te::read>([&] {
      act.enter();
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      act.leave();
    });
    (void)te::run_plan(pool, te::run_options{.max_concurrency = limit}, te::call(work), te::call(work), te::call(work),
                       te::call(work), te::call(work), te::call(work), te::call(work), te::call(work));
    EXPECT_LE(act.peak.load(), static_cast<int>(limit));
    EXPECT_EQ(act.runs.load(), 8);
  }
}

TEST(Dispatch, InlineExecutorRunsInProgramOrderInTheCallersThread) {
  std::vector<int> order;
  const auto me = std::this_thread::get_id();
  bool same_thread = true;
  auto rec = [&](int k) {
    same_thread = same_thread && std::this_thread::get_id() == me;
    order.push_back(k);
  };
  auto r = te::tag<te::read>(rec);
  auto w = te::tag<te::write>(rec);
  (void)te::run_plan(te::inline_executor{}, te::call(r, 0), te::call(r, 1), te::call(w, 2), te::call(r, 3));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(same_thread);
}

TEST(Dispatch, RunsOnIoContextStrandAndPoolExecutor) {
  int store = 0;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  auto a = te::run_plan(io, te::call(set_user{}, std::ref(store), 3), te::call(fetch_user{}, std::cref(store)));
  EXPECT_EQ(get<1>(a).value(), 3);
  auto b = te::run_plan(asio::make_strand(io), te::call(fetch_user{}, std::cref(store)), te::call(search{}, std::string("s")));
  EXPECT_EQ(get<0>(b).value(), 3);
  guard.reset();
  runner.join();

  asio::thread_pool pool(2);
  auto c = te::run_parallel(pool.get_executor(), te::call(fetch_user{}, std::cref(store)), te::call(fetch_user{}, std::cref(store)));
  EXPECT_EQ(get<1>(c).value(), 3);
  auto d = te::run_parallel(asio::make_strand(pool), te::run_options{.max_concurrency = 1},
                            te::call(search{}, std::string("a")), te::call(search{}, std::string("b")));
  EXPECT_EQ(get<1>(d).value(), "results for b");
}

TEST(Dispatch, EmptyTurn) {
  asio::thread_pool pool(1);
  auto r = te::run_plan(pool);
  static_assert(std::tuple_size_v<decltype(r)> == 0);
  auto i = te::run_plan(te::inline_executor{});
  static_assert(std::tuple_size_v<decltype(i)> == 0);
}

TEST(Dispatch, ArgumentsAreStoredByValueUnlessWrapped) {
  int x = 1;
  auto get = te::tag<te::read>([](int v) { return v; });
  auto bump = te::tag<te::write>([](int& v) { return ++v; });
  auto c = te::call(get, x);  // copy taken now
  x = 5;
  auto r = te::run_plan(te::inline_executor{}, std::move(c), te::call(bump, std::ref(x)));
  EXPECT_EQ(r.get<0>().value(), 1);
  EXPECT_EQ(r.get<1>().value(), 6);
  EXPECT_EQ(x, 6);
  // A C string decays to a pointer; a tool bound by std::ref keeps its declaration.
  search s;
  auto q = te::call(std::ref(s), "query");
  static_assert(std::is_same_v<decltype(q)::tool_type, search>);
  EXPECT_EQ(te::run_plan(te::inline_executor{}, std::move(q)).get<0>().value(), "results for query");
  // The call can be invoked again with the same arguments (as a retry would).
  auto again = te::call(bump, std::ref(x));
  EXPECT_EQ(again(), 7);
  EXPECT_EQ(again(), 8);
}

TEST(Dispatch, BlockingFromInsideTheExecutorIsRefused) {
  asio::thread_pool pool(2);
  auto fut = asio::post(pool, asio::use_future([&] {
                          try {
                            (void)te::run_plan(pool, te::call(search{}, std::string("x")));
                            return std::string("ran");
                          } catch (const std::logic_error& e) {
                            return std::string(e.what());
                          }
                        }));
  const auto msg = fut.get();
  EXPECT_NE(msg.find("run_plan: blocking call from a thread that runs its executor"), std::string::npos) << msg;
}

TEST(Dispatch, RuntimeFormRunsDescribedTasks) {
  asio::thread_pool pool(2);
  int store = 0;
  std::vector<te::call_description> calls{
      te::describe_runtime("write a", {}, {{"files", te::access_mode::write, "a"}}),
      te::describe_runtime("read a", {}, {{"files", te::access_mode::read, "a"}}),
      te::describe_runtime("write b", {}, {{"files", te::access_mode::write, "b"}}),
      te::call_description{"mystery", {}, {}, true},
  };
  std::vector<std::function<int()>> tasks{[&] { return store = 1; }, [&] { return store; }, [] { return 3; },
                                          []() -> int { throw std::runtime_error("mystery failed"); }};
  for (int round = 0; round < 50; ++round) {
    store = 0;
    auto r = te::run_plan(pool, calls, tasks);
    ASSERT_EQ(r.size(), 4u);
    ASSERT_EQ(r[0].value(), 1);
    ASSERT_EQ(r[1].value(), 1);
    ASSERT_EQ(r[2].value(), 3);
    ASSERT_TRUE(r[3].has_error());
  }
  // Abort, and the inline executor, on the runtime form.
  std::vector<std::function<int()>> failing{[]() -> int { throw std::runtime_error("no"); }, [] { return 1; }};
  std::vector<te::call_description> two{calls[0], calls[1]};
  auto r = te::run_plan(te::inline_executor{}, te::run_options{.abort_on_error = true}, two, failing);
  EXPECT_TRUE(r[0].has_error());
  EXPECT_TRUE(r[1].aborted());
  // Mismatched sizes name both counts.
  try {
    (void)te::run_plan(pool, two, tasks);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "tool_effects::run_plan: 2 call descriptions but 4 tasks");
  }
  std::vector<std::function<void()>> none;
  EXPECT_TRUE(te::run_plan(pool, std::span<const te::call_description>{}, none).empty());
}

TEST(Outcome, States) {
  te::outcome<int> empty;
  EXPECT_FALSE(empty.finished());
  EXPECT_THROW(empty.value(), te::outcome_empty);
  auto v = te::outcome<int>::success(4);
  EXPECT_TRUE(v && v.has_value() && !v.has_error() && !v.aborted());
  EXPECT_EQ(v.value(), 4);
  EXPECT_EQ(std::move(v).value(), 4);
  auto e = te::outcome<int>::failure(std::make_exception_ptr(std::out_of_range("x")));
  EXPECT_TRUE(e.has_error());
  EXPECT_THROW(e.value(), std::out_of_range);
  EXPECT_NE(e.error(), nullptr);
  auto a = te::outcome<void>::abort();
  EXPECT_TRUE(a.aborted() && a.finished() && !a.has_error());
  EXPECT_THROW(a.value(), te::call_aborted);
  auto ok = te::outcome<void>::success();
  EXPECT_NO_THROW(ok.value());
}

TEST(Options, ExtrasAreCarriedByType) {
  struct approver {
    int id;
  };
  const te::run_options base{.abort_on_error = true, .max_concurrency = 3};
  static_assert(!te::run_options::has<approver>);
  const auto more = base.with(approver{42});
  static_assert(decltype(more)::has<approver>);
  static_assert(te::DispatchOptions<decltype(more)>);
  EXPECT_TRUE(more.abort_on_error);
  EXPECT_EQ(more.max_concurrency, 3u);
  EXPECT_EQ(more.get<approver>().id, 42);
  // Options with extras are accepted by the dispatcher.
  auto r = te::run_plan(te::inline_executor{}, more, te::call(search{}, std::string("z")));
  EXPECT_EQ(get<0>(r).value(), "results for z");
}
}  // namespace dispatch_test_ns
