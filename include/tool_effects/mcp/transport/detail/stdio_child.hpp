// tool_effects/mcp/transport/detail/stdio_child.hpp — internal to
// <tool_effects/mcp.hpp>: the stdio transport of the client
// (`mcp_stdio_child_transport`): the server is a child process (Boost.Process
// v2) speaking newline-delimited JSON-RPC on its stdin/stdout; it is spawned
// in a process group of its own, its stderr kept in a ring, signalled and
// reaped here. Included by mcp/client/impl/stdio.ipp (the definitions that start
// such a server): only a translation unit that includes <tool_effects/mcp.hpp>
// header-only, or the one of <tool_effects/mcp/client/impl/src.hpp>, parses
// Boost.Process. See docs/mcp-client.md ("The client").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_CHILD_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_CHILD_HPP

#include <tool_effects/detail/config.hpp>  // first: BOOST_PROCESS_USE_STD_FS

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
// Boost 1.81's Boost.Process v2 with BOOST_PROCESS_USE_STD_FS forgets these two.
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>

#include <tool_effects/detail/executor.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/client/detail/connection.hpp>
#include <tool_effects/mcp/protocol/detail/line_pipe.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>
#include <tool_effects/mcp/errors.hpp>

extern "C" char** environ;  // POSIX

namespace tool_effects {

namespace detail {

namespace bp = boost::process::v2;

// The server leads a process group of its own (set in the child before
// exec), so that everything it forks can be killed with it.
struct mcp_process_group_init {
  bp::error_code on_exec_setup(bp::posix::default_launcher&, const std::filesystem::path&,
                               const char* const*) const {
    ::setpgid(0, 0);
    return {};
  }
};

// Starts `exe` and returns the child's pid; the child is ours to reap (it is
// not watched by a bp::process: mcp_connection::watch_exit does). Boost.Process
// v2 of Boost 1.81 builds a process handle from pidfd_open(2); where that
// fails (kernels before 5.3, valgrind 3.19, seccomp profiles) it throws from
// assigning the -1 descriptor AFTER the child was started, and the failed
// assignment leaves a registration of fd -1 in the execution context's
// reactor, which makes every later fork on that context throw in the child
// (asio's fork_child notification). So the launch runs on an io_context of
// its own, destroyed with the launch, and a throw after the fork is taken
// for what it is: the launcher's `pid` names the started child. Throws
// boost::system::system_error when the program could not be started.
template <class... Inits>
int mcp_spawn(const std::filesystem::path& exe, std::vector<std::string> args, Inits&&... inits) {
  asio::io_context launch_context;
  bp::posix::default_launcher launcher;
  bp::error_code ec;
  try {
    auto proc = launcher(launch_context.get_executor(), ec, exe, std::move(args), std::forward<Inits>(inits)...);
    if (ec) throw boost::system::system_error(ec, "launch");
    const int pid = proc.id();
    (void)proc.detach();  // the handle would kill the child when destroyed
    return pid;
  } catch (const boost::system::system_error&) {  // what asio's assign throws
    if (!ec && launcher.pid > 0) return launcher.pid;  // started, but no pidfd (see above)
    throw;
  }
}

// The environment of the child (Boost 1.81's process_environment is not
// header-only: its on_setup lives in a source file).
struct mcp_environment_init {
  const char* const* env;
  bp::error_code on_setup(bp::posix::default_launcher& launcher, const std::filesystem::path&,
                          const char* const*) const {
    launcher.env = env;
    return {};
  }
};

// The child process of `argv` and its pipes. Everything but the constructor
// runs on the client's strand.
class mcp_stdio_child_transport : public mcp_transport,
                                  public std::enable_shared_from_this<mcp_stdio_child_transport> {
 public:
  mcp_stdio_child_transport(mcp_strand strand, std::shared_ptr<mcp_shared> shared)
      : strand_(std::move(strand)),
        shared_(std::move(shared)),
        in_(asio::any_io_executor(strand_)),
        out_(asio::any_io_executor(strand_)),
        err_(asio::any_io_executor(strand_)),
        out_queue_(shared_->options.max_write_queue_bytes) {}
  mcp_stdio_child_transport(const mcp_stdio_child_transport&) = delete;
  mcp_stdio_child_transport& operator=(const mcp_stdio_child_transport&) = delete;
  // The child and its process group do not outlive the transport.
  ~mcp_stdio_child_transport() override { kill_now(); }

  // Starts the process and the read loops. Throws mcp_error(launch_failed).
  void start(const std::shared_ptr<mcp_session>& s) override {
    session_ = s;
    const auto& argv = shared_->argv;
    const auto& o = shared_->options;
    if (argv.empty()) throw mcp_error(mcp_error_kind::launch_failed, shared_->name, "empty argv");
    std::filesystem::path exe = argv[0];
    if (argv[0].find('/') == std::string::npos) {
      exe = bp::environment::find_executable(argv[0]);
      if (exe.empty()) {
        throw mcp_error(mcp_error_kind::launch_failed, shared_->name,
                        str_cat("program \"", argv[0], "\" not found in PATH"));
      }
    }
    std::vector<std::string> env;
    if (o.inherit_environment)
      for (char** e = environ; e && *e; ++e) {
        const std::string_view kv(*e);
        const auto eq = kv.find('=');
        if (eq != std::string_view::npos && o.environment.count(std::string(kv.substr(0, eq)))) continue;
        env.emplace_back(kv);
      }
    for (const auto& [k, v] : o.environment) {
      std::string kv = k;
      kv += '=';
      kv += v;
      env.push_back(std::move(kv));
    }
    std::vector<const char*> envp;
    envp.reserve(env.size() + 1);
    for (const auto& kv : env) envp.push_back(kv.c_str());
    envp.push_back(nullptr);
    const std::filesystem::path cwd = o.working_directory.value_or(std::filesystem::current_path());
    try {
      pid_ = mcp_spawn(exe, std::vector<std::string>(argv.begin() + 1, argv.end()), bp::process_stdio{in_, out_, err_},
                       bp::process_start_dir{cwd}, mcp_environment_init{envp.data()}, mcp_process_group_init{});
    } catch (const std::exception& e) {
      throw mcp_error(mcp_error_kind::launch_failed, shared_->name, str_cat("cannot start ", exe.string(), ": ", e.what()));
    }
    ::setpgid(pid_, pid_);  // also from this side (no race with a kill); EACCES once it exec'd: already set
    shared_->pid.store(pid_);
    auto self = shared_from_this();
    asio::co_spawn(strand_, read_stdout(self), asio::detached);
    asio::co_spawn(strand_, read_stderr(self), asio::detached);
    asio::co_spawn(strand_, watch_exit(self), asio::detached);
  }

  void send(std::string line, std::int64_t, mcp_outgoing) override {
    if (done_) return;
    const std::size_t size = line.size();
    if (!out_queue_.push(std::move(line))) {
      const std::string m = str_cat("it stopped reading its stdin: ", std::to_string(out_queue_.waiting()),
                                    " bytes are waiting to be written and ", std::to_string(size + 1),
                                    " more would pass the limit of ", std::to_string(out_queue_.max_bytes()),
                                    " bytes (options.max_write_queue_bytes)", shared_->stderr_ring.quote());
      fail_session(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, shared_->name, m)));
      return;
    }
    if (out_queue_.claim_writer()) asio::co_spawn(strand_, write_loop(shared_from_this()), asio::detached);
  }

  void abandon(std::int64_t) override {}
  void initialized(const std::string&) override {}

  // Clean shutdown (specification): close stdin, wait, SIGTERM, wait, SIGKILL.
  // The first wait ends early when the server shows no sign of exiting: it
  // neither exited nor closed its stdout within options.shutdown_sign.
  asio::awaitable<void> shutdown() override {
    auto self = shared_from_this();  // alive while the coroutine runs
    done_ = true;
    boost::system::error_code ec;
    in_.close(ec);
    const auto grace = shared_->options.shutdown_grace;
    const auto sign = std::min(grace, shared_->options.shutdown_sign);
    bool exited = co_await self->wait_exit(sign);
    if (!exited && stdout_eof_) exited = co_await self->wait_exit(grace - sign);
    if (!exited) {
      signal_group(SIGTERM);
      if (!co_await self->wait_exit(shared_->options.shutdown_grace)) kill_now();
    }
    signal_group(SIGKILL);  // what the server left behind (no-op once reaped: see reap)
    close_pipes();
  }

  // Ends everything at once: the process group is killed and reaped, the pipes closed.
  void stop() noexcept override {
    done_ = true;
    kill_now();
    try {
      asio::post(strand_, [self = shared_from_this()] { self->close_pipes(); });
    } catch (...) {  // destroyed with the transport then
    }
  }

  [[nodiscard]] std::string diagnostics() const override { return shared_->stderr_ring.quote(); }

 private:
  // The session ends with `e` (which stops this transport), or only this when it is gone.
  void fail_session(std::exception_ptr e) {
    if (auto s = session_.lock())
      s->fail(std::move(e));
    else
      stop();
  }

  // SIGKILL to the server's whole process group, then reaps the server.
  void kill_now() noexcept {
    if (pid_ <= 0 || exited_) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);  // in case it left its group
    reap(true);
  }

  // Sends `sig` to the server's process group while the server is not
  // reaped (its pid, and so the group id, cannot have been reused).
  void signal_group(int sig) noexcept {
    if (pid_ <= 0 || exited_) return;
    ::kill(-pid_, sig);
  }

  // Has the server exited? If so (or if `block`), kills what is left of its
  // process group, reaps it and keeps its status. The group is killed before
  // the reap, while the zombie still holds the group id.
  bool reap(bool block) noexcept {
    if (pid_ <= 0 || exited_) return true;
    if (!block) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
        return false;
    }
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    exited_ = true;
    return true;
  }

  void close_pipes() {
    boost::system::error_code ec;
    in_.close(ec);
    out_.close(ec);
    err_.close(ec);
  }

  // Polls for the exit of the process for at most `limit`; true if it exited.
  asio::awaitable<bool> wait_exit(std::chrono::milliseconds limit) {
    asio::steady_timer t(strand_);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (reap(false)) co_return true;
      if (std::chrono::steady_clock::now() >= deadline) co_return false;
      t.expires_after(std::chrono::milliseconds(5));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  // Queues a line for the server's stdin. Bounded: a server that stops
  // reading while the client has more than options.max_write_queue_bytes to
  // write (e.g. replies to its own flood of requests) ends the connection
  // with protocol_error; a single line is always accepted into an empty queue.
  static asio::awaitable<void> write_loop(std::shared_ptr<mcp_stdio_child_transport> self) {
    const auto ec = co_await self->out_queue_.drain(self->in_, [&self] { return self->done_; });
    if (ec && !self->done_) {
      const std::string m = str_cat("writing to its stdin failed: ", ec.message(), self->shared_->stderr_ring.quote());
      self->fail_session(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, self->shared_->name, m)));
    }
  }

  static asio::awaitable<void> read_stdout(std::shared_ptr<mcp_stdio_child_transport> self) {
    std::array<char, 65536> chunk{};
    line_splitter lines(self->shared_->options.max_line_bytes);
    const auto deliver = [&self](std::string& line) {
      if (auto s = self->session_.lock()) s->deliver(line);
      return !self->done_;
    };
    const auto oversized = [&self, &lines] {
      const std::string m = str_cat("a line of its output exceeds the limit of ", std::to_string(lines.max_line()), " bytes",
                                    self->shared_->stderr_ring.quote());
      self->fail_session(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, self->shared_->name, m)));
      return false;
    };
    for (;;) {
      auto [ec, n] = co_await self->out_.async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::eof) self->stdout_eof_ = true;  // a sign of exiting (shutdown)
      if (self->done_) co_return;
      if (!lines.feed(std::string_view(chunk.data(), n), false, deliver, oversized)) co_return;
      if (ec) break;
    }
    co_await self->on_stdout_closed();
  }

  // How the server ended, for an error message: "exited with status 3".
  [[nodiscard]] std::string exit_message(bool exited) const {
    std::string m;
    if (!exited) {
      m = "closed its stdout";
    } else if (WIFEXITED(status_)) {
      m = str_cat("exited with status ", std::to_string(WEXITSTATUS(status_)));
    } else if (WIFSIGNALED(status_)) {
      m = str_cat("was killed by signal ", std::to_string(WTERMSIG(status_)));
    } else {
      m = "exited";
    }
    return m;
  }

  // Watches the server's pid (a pidfd where pidfd_open works, else polling
  // waitid every 20 ms): its exit ends the connection even when its stdout
  // stays open (a process it forked holds it). The rest of its process group
  // is killed at once (reap), which closes such a pipe; what the server wrote
  // before it exited is still read. If stdout is not closed 500 ms later, the
  // pending requests fail with server_exited all the same.
  static asio::awaitable<void> watch_exit(std::shared_ptr<mcp_stdio_child_transport> self) {
    int fd = -1;
#if defined(SYS_pidfd_open)
    fd = static_cast<int>(::syscall(SYS_pidfd_open, self->pid_, 0));
#endif
    if (fd >= 0) {
      asio::posix::stream_descriptor d(self->strand_, fd);
      (void)co_await d.async_wait(asio::posix::stream_descriptor::wait_read, asio::as_tuple(asio::use_awaitable));
    } else {
      asio::steady_timer t(self->strand_);
      while (!self->exited_ && !self->reap(false)) {
        t.expires_after(std::chrono::milliseconds(20));
        (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      }
    }
    if (self->done_ || !self->reap(false)) co_return;
    asio::steady_timer t(self->strand_);
    for (int i = 0; i < 100 && !self->done_; ++i) {
      t.expires_after(std::chrono::milliseconds(5));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (self->done_) co_return;
    const std::string m =
        str_cat(self->exit_message(true), " (its stdout is still open: a process it started outside its process group holds it)",
                self->shared_->stderr_ring.quote());
    self->fail_session(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, self->shared_->name, m)));
  }

  asio::awaitable<void> on_stdout_closed() {
    // Let stderr drain and the process exit (up to 2 s each, on a loaded
    // machine a dying interpreter takes that long) so that the error quotes
    // its last words and its status.
    asio::steady_timer t(strand_);
    for (int i = 0; i < 400 && !stderr_closed_ && !done_; ++i) {
      t.expires_after(std::chrono::milliseconds(5));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (done_) co_return;
    const bool exited = co_await wait_exit(std::chrono::milliseconds(2000));
    if (done_) co_return;
    const std::string m = str_cat(exit_message(exited), shared_->stderr_ring.quote());
    fail_session(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, shared_->name, m)));
  }

  static asio::awaitable<void> read_stderr(std::shared_ptr<mcp_stdio_child_transport> self) {
    std::array<char, 8192> chunk{};
    std::string line;
    for (;;) {
      auto [ec, n] = co_await self->err_.async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
      std::string_view data(chunk.data(), n);
      while (!data.empty()) {
        const auto nl = data.find('\n');
        const auto part = data.substr(0, nl);
        if (line.size() < 4096) line.append(part.substr(0, 4096 - line.size()));
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
        self->shared_->stderr_ring.push(std::move(line));
        line.clear();
      }
      if (ec) break;
    }
    if (!line.empty()) self->shared_->stderr_ring.push(std::move(line));
    self->stderr_closed_ = true;
  }

  mcp_strand strand_;
  std::shared_ptr<mcp_shared> shared_;
  std::weak_ptr<mcp_session> session_;
  asio::writable_pipe in_;
  asio::readable_pipe out_;
  asio::readable_pipe err_;
  int pid_ = -1;
  bool exited_ = false;
  bool stdout_eof_ = false;
  int status_ = 0;
  bool done_ = false;  // stopped, shut down, or its session ended
  bool stderr_closed_ = false;
  line_queue out_queue_;  // lines for the server's stdin
};

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_CHILD_HPP
