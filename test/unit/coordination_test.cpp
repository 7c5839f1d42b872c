// The coordinator (coordination.hpp): grants against a brute-force model of its rule over random request
// sequences (the conflict rule is access.hpp's, the order first come first served), fencing tokens, wait limits,
// cancellation, release on every path, and the dispatcher's use of it in every entry point.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>

namespace coordination_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

te::call_description desc(std::string name, std::vector<te::runtime_access> a, bool exclusive = false) {
  te::call_description d;
  d.name = std::move(name);
  d.accesses = std::move(a);
  d.exclusive = exclusive;
  d.effects = exclusive ? te::effect_set{} : te::effect_set{te::effect::read};
  return d;
}

// A random call: 0-3 accesses over a small resource tree, some with targets; sometimes exclusive.
te::call_description random_call(std::mt19937& rng, std::size_t i) {
  static const char* const paths[] = {"", "db", "db/users", "db/orders", "fs", "fs/notes"};
  static const char* const targets[] = {"a", "b"};
  std::uniform_int_distribution<int> pct(0, 99);
  if (pct(rng) < 5) return desc("c" + std::to_string(i), {}, true);
  std::vector<te::runtime_access> a;
  const int n = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int k = 0; k < n; ++k) {
    te::runtime_access x;
    x.resource = paths[std::uniform_int_distribution<int>(0, 5)(rng)];
    x.mode = static_cast<te::access_mode>(std::uniform_int_distribution<int>(0, 2)(rng));
    if (pct(rng) < 40) x.target = targets[std::uniform_int_distribution<int>(0, 1)(rng)];
    a.push_back(std::move(x));
  }
  return desc("c" + std::to_string(i), std::move(a));
}

struct model_request {
  std::size_t id;
  bool granted = false;
};

}  // namespace

// Property: after every step of a random sequence of acquisitions, releases and abandonments, the coordinator's
// granted set is exactly the brute-force model's: a live request is granted iff no OLDER live request conflicts
// with it (conflicts = access.hpp's rule, `te::conflicts`). Hence also: no two granted requests conflict; a
// request never waits for a younger one; tokens grow in grant order.
TEST(LocalCoordinatorProperty, MatchesTheBruteForceModelOverRandomSequences) {
  std::size_t total_grants = 0, total_waits = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    asio::io_context io;
    te::local_coordinator coord;
    std::vector<te::call_description> calls;
    calls.reserve(64);
    std::vector<model_request> live;                       // arrival order
    std::map<std::size_t, te::local_grant> grants;         // id -> grant delivered
    std::map<std::size_t, asio::cancellation_signal> cancel;  // id -> its signal (waiting requests)
    std::uint64_t last_token = 0;
    auto model_sync = [&] {
      for (auto& r : live) {
        bool ok = true;
        for (auto& o : live) {
          if (o.id == r.id) break;
          if (te::conflicts(calls[o.id], calls[r.id])) ok = false;
        }
        if (ok) r.granted = true;  // once grantable, a request stays granted
      }
    };
    for (int step = 0; step < 60; ++step) {
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      if (op < 5 && calls.size() < 64) {
        const std::size_t id = calls.size();
        calls.push_back(random_call(rng, id));
        live.push_back({id});
        coord.async_acquire(calls[id], {},
                            asio::bind_cancellation_slot(
                                cancel[id].slot(), asio::bind_executor(io, [&, id](boost::system::error_code ec,
                                                                                   te::local_grant g) {
                                  if (ec) return;
                                  EXPECT_GT(g.fencing_token(), last_token) << "tokens grow in grant order";
                                  last_token = g.fencing_token();
                                  grants.emplace(id, std::move(g));
                                })));
      } else if (op < 9 && !grants.empty()) {
        auto it = grants.begin();
        std::advance(it, std::uniform_int_distribution<std::size_t>(0, grants.size() - 1)(rng));
        const std::size_t id = it->first;
        grants.erase(it);  // the grant's destructor releases it
        live.erase(std::find_if(live.begin(), live.end(), [&](auto& r) { return r.id == id; }));
      } else {
        // Abandon a waiting request (cancellation).
        std::vector<std::size_t> waiting;
        for (auto& r : live)
          if (!r.granted) waiting.push_back(r.id);
        if (!waiting.empty()) {
          const std::size_t id = waiting[std::uniform_int_distribution<std::size_t>(0, waiting.size() - 1)(rng)];
          cancel[id].emit(asio::cancellation_type::terminal);
          live.erase(std::find_if(live.begin(), live.end(), [&](auto& r) { return r.id == id; }));
        }
      }
      model_sync();
      io.restart();
      io.poll();
      for (auto& r : live) {
        ASSERT_EQ(grants.count(r.id) == 1, r.granted) << "seed " << seed << " step " << step << " request " << r.id;
        (r.granted ? total_grants : total_waits) += 1;
      }
      ASSERT_EQ(coord.queued(), live.size());
      for (auto& [a, ga] : grants) {
        for (auto& [b, gb] : grants) {
          if (a < b) {
            ASSERT_FALSE(te::conflicts(calls[a], calls[b])) << "conflicting grants held at once";
          }
        }
      }
    }
    grants.clear();
    io.restart();
    io.poll();
    // Whatever is still waiting becomes grantable as everything older leaves; release until empty.
    for (int round = 0; round < 100 && coord.queued() > 0; ++round) {
      grants.clear();
      io.restart();
      io.poll();
    }
    EXPECT_EQ(coord.queued(), 0u) << "every request is eventually granted (seed " << seed << ")";
  }
  // The sequences exercised both outcomes (a test that never waits proves nothing).
  EXPECT_GT(total_grants, 1000u);
  EXPECT_GT(total_waits, 1000u);
}

// The control: a coordinator that granted every request at once would break the model (shows the property
// test can fail: the same sequence has conflicting pairs alive at once).
TEST(LocalCoordinatorProperty, RandomSequencesDoContainConflictingPairs) {
  std::mt19937 rng(7);
  std::size_t conflicting = 0;
  std::vector<te::call_description> calls;
  for (std::size_t i = 0; i < 200; ++i) calls.push_back(random_call(rng, i));
  for (std::size_t i = 0; i + 1 < calls.size(); ++i) conflicting += te::conflicts(calls[i], calls[i + 1]) ? 1 : 0;
  EXPECT_GT(conflicting, 50u);
}

// Issue 39.6: a turn's start asks for the grants of all the calls ready then as one group request
// (detail::grant_group: one lock, one queue node), and each call gives its grant back on its own, without the
// queue's lock unless a request waits. The same property as above with group requests among single ones: a
// group's calls (pairwise compatible, as the calls ready together in a turn are) stand at the group's place;
// each is granted iff no older live request conflicts with it (those not granted then ask alone, younger, as
// the dispatcher does); after every step the granted set is the model's and no two granted requests conflict.
// The sequences must exercise a group call refused because of an older request, and requests waiting for a
// group's call (else the test proves nothing: counted below).
TEST(LocalCoordinatorProperty, GroupRequestsMatchTheBruteForceModelOverRandomSequences) {
  std::size_t group_grants = 0, group_refusals = 0, waits_behind_groups = 0, total_waits = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    asio::io_context io;
    te::local_coordinator coord;
    std::vector<te::call_description> calls;
    calls.reserve(128);
    std::vector<model_request> live;  // arrival order
    std::map<std::size_t, te::local_grant> grants;
    std::map<std::size_t, te::detail::turn_grant> group_held;
    std::vector<bool> in_group;
    std::map<std::size_t, asio::cancellation_signal> cancel;
    std::uint64_t max_token = 0;
    auto model_sync = [&] {
      for (auto& r : live) {
        bool ok = true;
        for (auto& o : live) {
          if (o.id == r.id) break;
          if (te::conflicts(calls[o.id], calls[r.id])) ok = false;
        }
        if (ok) r.granted = true;
      }
    };
    auto acquire_alone = [&](std::size_t id) {
      live.push_back({id});
      coord.async_acquire(calls[id], {},
                          asio::bind_cancellation_slot(
                              cancel[id].slot(), asio::bind_executor(io, [&, id](boost::system::error_code ec,
                                                                                 te::local_grant g) {
                                if (ec) return;
                                max_token = std::max(max_token, g.fencing_token());
                                grants.emplace(id, std::move(g));
                              })));
    };
    for (int step = 0; step < 60; ++step) {
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      if (op < 3 && calls.size() < 120) {
        calls.push_back(random_call(rng, calls.size()));
        in_group.push_back(false);
        acquire_alone(calls.size() - 1);
      } else if (op < 5 && calls.size() < 120) {
        // A group of 2-5 calls that do not conflict with one another.
        std::vector<std::size_t> ids;
        const int n = std::uniform_int_distribution<int>(2, 5)(rng);
        for (int k = 0; k < 4 * n && static_cast<int>(ids.size()) < n; ++k) {
          auto c = random_call(rng, calls.size());
          bool fits = true;
          for (const std::size_t id : ids) fits = fits && !te::conflicts(calls[id], c);
          if (!fits) continue;
          calls.push_back(std::move(c));
          in_group.push_back(true);
          ids.push_back(calls.size() - 1);
        }
        std::vector<const te::call_description*> ready;
        for (const std::size_t id : ids) ready.push_back(&calls[id]);
        std::vector<te::detail::turn_grant> out(ids.size());
        te::detail::grant_group(coord, ready, out);
        std::uint64_t group_token = 0;
        for (std::size_t k = 0; k < ids.size(); ++k) {
          if (!out[k].held()) continue;
          EXPECT_GT(out[k].fencing_token(), std::max(max_token, group_token)) << "tokens grow in grant order";
          group_token = out[k].fencing_token();
          live.push_back({ids[k]});
          group_held.emplace(ids[k], std::move(out[k]));
          ++group_grants;
        }
        max_token = std::max(max_token, group_token);
        for (std::size_t k = 0; k < ids.size(); ++k) {
          if (group_held.count(ids[k]) != 0) continue;
          ++group_refusals;
          in_group[ids[k]] = false;  // it asks alone, as the dispatcher's call does when it runs
          acquire_alone(ids[k]);
        }
      } else if (op < 9 && grants.size() + group_held.size() > 0) {
        std::size_t k = std::uniform_int_distribution<std::size_t>(0, grants.size() + group_held.size() - 1)(rng);
        std::size_t id;
        if (k < grants.size()) {
          auto it = std::next(grants.begin(), static_cast<std::ptrdiff_t>(k));
          id = it->first;
          grants.erase(it);
        } else {
          auto it = std::next(group_held.begin(), static_cast<std::ptrdiff_t>(k - grants.size()));
          id = it->first;
          group_held.erase(it);  // released without the queue's lock unless a request waits
        }
        live.erase(std::find_if(live.begin(), live.end(), [&](auto& r) { return r.id == id; }));
      } else {
        std::vector<std::size_t> waiting;
        for (auto& r : live)
          if (!r.granted) waiting.push_back(r.id);
        if (!waiting.empty()) {
          const std::size_t id = waiting[std::uniform_int_distribution<std::size_t>(0, waiting.size() - 1)(rng)];
          cancel[id].emit(asio::cancellation_type::terminal);
          live.erase(std::find_if(live.begin(), live.end(), [&](auto& r) { return r.id == id; }));
        }
      }
      model_sync();
      io.restart();
      io.poll();
      for (auto& r : live) {
        const bool held = grants.count(r.id) == 1 || group_held.count(r.id) == 1;
        ASSERT_EQ(held, r.granted) << "seed " << seed << " step " << step << " request " << r.id;
        if (!r.granted) {
          ++total_waits;
          for (auto& o : live) {
            if (o.id == r.id) break;
            if (in_group[o.id] && te::conflicts(calls[o.id], calls[r.id])) {
              ++waits_behind_groups;
              break;
            }
          }
        }
      }
      ASSERT_EQ(coord.queued(), live.size());
      std::vector<std::size_t> held_ids;
      for (auto& [id, g] : grants) held_ids.push_back(id);
      for (auto& [id, g] : group_held) held_ids.push_back(id);
      for (std::size_t a = 0; a < held_ids.size(); ++a)
        for (std::size_t b = a + 1; b < held_ids.size(); ++b)
          ASSERT_FALSE(te::conflicts(calls[held_ids[a]], calls[held_ids[b]])) << "conflicting grants held at once";
    }
    for (int round = 0; round < 100 && coord.queued() > 0; ++round) {
      grants.clear();
      group_held.clear();
      io.restart();
      io.poll();
    }
    EXPECT_EQ(coord.queued(), 0u) << "every request is eventually granted (seed " << seed << ")";
  }
  EXPECT_GT(group_grants, 1000u);
  EXPECT_GT(group_refusals, 100u) << "no group call was ever refused for an older request";
  EXPECT_GT(waits_behind_groups, 100u) << "no request ever waited for a group's call";
  EXPECT_GT(total_waits, 1000u);
}

TEST(LocalCoordinator, AWriteIsNotStarvedByAStreamOfReads) {
  asio::io_context io;
  te::local_coordinator coord;
  const auto r1 = desc("r1", {{"db", te::access_mode::read, {}}});
  const auto w = desc("w", {{"db/users", te::access_mode::write, {}}});
  const auto r2 = desc("r2", {{"db", te::access_mode::read, {}}});
  auto g1 = coord.try_acquire(r1);
  ASSERT_TRUE(g1);
  std::optional<te::local_grant> gw, g2;
  coord.async_acquire(w, {}, asio::bind_executor(io, [&](boost::system::error_code ec, te::local_grant g) {
    ASSERT_FALSE(ec);
    gw = std::move(g);
  }));
  EXPECT_FALSE(coord.try_acquire(r2)) << "a read behind a waiting write waits (FIFO)";
  coord.async_acquire(r2, {}, asio::bind_executor(io, [&](boost::system::error_code ec, te::local_grant g) {
    ASSERT_FALSE(ec);
    g2 = std::move(g);
  }));
  io.poll();
  EXPECT_FALSE(gw);
  EXPECT_FALSE(g2);
  g1->release();
  io.restart();
  io.poll();
  ASSERT_TRUE(gw);
  EXPECT_FALSE(g2);
  EXPECT_GT(gw->fencing_token(), 1u);
  gw->release();
  gw->release();  // idempotent
  io.restart();
  io.poll();
  ASSERT_TRUE(g2);
  EXPECT_EQ(coord.queued(), 1u);
}

TEST(LocalCoordinator, TargetsAndAppendsFollowTheAccessRule) {
  te::local_coordinator coord;
  const auto fa = desc("fa", {{"fs", te::access_mode::write, std::string("a")}});
  const auto fb = desc("fb", {{"fs", te::access_mode::write, std::string("b")}});
  const auto l1 = desc("l1", {{"log", te::access_mode::append, {}}});
  const auto l2 = desc("l2", {{"log", te::access_mode::append, {}}});
  const auto unknown = desc("u", {}, true);
  auto a = coord.try_acquire(fa), b = coord.try_acquire(fb), x = coord.try_acquire(l1), y = coord.try_acquire(l2);
  EXPECT_TRUE(a && b) << "different targets of one resource";
  EXPECT_TRUE(x && y) << "appends commute";
  EXPECT_FALSE(coord.try_acquire(unknown)) << "an unknown call conflicts with everything";
  const auto all = desc("all", {{"fs", te::access_mode::read, {}}});
  EXPECT_FALSE(coord.try_acquire(all)) << "no target: whole resource";
}

TEST(LocalCoordinator, WaitLimitEndsTheWaitAndUnblocksYoungerRequests) {
  asio::io_context io;
  te::local_coordinator coord;
  const auto w = desc("w", {{"db", te::access_mode::write, {}}});
  const auto r = desc("r", {{"db", te::access_mode::read, {}}});
  const auto other = desc("o", {{"db/users", te::access_mode::read, {}}});
  const auto h = desc("h", {{"db/users", te::access_mode::read, {}}});
  auto held = coord.try_acquire(h);
  ASSERT_TRUE(held);
  std::optional<boost::system::error_code> w_ec, o_ec;
  coord.async_acquire(w, {20ms}, asio::bind_executor(io, [&](boost::system::error_code ec, te::local_grant) { w_ec = ec; }));
  coord.async_acquire(other, {}, asio::bind_executor(io, [&](boost::system::error_code ec, te::local_grant g) {
    o_ec = ec;
    EXPECT_TRUE(g.held());
  }));
  io.run();  // the timer fires; the younger read, blocked only by the write, is granted
  ASSERT_TRUE(w_ec && o_ec);
  EXPECT_EQ(*w_ec, asio::error::timed_out);
  EXPECT_FALSE(*o_ec);
  // Blocking form: throws after the limit.
  auto wg = coord.try_acquire(w);
  EXPECT_FALSE(wg) << "a read is still held";
  held.reset();
  auto wg2 = coord.acquire(w, {});
  try {
    (void)coord.acquire(r, {10ms});
    FAIL() << "acquired a read under a held write";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::timed_out);
  }
  EXPECT_EQ(coord.queued(), 1u) << "the timed-out request left the queue";
}

TEST(LocalCoordinator, BlockingAcquireIsWokenByARelease) {
  te::local_coordinator coord;
  const auto w = desc("w", {{"db", te::access_mode::write, {}}});
  auto g = coord.acquire(w, {});
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto g2 = coord.acquire(w, {});
    got = true;
  });
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(got.load());
  g.release();
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(coord.queued(), 0u);
}

// The queue's lock (detail::queue_lock) under contention: more threads than cores take it in turns, many
// sleeping in its contended path, and never two at once inside. `inside` counts the holders; a plain counter
// updated under the lock must come out exact. (Control, checked by hand: with lock() and unlock() emptied,
// `overlaps` is in the thousands and the counter short.)
TEST(LocalCoordinatorQueueLock, ExcludesUnderContention) {
  te::detail::queue_lock lock;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  long counter = 0;  // not atomic: only the lock orders its updates
  constexpr int threads = 6;
  constexpr int rounds = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        lock.lock();
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        const long c = counter;
        if (i % 64 == 0) std::this_thread::yield();  // holders are also preempted: others sleep on the word
        counter = c + 1;
        inside.fetch_sub(1);
        lock.unlock();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(counter, long{threads} * rounds);
}

// ---------------------------------------------------------------------------------------------------- dispatcher
namespace {
struct account : te::resource<> {};
struct read_account {
  using side_effects = te::effects<te::reads<account>, te::idempotent>;
  std::uint64_t operator()(const te::attempt_context& ctx) const { return ctx.fencing_token; }
};
struct write_account {
  using side_effects = te::effects<te::writes<account>>;
  std::uint64_t operator()(const te::attempt_context& ctx) const { return ctx.fencing_token; }
};
struct flaky_read {
  using side_effects = te::effects<te::reads<account>, te::idempotent>;
  std::shared_ptr<int> fails;
  std::uint64_t operator()(const te::attempt_context& ctx) const {
    if ((*fails)-- > 0) throw std::runtime_error("transient");
    return ctx.fencing_token;
  }
};
// A runtime task: the plain path calls it without a context; like json_tool_host's tasks it makes one, which
// carries the token of the grant its call holds.
struct token_task {
  std::uint64_t operator()() const { return te::attempt_context{}.fencing_token; }
  std::uint64_t operator()(const te::attempt_context& ctx) const { return ctx.fencing_token; }
};
struct counting_task {
  std::atomic<int>* ran;
  int operator()() const { return ++*ran; }
};
}  // namespace

TEST(CoordinatedDispatch, ToolsSeeTheirGrantsFencingTokenInEveryForm) {
  te::local_coordinator coord;
  asio::thread_pool pool(2);
  const auto opts = te::run_options{}.with(coord);
  auto [a, b] = te::run_plan(pool, opts, te::call(read_account{}), te::call(write_account{}));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_GT(a.value(), 0u);
  EXPECT_GT(b.value(), a.value()) << "the write waits for the read (in turn): a later grant";
  auto [c] = te::run_plan(te::inline_executor{}, opts, te::call(write_account{}));
  EXPECT_GT(c.value(), b.value());
  auto [d] = te::run_parallel(pool, opts, te::call(read_account{}));
  EXPECT_GT(d.value(), c.value());
  // The recovery path (a retry policy): every attempt carries the grant's token.
  auto fails = std::make_shared<int>(1);
  auto [e] = te::run_plan(pool, opts.with(te::retry_policy{.max_attempts = 3, .base_delay = 1ms, .max_delay = 1ms,
                                                                   .is_transient = [](const std::exception_ptr&) { return true; }}), te::call(flaky_read{fails}));
  ASSERT_TRUE(e.has_value()) << te::error_message(e.error());
  EXPECT_GT(e.value(), d.value());
  // The runtime form.
  const std::vector<te::call_description> descs{te::describe<write_account>("w")};
  std::vector<token_task> tasks(1);
  const auto out = te::run_plan(pool, opts, std::span<const te::call_description>(descs), tasks);
  EXPECT_GT(out[0].value(), e.value());
  // The awaitable form.
  asio::io_context io;
  auto fut = asio::co_spawn(io, te::async_run_plan(opts, te::call(write_account{})), asio::use_future);
  io.run();
  auto [f] = fut.get();
  EXPECT_GT(f.value(), out[0].value());
  // Without a coordinator: token 0.
  auto [z] = te::run_plan(pool, te::call(read_account{}));
  EXPECT_EQ(z.value(), 0u);
  EXPECT_EQ(coord.queued(), 0u) << "every grant was released";
}

TEST(CoordinatedDispatch, AWaitPastTheLimitFailsTheCallWhichNeverRuns) {
  te::local_coordinator coord;
  const auto other_session = te::describe<write_account>("other session");
  auto held = coord.try_acquire(other_session);
  ASSERT_TRUE(held);
  std::atomic<int> ran{0};
  asio::thread_pool pool(2);
  for (const bool in_pool : {true, false}) {
    const std::vector<te::call_description> descs{te::describe<write_account>("w")};
    std::vector<counting_task> tasks{counting_task{&ran}};
    const auto opts = te::run_options{}.with(coord.with_wait_limit(15ms));
    const auto out = in_pool ? te::run_plan(pool, opts, std::span<const te::call_description>(descs), tasks)
                             : te::run_plan(te::inline_executor{}, opts, std::span<const te::call_description>(descs), tasks);
    ASSERT_FALSE(out[0].has_value());
    try {
      std::rethrow_exception(out[0].error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.reason(), te::failure_reason::coordination_timeout);
      EXPECT_EQ(to_string(f.reason()), "coordination_timeout");
      EXPECT_EQ(f.record().attempts, 0u);
    }
  }
  EXPECT_EQ(ran.load(), 0);
  held.reset();
  EXPECT_EQ(coord.queued(), 0u);
}

TEST(CoordinatedDispatch, AGrantIsReleasedWhenTheToolThrows) {
  te::local_coordinator coord;
  asio::thread_pool pool(2);
  struct thrower {
    using side_effects = te::effects<te::writes<account>>;
    int operator()() const { throw std::runtime_error("boom"); }
  };
  auto [a, b] = te::run_plan(pool, te::run_options{}.with(coord), te::call(thrower{}), te::call(thrower{}));
  EXPECT_FALSE(a.has_value() || b.has_value());
  EXPECT_EQ(coord.queued(), 0u);
  auto [c, d] = te::run_plan(pool, te::run_options{.abort_on_error = true}.with(coord), te::call(thrower{}),
                             te::call(write_account{}));
  EXPECT_FALSE(c.has_value());
  EXPECT_TRUE(d.aborted());
  EXPECT_EQ(coord.queued(), 0u);
}

// Issue 39.6: the calls ready at a turn's start get their grants as the turn starts, with one group request, and
// hold them until each ends; a call that does not run gives its grant back as its turn decides so. On a pool of
// one thread, the first call runs while the second waits in the pool's queue: the second's grant is already
// held, so a conflicting request from elsewhere is refused (control: the second call's successor, ready only
// once the second ends, holds nothing yet; and a turn whose second call is not ready at the start). Then the
// first call fails and the turn aborts: the calls that never ran leave nothing in the queue.
namespace {
struct ledger : te::resource<> {};
struct notes : te::resource<> {};
struct write_ledger {
  using side_effects = te::effects<te::writes<ledger>>;
  int operator()() const { return 1; }
};
struct write_notes {
  using side_effects = te::effects<te::writes<notes>>;
  int operator()() const { return 0; }
};
struct write_ledger_and_notes {
  using side_effects = te::effects<te::writes<ledger>, te::writes<notes>>;
  int operator()() const { return 2; }
};
struct write_account_and_ledger {
  using side_effects = te::effects<te::writes<account>, te::writes<ledger>>;
  int operator()() const { return 3; }
};
// Tries, as another session would, to write the ledger (1 if refused) and the notes (10 if refused).
struct probe_ledger_and_notes {
  using side_effects = te::effects<te::reads<account>, te::idempotent>;
  const te::local_coordinator* coord;
  const te::call_description* ledger_write;
  const te::call_description* notes_write;
  bool fail;
  int operator()() const {
    int refused = 0;
    refused += coord->try_acquire(*ledger_write) ? 0 : 1;
    refused += coord->try_acquire(*notes_write) ? 0 : 10;
    if (fail) throw std::runtime_error("boom");
    return refused;
  }
};
}  // namespace

TEST(CoordinatedDispatch, TheCallsReadyAtATurnsStartHoldTheirGrantsFromItsStart) {
  te::local_coordinator coord;
  const auto ledger_write = te::describe<write_ledger>("elsewhere");  // another session's requests
  const auto notes_write = te::describe<write_notes>("elsewhere");
  const auto probe = [&](bool fail) { return te::call(probe_ledger_and_notes{&coord, &ledger_write, &notes_write, fail}); };
  asio::thread_pool pool(1);
  {  // The ledger write (ready at the start) holds its grant; its successor, which also writes the notes, not yet.
    auto [p, w, wn] = te::run_plan(pool, te::run_options{}.with(coord), probe(false), te::call(write_ledger{}),
                                   te::call(write_ledger_and_notes{}));
    ASSERT_TRUE(p.has_value() && w.has_value() && wn.has_value());
    EXPECT_EQ(p.value(), 1) << "1: the ready call's grant was held from the start; 10 would be the successor's";
  }
  EXPECT_EQ(coord.queued(), 0u);
  {  // Control: the write is the probe's successor (it writes what the probe reads): nothing held for it yet.
    auto [p, w] = te::run_plan(pool, te::run_options{}.with(coord), probe(false), te::call(write_account_and_ledger{}));
    ASSERT_TRUE(p.has_value() && w.has_value());
    EXPECT_EQ(p.value(), 0);
  }
  {  // The probe fails and the turn aborts: the write, granted at the start, never runs and gives its grant back.
    auto [p, w, wn] = te::run_plan(pool, te::run_options{.abort_on_error = true}.with(coord), probe(true),
                                   te::call(write_ledger{}), te::call(write_ledger_and_notes{}));
    EXPECT_TRUE(p.has_error());
    EXPECT_TRUE(w.aborted());
    EXPECT_TRUE(wn.aborted());
    EXPECT_EQ(coord.queued(), 0u);
    EXPECT_TRUE(coord.try_acquire(ledger_write)) << "the aborted call's grant was given back";
  }
}

TEST(CoordinatedDispatch, ACallWaitingWhenItsTurnAbortsNeverRuns) {
  te::local_coordinator coord;
  const auto other_session = te::describe<write_account>("other session");
  auto held = coord.try_acquire(other_session);
  ASSERT_TRUE(held);
  struct other : te::resource<> {};
  std::atomic<bool> thrown{false};
  struct thrower {
    using side_effects = te::effects<te::writes<other>>;
    std::atomic<bool>* thrown;
    int operator()() const {
      *thrown = true;
      throw std::runtime_error("boom");
    }
  };
  std::atomic<int> writes{0};
  struct counted_write {
    using side_effects = te::effects<te::writes<account>>;
    std::atomic<int>* writes;
    int operator()() const { return ++*writes; }
  };
  asio::thread_pool pool(2);
  std::thread releaser([&] {
    while (!thrown) std::this_thread::yield();
    std::this_thread::sleep_for(50ms);  // the failure is delivered (abort requested) while the write still waits
    held.reset();
  });
  auto [a, b] = te::run_plan(pool, te::run_options{.abort_on_error = true}.with(coord), te::call(thrower{&thrown}),
                             te::call(counted_write{&writes}));
  releaser.join();
  EXPECT_TRUE(a.has_error());
  EXPECT_TRUE(b.aborted());
  EXPECT_EQ(writes.load(), 0);
  EXPECT_EQ(coord.queued(), 0u);
}

// Turn cancellation (cancellation.hpp): a call waiting for its grant behind another session's holder stops
// waiting when its turn is cancelled. It fails with coordination_timeout and never runs; its in-turn successor
// never starts (aborted); its request leaves the queue, so the request queued behind it is served as soon as
// the holder releases. In every dispatch form that blocks (runtime and static on a pool, inline). Control:
// the same turn without cancel() is still waiting after the same time, and runs once the holder releases.
namespace {
struct counted_account_write {
  using side_effects = te::effects<te::writes<account>>;
  std::atomic<int>* ran;
  int operator()() const { return ++*ran; }
};

// Releases a grant when it goes out of scope.
struct release_on_exit {
  std::optional<te::local_grant>* grant;
  ~release_on_exit() { grant->reset(); }
};

// Waits (bounded) until the coordinator's queue holds `n` requests.
bool wait_for_queued(const te::local_coordinator& c, std::size_t n) {
  for (int i = 0; i < 5000 && c.queued() != n; ++i) std::this_thread::sleep_for(1ms);
  return c.queued() == n;
}

std::string failure_text(const std::exception_ptr& e, te::failure_reason* reason) {
  try {
    std::rethrow_exception(e);
  } catch (const te::call_failure& f) {
    *reason = f.reason();
    return f.record().last_error_message;
  } catch (...) {
    return "not a call_failure";
  }
}
}  // namespace

// Waits granted by a release on another thread, each handler bound to a strand of a private io_context (as a
// cancellable turn on the inline executor waits): such a context ends as soon as its handler has run, and nothing
// of the handler may outlive it. ASan/UBSan saw the queue free a waiter, with the strand its moved-from handler
// still held, after the context was gone (the test below, form runtime_inline); one release grants eight
// readers here, so that the first contexts end while the releasing thread still delivers to the others.
TEST(CoordinatedDispatch, AGrantFromAnotherThreadLeavesNothingOfItsHandlerPastItsContext) {
  const auto w = desc("w", {{"db", te::access_mode::write, {}}});
  const auto r = desc("r", {{"db", te::access_mode::read, {}}});
  constexpr int readers = 8;
  for (int i = 0; i < 50; ++i) {
    te::local_coordinator coord;
    auto holder = coord.try_acquire(w);
    ASSERT_TRUE(holder);
    std::atomic<int> granted{0};
    std::atomic<int> waiting{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < readers; ++k) {
      threads.emplace_back([&] {
        asio::io_context ctx;
        coord.async_acquire(r, {}, asio::bind_executor(asio::make_strand(ctx),
                                                       [&](boost::system::error_code ec, te::local_grant) {
                                                         if (!ec) ++granted;
                                                       }));
        ++waiting;
        ctx.run();  // returns once the handler has run: the waiter's work is all that kept it; then it ends
      });
    }
    while (waiting.load() < readers || coord.queued() < readers + 1) std::this_thread::yield();
    holder.reset();
    for (auto& t : threads) t.join();
    ASSERT_EQ(granted.load(), readers) << "iteration " << i;
    EXPECT_EQ(coord.queued(), 0u);
  }
}

TEST(CoordinatedDispatch, CancellingTheTurnEndsAWaitForAGrantAndLeavesTheQueueClean) {
  enum class form { runtime_pool, static_pool, runtime_inline };
  asio::thread_pool pool(2);
  for (const form f : {form::runtime_pool, form::static_pool, form::runtime_inline}) {
    for (const bool cancelled : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "form " << static_cast<int>(f) << (cancelled ? " cancelled" : " control"));
      te::local_coordinator coord;
      const auto other_session = te::describe<counted_account_write>("other session");
      auto holder = coord.try_acquire(other_session);
      ASSERT_TRUE(holder);
      std::atomic<int> ran{0};
      te::turn_cancellation cancel;
      const auto opts = te::run_options{}.with(coord).with(cancel);
      // The turn: two writes of the account (the second waits in the turn for the first).
      const std::vector<te::call_description> descs{te::describe<counted_account_write>("w1"),
                                                    te::describe<counted_account_write>("w2")};
      std::vector<counted_account_write> tasks{{&ran}, {&ran}};
      std::vector<te::outcome<int>> out;
      std::function<void()> turn = [&] {
        const std::span<const te::call_description> calls(descs);
        if (f == form::runtime_pool) {
          out = te::run_plan(pool, opts, calls, tasks);
        } else if (f == form::runtime_inline) {
          out = te::run_plan(te::inline_executor{}, opts, calls, tasks);
        } else {
          auto [a, b] = te::run_plan(pool, opts, te::call(tasks[0]), te::call(tasks[1]));
          out.push_back(std::move(a));
          out.push_back(std::move(b));
        }
      };
      auto turn_done = std::async(std::launch::async, turn);
      // (On every exit, even a failed assertion, the holder is released before the futures are waited for.)
      const release_on_exit release_turn{&holder};
      ASSERT_TRUE(wait_for_queued(coord, 2)) << "the turn's first call waits behind the holder";
      // Another session queues behind the turn's call.
      std::atomic<bool> next_served{false};
      auto next = std::async(std::launch::async, [&] {
        auto g = coord.acquire(other_session, {});
        next_served = true;
      });
      const release_on_exit release_next{&holder};
      ASSERT_TRUE(wait_for_queued(coord, 3));
      if (cancelled) cancel.cancel();
      const auto waited = turn_done.wait_for(cancelled ? 10s : 100ms);
      if (cancelled) {
        ASSERT_EQ(waited, std::future_status::ready) << "the cancelled turn ended while its call waited";
        EXPECT_EQ(ran.load(), 0) << "nothing ran";
        ASSERT_EQ(out.size(), 2u);
        ASSERT_TRUE(out[0].has_error());
        te::failure_reason reason{};
        EXPECT_EQ(failure_text(out[0].error(), &reason), "cancelled while waiting for the coordinator");
        EXPECT_EQ(to_string(reason), "coordination_timeout");
        EXPECT_TRUE(out[1].aborted()) << "the in-turn successor never started";
        EXPECT_EQ(coord.queued(), 2u) << "the cancelled request left the queue: the holder and the next session";
        EXPECT_FALSE(next_served.load());
        holder.reset();
        EXPECT_EQ(next.wait_for(10s), std::future_status::ready) << "the next session is served";
        EXPECT_TRUE(next_served.load());
      } else {
        EXPECT_EQ(waited, std::future_status::timeout) << "without cancel() the call still waits";
        EXPECT_EQ(ran.load(), 0);
        EXPECT_EQ(coord.queued(), 3u);
        holder.reset();
        ASSERT_EQ(turn_done.wait_for(10s), std::future_status::ready);
        ASSERT_EQ(next.wait_for(10s), std::future_status::ready);
        EXPECT_EQ(ran.load(), 2) << "both calls ran once the holder released";
        ASSERT_EQ(out.size(), 2u);
        EXPECT_TRUE(out[0].has_value() && out[1].has_value());
      }
      EXPECT_EQ(coord.queued(), 0u);
      // Cancelling after the turn ended changes nothing; a later turn with the cancelled handle runs nothing.
      cancel.cancel();
      std::vector<te::outcome<int>> again;
      if (cancelled) {
        again = te::run_plan(pool, opts, std::span<const te::call_description>(descs), tasks);
        EXPECT_TRUE(again[0].aborted() && again[1].aborted());
      }
    }
  }
}

}  // namespace coordination_test_ns
