// Benchmark input (compile time only): the hand-written Asio equivalent of docs/examples/readme.cpp, with the
// fewest includes: three calls run as coroutines on a thread_pool with co_spawn / use_future, their results
// collected, no library, only the Asio headers it uses. Compiled by benchmarks/compile_time/cost.py with the
// same flags as the README example; the ratio readme / this file is the strictest view of the library's
// compile cost (the README example also retries, asks an approver and orders conflicting calls, which this
// program does not). asio_equivalent_asio_hpp.cpp is the same program as issue 13 measured it.
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

namespace asio = boost::asio;

struct fetch_user {
  std::string operator()(int id) const { return "user " + std::to_string(id); }
};
struct fetch_and_touch_user {
  std::string operator()(int id) const { return "touched " + std::to_string(id); }
};
struct delete_account {
  std::string operator()(int id) const { return "deleted " + std::to_string(id); }
};

template <class Tool>
asio::awaitable<std::string> run_call(Tool tool, int arg) {
  co_return tool(arg);
}

int main() {
  asio::thread_pool pool(4);
  auto user = asio::co_spawn(pool, run_call(fetch_user{}, 42), asio::use_future);
  auto touched = asio::co_spawn(pool, run_call(fetch_and_touch_user{}, 42), asio::use_future);
  auto deleted = asio::co_spawn(pool, run_call(delete_account{}, 99), asio::use_future);
  const std::string a = user.get(), b = touched.get(), c = deleted.get();
  std::printf("%s | %s | %s\n", a.c_str(), b.c_str(), c.c_str());
  pool.join();
  return a == "user 42" && b == "touched 42" && c == "deleted 99" ? 0 : 1;
}
