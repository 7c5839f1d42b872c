// tool_effects/mcp/detail/connection.hpp — internal to <tool_effects/mcp/client.hpp>
// (included at its end, after `mcp_client_options`): one server process and
// its pipes (`mcp_connection`), the settings its connections share
// (`mcp_shared`) and the helpers they use. See docs/mcp.md ("The client").
#ifndef TOOL_EFFECTS_MCP_DETAIL_CONNECTION_HPP
#define TOOL_EFFECTS_MCP_DETAIL_CONNECTION_HPP

#include <tool_effects/detail/config.hpp>  // first: BOOST_PROCESS_USE_STD_FS

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/system_error.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/asio/write.hpp>
// Boost 1.81's Boost.Process v2 with BOOST_PROCESS_USE_STD_FS forgets these two.
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>

#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/detail/client_requests.hpp>
#include <tool_effects/mcp/detail/param_headers.hpp>
#include <tool_effects/mcp/errors.hpp>

extern "C" char** environ;  // POSIX

namespace tool_effects {

namespace detail {

namespace asio = boost::asio;
namespace bp = boost::process::v2;
using mcp_strand = asio::strand<asio::any_io_executor>;

// A line for an error message: at most 300 bytes, control characters escaped.
inline std::string mcp_preview(std::string_view s, std::size_t max = 300) {
  std::string out;
  for (const char ch : s.substr(0, max)) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += "\\x";
      constexpr char hex[] = "0123456789abcdef";
      out += hex[(static_cast<unsigned char>(ch) >> 4) & 0xF];
      out += hex[static_cast<unsigned char>(ch) & 0xF];
    } else {
      out += ch;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

inline std::string mcp_dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Writing to a pipe whose reader exited must be an error, not SIGPIPE. Only
// the default disposition is changed (a program's own handler is kept).
inline void ignore_sigpipe_once() {
  static const bool done = [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

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

// The last lines of the server's stderr; shared by the connections of a client.
class mcp_stderr_ring {
 public:
  explicit mcp_stderr_ring(std::size_t cap) : cap_(cap) {}
  void push(std::string line) {
    const std::lock_guard lock(m_);
    if (cap_ == 0) return;
    if (lines_.size() == cap_) lines_.pop_front();
    lines_.push_back(std::move(line));
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    const std::lock_guard lock(m_);
    return {lines_.begin(), lines_.end()};
  }
  // "; last stderr lines: | a | b", or "" when there are none.
  [[nodiscard]] std::string quote(std::size_t n = 5) const {
    const auto all = lines();
    if (all.empty()) return {};
    std::string out = "; last stderr lines:";
    for (std::size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i) {
      out += " | ";
      out += mcp_preview(all[i], 200);
    }
    return out;
  }

 private:
  mutable std::mutex m_;
  std::size_t cap_;
  std::deque<std::string> lines_;
};

// What initialize answered and how often the server was restarted: written
// on the client's strand when (re)initialising, read from any thread
// (server_info(), protocol_version(), restarts()) without a round trip.
class mcp_info_snapshot {
 public:
  void set(nlohmann::json server_info, std::string protocol_version) {
    const std::lock_guard lock(m_);
    server_info_ = std::move(server_info);
    protocol_version_ = std::move(protocol_version);
  }
  void set_restarts(std::size_t n) {
    const std::lock_guard lock(m_);
    restarts_ = n;
  }
  [[nodiscard]] nlohmann::json server_info() const {
    const std::lock_guard lock(m_);
    return server_info_;
  }
  [[nodiscard]] std::string protocol_version() const {
    const std::lock_guard lock(m_);
    return protocol_version_;
  }
  [[nodiscard]] std::size_t restarts() const {
    const std::lock_guard lock(m_);
    return restarts_;
  }

 private:
  mutable std::mutex m_;
  nlohmann::json server_info_;
  std::string protocol_version_;
  std::size_t restarts_ = 0;
};

class mcp_connection;
struct mcp_shared;

// What a transport may mirror of an outgoing message (the Streamable HTTP
// binding of 2026-07-28 puts it in headers; stdio has no use for it).
struct mcp_outgoing {
  // Sent under a modern version: stateless (no session), the request's
  // metadata mirrored into headers.
  bool modern = false;
  // The protocol version the message is sent under (its `_meta` one when
  // modern); empty: the transport's negotiated one, if any.
  std::string version;
  // The method of a request or notification (empty for a response).
  std::string method;
  // `params.name` (tools/call, prompts/get) or `params.uri`
  // (resources/read), raw: the transport encodes it.
  std::optional<std::string> name;
  // tools/call: the arguments the tool's inputSchema marks with
  // `x-mcp-header`, as (header name after "Mcp-Param-", raw value).
  std::vector<std::pair<std::string, std::string>> params;
};

// A JSON-RPC error that came as the body of an HTTP error status: the
// status tells a 2026-07-28 server's "unknown method" (404) from a 200
// (docs/mcp.md, "Era detection over HTTP").
class mcp_http_rpc_error : public mcp_rpc_error {
 public:
  mcp_http_rpc_error(std::string server, int code, const std::string& message, nlohmann::json data, unsigned status)
      : mcp_rpc_error(std::move(server), code, message, std::move(data)), status_(status) {}
  [[nodiscard]] unsigned http_status() const noexcept { return status_; }

 private:
  unsigned status_;
};

// The HTTP status an rpc error came with (0: none, e.g. stdio or a 200).
inline unsigned mcp_http_status_of(const mcp_rpc_error& e) noexcept {
  const auto* h = dynamic_cast<const mcp_http_rpc_error*>(&e);
  return h ? h->http_status() : 0;
}

// A transport other than the child process (Streamable HTTP, mcp/http.hpp):
// it carries the messages of one connection. Every member runs on the
// client's strand. What it receives goes to `mcp_connection::deliver`; a
// fault of the transport ends the connection (`mcp_connection::fail`) or one
// request (`mcp_connection::fail_request`), as on stdio.
class mcp_transport {
 public:
  virtual ~mcp_transport() = default;
  // Starts the transport of `c` (throws mcp_error(launch_failed) when it cannot).
  virtual void start(const std::shared_ptr<mcp_connection>& c) = 0;
  // Sends one JSON-RPC message; `request_id` is the id of a request of the
  // client's (0: a notification or a response; negative: a notification whose
  // acceptance the connection awaits, `mcp_connection::settle`/`fail_request`).
  // `meta`: what the transport may mirror of it.
  virtual void send(std::string message, std::int64_t request_id, mcp_outgoing meta) = 0;
  // The request `request_id` timed out (its cancellation is being sent).
  virtual void abandon(std::int64_t request_id) = 0;
  // The handshake settled on `version`.
  virtual void initialized(const std::string& version) = 0;
  // Clean end (e.g. HTTP DELETE of the session), then stop().
  virtual asio::awaitable<void> shutdown() = 0;
  // Ends everything at once.
  virtual void stop() noexcept = 0;
  // A peer's text as an error quotes it: every secret this transport sent (tokens, the endpoint's header values)
  // replaced by "[redacted]" (issue 26). The child process's pipes carry none.
  [[nodiscard]] virtual std::string redact(std::string text) const { return text; }
};

using mcp_transport_factory =
    std::function<std::shared_ptr<mcp_transport>(const mcp_strand&, const std::shared_ptr<mcp_shared>&)>;

// Settings a connection needs, shared with the client.
struct mcp_shared {
  std::vector<std::string> argv;
  mcp_client_options options;
  std::string name;
  mcp_stderr_ring stderr_ring;
  std::atomic<std::uint64_t> unknown_responses{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> ignored_messages{0};
  std::atomic<int> pid{-1};
  mcp_info_snapshot info;
  mcp_client_side caps;  // progress tokens of calls, handlers running (client_requests.hpp)
  // Over HTTP, modern: the x-mcp-header annotations of the tools the last
  // listing gave (its pages), by tool name (on the strand only).
  std::unordered_map<std::string, std::vector<mcp_param_header>> param_headers;
  // Empty: the server is the child process of argv; else the transport's maker.
  mcp_transport_factory make_transport{};

  mcp_shared(std::vector<std::string> a, mcp_client_options o, std::string n)
      : argv(std::move(a)), options(std::move(o)), name(std::move(n)), stderr_ring(options.stderr_lines) {}
};

// The envelope of a line the bounded parse refused: is it JSON at all, and
// its top-level "id" (a number or a string) and "method", if any. A SAX pass
// (nlohmann's SAX parser keeps its own stack, no recursion) that builds
// nothing below the top level, so any depth is safe.
struct mcp_envelope {
  bool json = false;
  std::optional<nlohmann::json> id;
  bool method = false;
};

inline mcp_envelope mcp_scan_envelope(std::string_view line) {
  using json = nlohmann::json;
  struct scanner : nlohmann::json_sax<json> {
    std::size_t depth = 0;
    std::string top_key;
    mcp_envelope env;
    bool top() const { return depth == 1; }
    void scalar(json v) {
      if (top() && top_key == "id" && (v.is_number_integer() || v.is_string())) env.id = std::move(v);
    }
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t v) override { return scalar(v), true; }
    bool number_unsigned(number_unsigned_t v) override { return scalar(v), true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t& v) override {
      if (top() && top_key == "id" && v.size() <= 256) env.id = v;
      if (top() && top_key == "method") env.method = true;
      return true;
    }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return ++depth, top_key.clear(), true; }
    bool key(string_t& k) override {
      if (top()) top_key = k.size() <= 16 ? k : std::string();
      return true;
    }
    bool end_object() override { return --depth, top_key.clear(), true; }
    bool start_array(std::size_t) override { return ++depth, top_key.clear(), true; }
    bool end_array() override { return --depth, top_key.clear(), true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  } sax;
  sax.env.json = json::sax_parse(line.begin(), line.end(), &sax);
  if (!sax.env.json) return {};
  return sax.env;
}

// The JSON-RPC error code of UnsupportedProtocolVersionError (2026-07-28):
// `data.supported` lists the server's versions.
inline constexpr int mcp_unsupported_version_code = -32022;

// The first of `ours` (in our order of preference) that `supported` (a
// server's list: DiscoverResult.supportedVersions, or the data.supported of
// an UnsupportedProtocolVersionError) names; with `modern_only`, only modern
// ones. Anything but an array of strings names nothing.
inline std::optional<std::string> mcp_pick_version(const nlohmann::json& supported, const std::vector<std::string>& ours,
                                                   bool modern_only) {
  if (!supported.is_array()) return std::nullopt;
  for (const auto& v : ours) {
    if (modern_only && !mcp_version_is_modern(v)) continue;
    for (const auto& s : supported)
      if (s.is_string() && s.get_ref<const std::string&>() == v) return v;
  }
  return std::nullopt;
}

// One request waiting for its response.
struct mcp_pending {
  explicit mcp_pending(const mcp_strand& s) : timer(s) {}
  asio::steady_timer timer;
  std::optional<nlohmann::json> result;
  std::exception_ptr error;
  bool done = false;
  bool modern = false;  // sent with the per-request _meta of a modern version
};

// One child process and its pipes. Everything but the constructor runs on
// the client's strand.
class mcp_connection : public std::enable_shared_from_this<mcp_connection> {
 public:
  mcp_connection(mcp_strand strand, std::shared_ptr<mcp_shared> shared)
      : strand_(std::move(strand)),
        shared_(std::move(shared)),
        in_(asio::any_io_executor(strand_)),
        out_(asio::any_io_executor(strand_)),
        err_(asio::any_io_executor(strand_)) {}

  // Starts the process and the read loops. Throws mcp_error(launch_failed).
  void launch() {
    ignore_sigpipe_once();
    if (shared_->make_transport) {
      transport_ = shared_->make_transport(strand_, shared_);
      transport_->start(shared_from_this());
      return;
    }
    const auto& argv = shared_->argv;
    const auto& o = shared_->options;
    if (argv.empty()) throw mcp_error(mcp_error_kind::launch_failed, shared_->name, "empty argv");
    std::filesystem::path exe = argv[0];
    if (argv[0].find('/') == std::string::npos) {
      exe = bp::environment::find_executable(argv[0]);
      if (exe.empty()) {
        std::string m = "program \"";
        m += argv[0];
        m += "\" not found in PATH";
        throw mcp_error(mcp_error_kind::launch_failed, shared_->name, m);
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
      std::string m = "cannot start ";
      m += exe.string();
      m += ": ";
      m += e.what();
      throw mcp_error(mcp_error_kind::launch_failed, shared_->name, m);
    }
    ::setpgid(pid_, pid_);  // also from this side (no race with a kill); EACCES once it exec'd: already set
    shared_->pid.store(pid_);
    auto self = shared_from_this();
    asio::co_spawn(strand_, read_stdout(self), asio::detached);
    asio::co_spawn(strand_, read_stderr(self), asio::detached);
    asio::co_spawn(strand_, watch_exit(self), asio::detached);
  }

  mcp_connection(const mcp_connection&) = delete;
  mcp_connection& operator=(const mcp_connection&) = delete;
  // The child and its process group do not outlive the connection.
  ~mcp_connection() {
    if (transport_) transport_->stop();
    kill_now();
  }

  [[nodiscard]] bool alive() const noexcept { return !dead_; }
  [[nodiscard]] std::exception_ptr error() const noexcept { return dead_error_; }

  // Sends a request and waits for its response (result), an error response
  // (mcp_rpc_error), the timeout (cancellation sent, mcp_transient_error) or
  // the end of the connection (its error).
  //
  // On a modern connection (`set_modern`) the params carry the per-request
  // `_meta` fields (`io.modelcontextprotocol/protocolVersion`, `clientInfo`,
  // `clientCapabilities`, over any `_meta` of the caller's), a result's
  // `resultType` is checked, and an UnsupportedProtocolVersionError naming
  // another modern version this client speaks switches the connection to it
  // and sends the request once more.
  static asio::awaitable<nlohmann::json> request(std::shared_ptr<mcp_connection> self, std::string method,
                                                 nlohmann::json params, std::chrono::milliseconds timeout) {
    if (self->dead_) std::rethrow_exception(self->dead_error_);
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null() || !self->modern_meta_.is_null()) msg["params"] = std::move(params);
    bool relisted = false;
    for (int attempt = 0;; ++attempt) {
      const bool modern = !self->modern_meta_.is_null();
      if (modern) self->stamp_meta(msg["params"]);
      std::optional<nlohmann::json> r;
      std::exception_ptr mismatch;
      try {
        r = co_await self->exchange(self, method, msg, modern, timeout);
      } catch (const mcp_rpc_error& x) {
        if (modern && self->transport_ && !relisted && method == "tools/call" && x.code() == -32020)
          mismatch = std::current_exception();  // HeaderMismatch: the tool's x-mcp-header may have changed
        else if (!modern || attempt > 0 || x.code() != mcp_unsupported_version_code)
          throw;
        else if (const auto pick = mcp_pick_version(x.data().is_object() && x.data().contains("supported")
                                                        ? x.data()["supported"] : nlohmann::json(),
                                                    self->shared_->options.protocol_versions, true))
          // Once more, with the version the server named (the one just sent
          // too, if it names that one: the specification says to retry with a
          // version of its list, and a server may have refused it for a moment).
          self->set_modern(*pick);
        else
          throw;
      }
      if (mismatch) {
        // The specification's SHOULD: tools/list to see whether the tool's
        // inputSchema changed, then the call once more with its headers —
        // only if they differ now (else the server refused what a listing
        // cannot mend, and the same request would be refused again).
        relisted = true;
        const auto before = self->outgoing(msg, true).params;
        bool listed = true;
        try {
          co_await relist_tools(self, timeout);
        } catch (...) {
          listed = false;
        }
        if (!listed || self->outgoing(msg, true).params == before) std::rethrow_exception(mismatch);
        continue;
      }
      if (r) {
        if (modern && self->transport_ && method == "tools/list") {
          const auto& p = msg["params"];
          self->screen_tools(*r, !(p.is_object() && p.contains("cursor")));
        }
        co_return std::move(*r);
      }
    }
  }

  // Every page of tools/list (at most options.max_list_tools_pages), for what
  // screen_tools keeps of them.
  static asio::awaitable<void> relist_tools(std::shared_ptr<mcp_connection> self, std::chrono::milliseconds timeout) {
    std::optional<std::string> cursor;
    for (std::size_t page = 0; page < self->shared_->options.max_list_tools_pages; ++page) {
      nlohmann::json params = nlohmann::json::object();
      if (cursor) params["cursor"] = *cursor;
      const nlohmann::json r = co_await request(self, "tools/list", std::move(params), timeout);
      const auto next = r.is_object() ? r.find("nextCursor") : r.end();
      if (next == r.end() || !next->is_string()) co_return;
      cursor = next->get<std::string>();
    }
  }

  // Marks the connection modern, speaking `version` (non-empty), or legacy (empty).
  void set_modern(const std::string& version) {
    modern_version_ = version;
    if (version.empty()) {
      modern_meta_ = nullptr;
      return;
    }
    modern_meta_ = {{"io.modelcontextprotocol/protocolVersion", version},
                    {"io.modelcontextprotocol/clientInfo", shared_->options.client_info},
                    {"io.modelcontextprotocol/clientCapabilities", mcp_client_capabilities(shared_->options)}};
    if (const auto level = mcp_log_level_name(shared_->options.log_level); !level.empty())
      modern_meta_["io.modelcontextprotocol/logLevel"] = level;
  }
  // The modern version requests are sent with; empty on a legacy connection.
  [[nodiscard]] const std::string& modern_version() const noexcept { return modern_version_; }

  // The handshake settled on `version` (told to the transport).
  void set_protocol_version(const std::string& version) {
    if (transport_) transport_->initialized(version);
  }

  // For a transport: one message (or batch) received, handled as a line of stdout.
  void deliver(std::string_view message) {
    if (!dead_) handle_line(message);
  }
  // For a transport: is request `id` still waiting for its response?
  [[nodiscard]] bool pending(std::int64_t id) const { return pending_.count(id) != 0; }
  // For a transport: request `id` ends with `e` (the connection lives on).
  void fail_request(std::int64_t id, std::exception_ptr e) {
    const auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto p = it->second;
    pending_.erase(it);
    p->error = std::move(e);
    p->done = true;
    p->timer.cancel();
  }
  [[nodiscard]] const std::shared_ptr<mcp_shared>& shared() const noexcept { return shared_; }

 private:
  // Writes the per-request _meta into `params` (an object, or null made one).
  void stamp_meta(nlohmann::json& params) const {
    if (!params.is_object()) params = nlohmann::json::object();
    auto& meta = params["_meta"];
    if (!meta.is_object()) meta = nlohmann::json::object();
    for (const auto& [k, v] : modern_meta_.items()) meta[k] = v;
  }

  // A modern tools/list result over a transport: a tool whose x-mcp-header
  // annotations break the specification's constraints is left out (with a
  // warning to options.on_log, logger "tool_effects/mcp"); the valid
  // annotations are kept for the calls (outgoing), those of one listing
  // only: its first page (`first`, no cursor) forgets the earlier ones.
  void screen_tools(nlohmann::json& r, bool first) {
    if (first) shared_->param_headers.clear();
    const auto tools = r.is_object() ? r.find("tools") : r.end();
    if (tools == r.end() || !tools->is_array()) return;
    nlohmann::json kept = nlohmann::json::array();
    for (auto& t : *tools) {
      const auto n = t.is_object() ? t.find("name") : t.end();
      const auto schema = t.is_object() ? t.find("inputSchema") : t.end();
      if (n == t.end() || !n->is_string() || schema == t.end()) {
        kept.push_back(std::move(t));
        continue;
      }
      std::vector<mcp_param_header> headers;
      const std::string why = mcp_param_headers(*schema, headers);
      const std::string name = n->get<std::string>();
      if (why.empty()) {
        if (headers.empty())
          shared_->param_headers.erase(name);
        else
          shared_->param_headers[name] = std::move(headers);
        kept.push_back(std::move(t));
        continue;
      }
      shared_->param_headers.erase(name);
      if (const auto& on_log = shared_->options.on_log) {
        std::string m = "tools/list: tool \"";
        m += mcp_preview(name, 100);
        m += "\" left out: its inputSchema's ";
        m += mcp_preview(why, 400);
        try {
          on_log({{"level", "warning"}, {"logger", "tool_effects/mcp"}, {"data", m}});
        } catch (...) {  // a handler's failure is not the connection's
        }
      }
    }
    *tools = std::move(kept);
  }

  // What a transport may mirror of the request `msg` (modern: sent under modern_version_).
  [[nodiscard]] mcp_outgoing outgoing(const nlohmann::json& msg, bool modern) const {
    mcp_outgoing o;
    o.modern = modern;
    if (modern) o.version = modern_version_;
    if (const auto m = msg.find("method"); m != msg.end() && m->is_string()) o.method = m->get<std::string>();
    const char* key = o.method == "tools/call" || o.method == "prompts/get" ? "name"
                      : o.method == "resources/read"                      ? "uri"
                                                                          : nullptr;
    const auto p = msg.find("params");
    if (!key || p == msg.end() || !p->is_object()) return o;
    if (const auto n = p->find(key); n != p->end() && n->is_string()) o.name = n->get<std::string>();
    if (modern && o.name && o.method == "tools/call") {
      const auto h = shared_->param_headers.find(*o.name);
      const auto args = p->find("arguments");
      if (h != shared_->param_headers.end() && args != p->end())
        for (const auto& ph : h->second)
          if (auto v = mcp_param_value(*args, ph.path)) o.params.emplace_back(ph.name, std::move(*v));
    }
    return o;
  }

  // One round trip of `msg` under a fresh id.
  static asio::awaitable<nlohmann::json> exchange(std::shared_ptr<mcp_connection> self, const std::string& method,
                                                  nlohmann::json& msg, bool modern, std::chrono::milliseconds timeout) {
    if (self->dead_) std::rethrow_exception(self->dead_error_);
    const std::int64_t id = self->next_id_++;
    auto p = std::make_shared<mcp_pending>(self->strand_);
    p->modern = modern;
    self->pending_.emplace(id, p);
    msg["id"] = id;
    self->send(mcp_dump(msg), id, self->transport_ ? self->outgoing(msg, modern) : mcp_outgoing{});
    if (!p->done) {
      p->timer.expires_after(timeout);
      (void)co_await p->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (!p->done) {
      self->pending_.erase(id);
      ++self->shared_->timeouts;
      if (self->transport_) self->transport_->abandon(id);
      // initialize must not be cancelled (specification); over HTTP a modern
      // request is cancelled by closing its stream (abandon), no notification.
      const bool notice = method != "initialize" && !(modern && self->transport_);
      if (!self->dead_ && notice) self->notify("notifications/cancelled", {{"requestId", id}, {"reason", "timeout"}});
      std::string m = method;
      m += " (request ";
      m += std::to_string(id);
      m += ") got no response within ";
      m += std::to_string(timeout.count());
      m += notice ? " ms; cancellation sent" : " ms; its stream closed (cancellation)";
      m += self->shared_->stderr_ring.quote();
      throw mcp_transient_error(mcp_error_kind::timeout, self->shared_->name, m);
    }
    if (p->error) std::rethrow_exception(p->error);
    co_return std::move(*p->result);
  }

 public:
  // Sends a notification (no response). A modern connection over a
  // transport sends none: the 2026-07-28 Streamable HTTP binding defines no
  // client-to-server notification.
  void notify(const std::string& method, nlohmann::json params) {
    if (dead_ || (transport_ && !modern_version_.empty())) return;
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null()) msg["params"] = std::move(params);
    send(mcp_dump(msg));
  }

  // Sends a notification of the handshake under the legacy `version` and,
  // over a transport, waits until the server accepted it (HTTP: its 202):
  // a refusal is the transport's error, no answer within `timeout` a
  // timeout. On stdio it is written and not awaited (nothing acknowledges it).
  static asio::awaitable<void> notify_accepted(std::shared_ptr<mcp_connection> self, std::string method,
                                               nlohmann::json params, std::string version,
                                               std::chrono::milliseconds timeout) {
    if (self->dead_) std::rethrow_exception(self->dead_error_);
    if (!self->transport_) {
      self->notify(method, std::move(params));
      co_return;
    }
    nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
    if (!params.is_null()) msg["params"] = std::move(params);
    const std::int64_t id = -(self->next_id_++);  // negative: no id on the wire, the transport reports the acceptance
    auto p = std::make_shared<mcp_pending>(self->strand_);
    self->pending_.emplace(id, p);
    mcp_outgoing meta;
    meta.version = std::move(version);
    meta.method = method;
    self->send(mcp_dump(msg), id, std::move(meta));
    if (!p->done) {
      p->timer.expires_after(timeout);
      (void)co_await p->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (!p->done) {
      self->pending_.erase(id);
      if (self->transport_) self->transport_->abandon(id);
      std::string m = method;
      m += " was not accepted within ";
      m += std::to_string(timeout.count());
      m += " ms";
      throw mcp_transient_error(mcp_error_kind::timeout, self->shared_->name, m);
    }
    if (p->error) std::rethrow_exception(p->error);
  }

  // For a transport: the notification `id` (negative, notify_accepted) was accepted.
  void settle(std::int64_t id) {
    const auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto p = it->second;
    pending_.erase(it);
    p->result = nullptr;
    p->done = true;
    p->timer.cancel();
  }

  // Fails every pending request with `e` and stops the process at once.
  void fail(std::exception_ptr e) {
    if (!mark_dead(std::move(e))) return;
    kill();
  }

  // Clean shutdown (specification): close stdin, wait, SIGTERM, wait, SIGKILL.
  // The first wait ends early when the server shows no sign of exiting: it
  // neither exited nor closed its stdout within options.shutdown_sign.
  static asio::awaitable<void> shutdown(std::shared_ptr<mcp_connection> self, std::exception_ptr why) {
    if (!self->mark_dead(std::move(why))) co_return;
    if (auto t = self->transport_) {
      co_await t->shutdown();
      co_return;
    }
    boost::system::error_code ec;
    self->in_.close(ec);
    const auto grace = self->shared_->options.shutdown_grace;
    const auto sign = std::min(grace, self->shared_->options.shutdown_sign);
    bool exited = co_await self->wait_exit(sign);
    if (!exited && self->stdout_eof_) exited = co_await self->wait_exit(grace - sign);
    if (!exited) {
      self->signal_group(SIGTERM);
      if (!co_await self->wait_exit(self->shared_->options.shutdown_grace)) self->kill_now();
    }
    self->signal_group(SIGKILL);  // what the server left behind (no-op once reaped: see reap)
    self->close_pipes();
  }

 private:
  // Marks the connection dead and fails every pending request; false if it already was.
  bool mark_dead(std::exception_ptr e) {
    if (dead_) return false;
    dead_ = true;
    dead_error_ = std::move(e);
    if (requests_) requests_->abandon();
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) {
      p->error = dead_error_;
      p->done = true;
      p->timer.cancel();
    }
    return true;
  }

  void kill() {
    if (transport_) transport_->stop();
    kill_now();
    close_pipes();
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
  void send(std::string line, std::int64_t request_id = 0, mcp_outgoing meta = {}) {
    if (dead_) return;
    if (transport_) return transport_->send(std::move(line), request_id, std::move(meta));
    const std::size_t queued = out_buf_.size() + in_flight_bytes_;
    const std::size_t limit = shared_->options.max_write_queue_bytes;
    if (queued > 0 && queued + line.size() + 1 > limit) {
      std::string m = "it stopped reading its stdin: ";
      m += std::to_string(queued);
      m += " bytes are waiting to be written and ";
      m += std::to_string(line.size() + 1);
      m += " more would pass the limit of ";
      m += std::to_string(limit);
      m += " bytes (options.max_write_queue_bytes)";
      m += shared_->stderr_ring.quote();
      fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, shared_->name, m)));
      return;
    }
    line += '\n';
    out_buf_ += line;
    if (!writing_) {
      writing_ = true;
      asio::co_spawn(strand_, write_loop(shared_from_this()), asio::detached);
    }
  }

  static asio::awaitable<void> write_loop(std::shared_ptr<mcp_connection> self) {
    std::string buf;
    while (!self->out_buf_.empty() && !self->dead_) {
      buf.clear();
      buf.swap(self->out_buf_);
      self->in_flight_bytes_ = buf.size();
      auto [ec, n] = co_await asio::async_write(self->in_, asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      (void)n;
      self->in_flight_bytes_ = 0;
      if (ec) {
        if (!self->dead_) {
          std::string m = "writing to its stdin failed: ";
          m += ec.message();
          m += self->shared_->stderr_ring.quote();
          self->fail(std::make_exception_ptr(
              mcp_transient_error(mcp_error_kind::server_exited, self->shared_->name, m)));
        }
        break;
      }
    }
    self->out_buf_.clear();
    self->in_flight_bytes_ = 0;
    self->writing_ = false;
  }

  static asio::awaitable<void> read_stdout(std::shared_ptr<mcp_connection> self) {
    std::array<char, 65536> chunk{};
    std::string line;
    const std::size_t limit = self->shared_->options.max_line_bytes;
    for (;;) {
      auto [ec, n] = co_await self->out_.async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::eof) self->stdout_eof_ = true;  // a sign of exiting (shutdown)
      if (self->dead_) co_return;
      std::string_view data(chunk.data(), n);
      while (!data.empty()) {
        const auto nl = data.find('\n');
        const auto part = data.substr(0, nl);
        if (line.size() + part.size() > limit) {
          std::string m = "a line of its output exceeds the limit of ";
          m += std::to_string(limit);
          m += " bytes";
          m += self->shared_->stderr_ring.quote();
          self->fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, self->shared_->name, m)));
          co_return;
        }
        line.append(part);
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
        self->handle_line(line);
        line.clear();
        if (self->dead_) co_return;
      }
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
      m = "exited with status ";
      m += std::to_string(WEXITSTATUS(status_));
    } else if (WIFSIGNALED(status_)) {
      m = "was killed by signal ";
      m += std::to_string(WTERMSIG(status_));
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
  static asio::awaitable<void> watch_exit(std::shared_ptr<mcp_connection> self) {
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
    if (self->dead_ || !self->reap(false)) co_return;
    asio::steady_timer t(self->strand_);
    for (int i = 0; i < 100 && !self->dead_; ++i) {
      t.expires_after(std::chrono::milliseconds(5));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (self->dead_) co_return;
    std::string m = self->exit_message(true);
    m += " (its stdout is still open: a process it started outside its process group holds it)";
    m += self->shared_->stderr_ring.quote();
    self->fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, self->shared_->name, m)));
  }

  asio::awaitable<void> on_stdout_closed() {
    // Let stderr drain and the process exit (up to 2 s each, on a loaded
    // machine a dying interpreter takes that long) so that the error quotes
    // its last words and its status.
    asio::steady_timer t(strand_);
    for (int i = 0; i < 400 && !stderr_closed_ && !dead_; ++i) {
      t.expires_after(std::chrono::milliseconds(5));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (dead_) co_return;
    const bool exited = co_await wait_exit(std::chrono::milliseconds(2000));
    if (dead_) co_return;
    std::string m = exit_message(exited);
    m += shared_->stderr_ring.quote();
    fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, shared_->name, m)));
  }

  static asio::awaitable<void> read_stderr(std::shared_ptr<mcp_connection> self) {
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

  void protocol_error(const std::string& what, std::string_view line) {
    std::string m = what;
    m += ": \"";
    m += mcp_preview(line);
    m += '"';
    m += shared_->stderr_ring.quote();
    fail(std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, shared_->name, m)));
  }

  // One line of the server's output. It is parsed by the library's bounded
  // parse (detail::parse_json: at most max_json_depth levels, no duplicate
  // keys), so that no value deeper than that ever exists here. A line that
  // is JSON but not admitted is a bad message: it fails the request its id
  // answers with protocol_error (a request from the server gets an error
  // reply; no id: ignored); the connection lives on. A line that is not
  // JSON at all ends the connection (protocol_error for every request).
  void handle_line(std::string_view line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) return;
    nlohmann::json j;
    try {
      j = parse_json(line, "");
    } catch (const json_error& e) {
      return on_bad_message(line, e.what());
    }
    if (j.is_array()) {  // a batch (2025-03-26)
      for (auto& m : j) {
        if (!handle_message(m, line)) return;
      }
      return;
    }
    handle_message(j, line);
  }

  // A line that is JSON but was refused by the bounded parse (`why`).
  void on_bad_message(std::string_view line, const std::string& why) {
    const mcp_envelope env = mcp_scan_envelope(line);
    if (!env.json) return protocol_error("its output is not JSON", line);
    if (!env.id) {
      ++shared_->ignored_messages;
      return;
    }
    if (env.method) {  // a request of the server's own: refused, the connection lives on
      nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", *env.id}};
      reply["error"] = {{"code", -32600}, {"message", "Invalid Request: " + why}};
      send(mcp_dump(reply));
      return;
    }
    const auto it = env.id->is_number_integer() && env.id->get<std::int64_t>() > 0
                        ? pending_.find(env.id->get<std::int64_t>())
                        : pending_.end();
    if (it == pending_.end()) {
      ++shared_->unknown_responses;
      return;
    }
    auto p = it->second;
    pending_.erase(it);
    std::string m = "its response to request ";
    m += std::to_string(env.id->get<std::int64_t>());
    m += " was refused: ";
    m += why;
    m += " (";
    m += std::to_string(line.size());
    m += " bytes)";
    p->error = std::make_exception_ptr(mcp_transient_error(mcp_error_kind::protocol_error, shared_->name, m));
    p->done = true;
    p->timer.cancel();
  }

  // False when the message was a protocol error (the connection is then dead).
  bool handle_message(nlohmann::json& j, std::string_view line) {
    const auto version = j.is_object() ? j.find("jsonrpc") : j.end();
    if (!j.is_object() || version == j.end() || !version->is_string() || version->get_ref<const std::string&>() != "2.0") {
      protocol_error("its output is not a JSON-RPC 2.0 message", line);
      return false;
    }
    const auto method = j.find("method");
    const auto id = j.find("id");
    if (method != j.end()) {
      if (!method->is_string()) {
        protocol_error("a message's method is not a string", line);
        return false;
      }
      static const nlohmann::json no_params;
      const auto p = j.find("params");
      const nlohmann::json& params = p != j.end() ? *p : no_params;
      if (id != j.end())
        on_request(*id, method->get<std::string>(), params);
      else
        on_notification(method->get<std::string>(), params);
      return true;
    }
    if (id != j.end() && (j.contains("result") || j.contains("error"))) {
      on_response(*id, j);
      return true;
    }
    protocol_error("a message is neither a request, a notification nor a response", line);
    return false;
  }

  void on_request(const nlohmann::json& id, const std::string& method, const nlohmann::json& params) {
    if (transport_ && !modern_version_.empty()) {  // 2026-07-28 over HTTP: servers send no requests, clients no responses
      ++shared_->ignored_messages;
      return;
    }
    if (method != "ping" && serve_client_request(id, method, params)) return;
    nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", id}};
    if (method == "ping") {
      reply["result"] = nlohmann::json::object();
    } else {
      std::string m = "Method not found: ";
      m += mcp_preview(method, 200);  // a flood of 1 MB names must not become 1 MB replies
      reply["error"] = {{"code", -32601}, {"message", m}};
    }
    send(mcp_dump(reply));
  }

  void on_notification(const std::string& method, const nlohmann::json& params) {
    const auto& o = shared_->options;
    try {
      if (method == "notifications/progress" && shared_->caps.progress.route(params)) return;  // a call's own token
      if (method == "notifications/cancelled" && requests_ && requests_->cancel(params)) return;
      if (method == "notifications/elicitation/complete") {  // ours, or ignored (unknown or repeated id)
        const auto id = params.is_object() ? params.find("elicitationId") : params.end();
        if (id != params.end() && id->is_string() && shared_->caps.elicitations.complete(id->get<std::string>()) &&
            o.on_elicitation_complete)
          o.on_elicitation_complete(shared_->name, id->get<std::string>());
        return;
      }
      if (method == "notifications/tools/list_changed" && o.on_tools_list_changed) o.on_tools_list_changed();
      else if (method == "notifications/message" && o.on_log) o.on_log(params);
      else if (method == "notifications/progress" && o.on_progress) o.on_progress(params);
      else if (o.on_notification) o.on_notification(method, params);
    } catch (...) {  // a handler's failure is not the connection's
    }
  }

  void on_response(const nlohmann::json& id, nlohmann::json& j) {
    if (!id.is_number_integer() || id.get<std::int64_t>() <= 0) {  // ours are positive (negative: notify_accepted)
      ++shared_->unknown_responses;
      return;
    }
    const auto it = pending_.find(id.get<std::int64_t>());
    if (it == pending_.end()) {  // late (timed out) or invented: ignored
      ++shared_->unknown_responses;
      return;
    }
    auto p = it->second;
    pending_.erase(it);
    if (const auto e = j.find("error"); e != j.end()) {
      int code = 0;
      std::string message = "(no message)";
      nlohmann::json data = nullptr;
      if (e->is_object()) {
        if (const auto c = e->find("code"); c != e->end() && c->is_number_integer()) code = c->get<int>();
        if (const auto m = e->find("message"); m != e->end() && m->is_string()) message = m->get<std::string>();
        if (const auto d = e->find("data"); d != e->end()) data = *d;
      }
      if (transport_) {  // a server that echoes what it was sent (a token, an API key) into an error, in a 200
        message = transport_->redact(std::move(message));
        if (!data.is_null()) {  // data that quotes a secret is kept as its redacted text
          const std::string dumped = data.dump();
          if (std::string r = transport_->redact(dumped); r != dumped) data = std::move(r);
        }
      }
      p->error = std::make_exception_ptr(mcp_rpc_error(shared_->name, code, message, std::move(data)));
    } else if (p->modern && !check_result_type(j["result"], p)) {
      // p->error set
    } else {
      p->result = std::move(j["result"]);
    }
    p->done = true;
    p->timer.cancel();
  }

  // A modern result's `resultType` (2026-07-28): absent (an earlier
  // server's) or "complete" is a result; "input_required" asks for input
  // this client cannot give (it declares no client capabilities); anything
  // else is invalid (the specification). False, with p->error set, if not a result.
  bool check_result_type(const nlohmann::json& result, const std::shared_ptr<mcp_pending>& p) {
    const auto t = result.is_object() ? result.find("resultType") : result.end();
    if (!result.is_object() || t == result.end() || (t->is_string() && t->get_ref<const std::string&>() == "complete"))
      return true;
    std::string m;
    if (t->is_string() && t->get_ref<const std::string&>() == "input_required") {
      if (mcp_serves_input(shared_->options)) return true;  // the client answers it (mcp_request_with_input)
      m = "the server needs input this client cannot give (resultType \"input_required\"";
      if (const auto r = result.find("inputRequests"); r != result.end() && r->is_object())
        for (const auto& [k, v] : r->items()) {
          m += ", ";
          m += mcp_preview(k, 60);
          m += ": ";
          m += v.is_object() && v.contains("method") ? mcp_preview(mcp_dump(v["method"]), 60) : std::string("?");
        }
      m += "); it declares no client capabilities (elicitation, sampling, roots)";
    } else {
      m = "at /result/resultType: unknown result type ";
      m += mcp_preview(mcp_dump(*t), 100);
      m += " (known: \"complete\", \"input_required\")";
    }
    p->error = std::make_exception_ptr(mcp_error(mcp_error_kind::protocol_error, shared_->name, m));
    return false;
  }

  // A request the application has a handler for (client_requests.hpp):
  // served there; false when it has none.
  bool serve_client_request(const nlohmann::json& id, const std::string& method, const nlohmann::json& params) {
    if (!requests_) {
      std::weak_ptr<mcp_connection> weak = weak_from_this();
      requests_ = std::make_shared<mcp_client_requests<mcp_shared>>(strand_, shared_, [weak](std::string line) {
        if (auto self = weak.lock()) self->send(std::move(line));
      });
    }
    if (!requests_->serves(method)) return false;
    requests_->start(id, method, params);
    return true;
  }

  mcp_strand strand_;
  std::shared_ptr<mcp_shared> shared_;
  std::shared_ptr<mcp_client_requests<mcp_shared>> requests_;  // made at the first request of the server's
  asio::writable_pipe in_;
  asio::readable_pipe out_;
  asio::readable_pipe err_;
  int pid_ = -1;
  bool exited_ = false;
  bool stdout_eof_ = false;
  int status_ = 0;
  bool dead_ = false;
  bool writing_ = false;
  bool stderr_closed_ = false;
  std::exception_ptr dead_error_;
  std::string out_buf_;
  std::size_t in_flight_bytes_ = 0;
  std::int64_t next_id_ = 1;
  std::unordered_map<std::int64_t, std::shared_ptr<mcp_pending>> pending_;
  std::shared_ptr<mcp_transport> transport_;  // null: the child process's pipes
  std::string modern_version_;  // empty: legacy (initialize) or not yet known
  nlohmann::json modern_meta_;  // the per-request _meta fields of modern_version_; null when legacy
};

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_DETAIL_CONNECTION_HPP
