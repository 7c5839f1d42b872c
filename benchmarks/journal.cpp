// The turn journal's cost per turn (Google Benchmark), issues 29.2 and 39.2. See docs/benchmarks.md ("The turn
// journal: group commit") and docs/perf-notes-39.md.
//
// BM_journal_turn16/journal/work_us: one turn of 16 non-idempotent calls, each writing its own target (all may
// run at once), through the runtime form on a 2-thread pool; new keys every turn, so every call records
// *started* and *ended*. journal 0: no journal; 1: sqlite_journal (group commit); 2: the same file through the
// plain Journal interface (one transaction per record: the journal before group commit). work_us: what each
// call does, blocking its thread that long (0: nothing; 1000: 1 ms, the I/O-bound tool of issue 29's turn).
// The journal is in the temporary directory (TMPDIR). One turn per repetition, 41 repetitions: the median is
// the figure (on a shared disk the mean follows the fsync outliers). Compare the rows of one run:
// median(journal 1) / median(journal 0) is the journal's overhead ratio.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>
#include <tool_effects/sqlite_journal.hpp>

namespace te = tool_effects;

namespace {

struct one_record_at_a_time {
  te::sqlite_journal j;
  [[nodiscard]] std::optional<te::journal_entry> find(const std::string& key) const { return j.find(key); }
  void record_started(const std::string& key, std::string_view name) const { j.record_started(key, name); }
  void record_ended(const std::string& key, const te::journal_entry& e) const { j.record_ended(key, e); }
};

struct keyed_task {
  std::string key;
  std::chrono::microseconds work{0};
  int operator()() const {
    if (work.count() > 0) std::this_thread::sleep_for(work);
    return 1;
  }
  [[nodiscard]] const std::string& idempotency_key() const noexcept { return key; }
};

void BM_journal_turn16(benchmark::State& state) {
  const auto mode = state.range(0);
  const std::chrono::microseconds work(state.range(1));
  const auto path = std::filesystem::temp_directory_path() / "te_bench_journal_group.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  te::sqlite_journal j(path.string());
  boost::asio::thread_pool pool(2);
  std::vector<te::call_description> d;
  for (int i = 0; i < 16; ++i)
    d.push_back(te::describe_runtime("charge", {}, {{"ledger", te::access_mode::write, std::to_string(i)}}));
  std::vector<keyed_task> tasks(16);
  long turn = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++turn;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      tasks[i] = {"t" + std::to_string(turn) + "/" + std::to_string(i), work};
    state.ResumeTiming();
    const std::span<const te::call_description> calls(d);
    if (mode == 0) benchmark::DoNotOptimize(te::run_plan(pool, te::run_options{}, calls, tasks).data());
    else if (mode == 1) benchmark::DoNotOptimize(te::run_plan(pool, te::run_options{}.with(j), calls, tasks).data());
    else
      benchmark::DoNotOptimize(
          te::run_plan(pool, te::run_options{}.with(one_record_at_a_time{j}), calls, tasks).data());
  }
  state.SetLabel(mode == 0 ? "no journal" : mode == 1 ? "sqlite_journal, group commit" : "one record per transaction");
}
BENCHMARK(BM_journal_turn16)
    ->ArgsProduct({{0, 1, 2}, {0, 1000}})
    ->ArgNames({"journal", "work_us"})
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(41)
    ->Unit(benchmark::kMicrosecond);

// BM_journal_side_by_side/threads/work_us (issue 39.2): the same 16-call turn without and with sqlite_journal
// (group commit), alternating turn by turn in one loop on one pool of `threads` threads (1, 2, 4, 16), so that
// both see the same disk and load. Counters: the medians of each (`no_journal_us`, `journal_us`) and their
// `ratio` (journal / no journal; the goal is at most 1.2 on this machine's disk when quiet), and the median
// fdatasync of a 4 KiB write in the same directory, measured in the same loop (`fdatasync_us`: what a quiet
// disk means). The journal file is new for each row, opened before the loop (its open is not timed).
void BM_journal_side_by_side(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  const std::chrono::microseconds work(state.range(1));
  const auto dir = std::filesystem::temp_directory_path();
  const auto path = dir / "te_bench_journal_side_by_side.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  const auto probe_path = dir / "te_bench_journal_side_by_side.probe";
  const int probe = ::open(probe_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (probe < 0) {
    state.SkipWithError("cannot create the probe file");
    return;
  }
  const std::vector<char> page(4096, 'x');
  te::sqlite_journal j(path.string());
  boost::asio::thread_pool pool(threads);
  std::vector<te::call_description> d;
  for (int i = 0; i < 16; ++i)
    d.push_back(te::describe_runtime("charge", {}, {{"ledger", te::access_mode::write, std::to_string(i)}}));
  const std::span<const te::call_description> calls(d);
  std::vector<keyed_task> tasks(16);
  std::vector<double> plain, journaled, sync;
  long turn = 0;
  const auto micros = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
  for (auto _ : state) {
    for (const bool with_journal : {false, true}) {
      ++turn;
      for (std::size_t i = 0; i < tasks.size(); ++i)
        tasks[i] = {"t" + std::to_string(turn) + "/" + std::to_string(i), work};
      const auto t0 = std::chrono::steady_clock::now();
      if (with_journal) benchmark::DoNotOptimize(te::run_plan(pool, te::run_options{}.with(j), calls, tasks).data());
      else benchmark::DoNotOptimize(te::run_plan(pool, te::run_options{}, calls, tasks).data());
      (with_journal ? journaled : plain).push_back(micros(std::chrono::steady_clock::now() - t0));
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (::pwrite(probe, page.data(), page.size(), (turn % 256) * 4096) != 4096 || ::fdatasync(probe) != 0) {
      state.SkipWithError("write or fdatasync failed");
      break;
    }
    sync.push_back(micros(std::chrono::steady_clock::now() - t0));
  }
  ::close(probe);
  std::filesystem::remove(probe_path);
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double p = median(plain), jj = median(journaled);
  state.counters["no_journal_us"] = p;
  state.counters["journal_us"] = jj;
  state.counters["ratio"] = p > 0 ? jj / p : 0;
  state.counters["fdatasync_us"] = median(sync);
}
BENCHMARK(BM_journal_side_by_side)
    ->ArgsProduct({{1, 2, 4, 16}, {1000}})
    ->ArgNames({"threads", "work_us"})
    ->UseRealTime()
    ->Iterations(61)
    ->Unit(benchmark::kMicrosecond);

// The disk's side: one 4 KiB write + fdatasync of a file in the same directory, as a WAL commit does.
void BM_fdatasync(benchmark::State& state) {
  const auto path = std::filesystem::temp_directory_path() / "te_bench_fdatasync";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    state.SkipWithError("cannot create the file");
    return;
  }
  const std::vector<char> page(4096, 'x');
  long n = 0;
  for (auto _ : state) {
    if (::pwrite(fd, page.data(), page.size(), (n++ % 256) * 4096) != 4096 || ::fdatasync(fd) != 0) {
      state.SkipWithError("write or fdatasync failed");
      break;
    }
  }
  ::close(fd);
  std::filesystem::remove(path);
}
BENCHMARK(BM_fdatasync)->UseRealTime()->Iterations(1)->Repetitions(41)->Unit(benchmark::kMicrosecond);

}  // namespace
