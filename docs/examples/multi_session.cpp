// Several sessions in one process share a local_coordinator (docs/coordination.md): each runs turns of
// get_balance(acct), add_to_balance(acct, 1), get_balance(acct) on shared accounts. Every turn is planned on
// its own; the coordinator keeps conflicting calls of different turns apart, so no increment is lost. The
// write tool refuses a stale writer with the grant's fencing token, as an outside store would.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;

struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};

// A store that remembers the highest fencing token it has seen and refuses older writers.
struct store {
  std::mutex m;
  std::array<long, 3> balance{};
  std::uint64_t highest_token = 0;
  long refused = 0;
};

struct get_balance {
  using side_effects = te::effects<te::reads<accounts>, te::idempotent>;
  store* s;
  long operator()(int acct) const {
    std::lock_guard l(s->m);
    return s->balance[static_cast<std::size_t>(acct)];
  }
};

struct add_to_balance {
  using side_effects = te::effects<te::writes<accounts>>;
  store* s;
  long operator()(const te::attempt_context& ctx, int acct, long amount) const {
    long v;
    {
      std::lock_guard l(s->m);
      v = s->balance[static_cast<std::size_t>(acct)];
    }
    std::this_thread::yield();  // a read-modify-write: without coordination another session could interleave here
    std::lock_guard l(s->m);
    if (ctx.fencing_token < s->highest_token) {  // a stale writer: refused by the store
      ++s->refused;
      throw std::runtime_error("stale fencing token");
    }
    s->highest_token = ctx.fencing_token;
    s->balance[static_cast<std::size_t>(acct)] = v + amount;
    return v + amount;
  }
};

int main() {
  store s;
  te::local_coordinator coordinator;  // one per process; every session's turns go through it
  boost::asio::thread_pool pool(2);
  constexpr int sessions = 4, turns = 50;
  std::atomic<long> increments{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < sessions; ++id)
    threads.emplace_back([&, id] {
      const auto options = te::run_options{}.with(coordinator);
      for (int t = 0; t < turns; ++t) {
        const int acct = (id + t) % 3;
        auto [before, added, after] =
            te::run_plan(pool, options, te::call(get_balance{&s}, acct), te::call(add_to_balance{&s}, acct, 1L),
                         te::call(get_balance{&s}, acct));
        if (added.has_value()) ++increments;
        (void)before;
        (void)after;
      }
    });
  for (auto& t : threads) t.join();
  const long total = s.balance[0] + s.balance[1] + s.balance[2];
  std::printf("%d sessions x %d turns: %ld increments, balances sum to %ld, %ld stale writes refused\n", sessions,
              turns, increments.load(), total, s.refused);
  return total == increments.load() && increments.load() == sessions * turns && s.refused == 0 ? 0 : 1;
}
