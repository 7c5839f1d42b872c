// Retry only where safe: a flaky idempotent lookup is retried with jittered
// backoff and one idempotency key; a flaky email (non-idempotent) is never
// retried — the runtime path returns a failure record instead; a destructive
// call runs only after the approver says yes. Exits 0 when all of that holds.
#include <tool_effects/retry.hpp>

#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>

namespace te = tool_effects;
using namespace std::chrono_literals;

struct timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct users : te::resource<> {
  static constexpr std::string_view resource_name = "users";
};

// Reads, idempotent: RetrySafe. Receives the attempt context (key, attempt number).
struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::network>;
  std::set<std::string> keys_seen;
  int calls = 0;
  std::string operator()(const te::attempt_context& ctx, int id) {
    ++calls;
    keys_seen.insert(ctx.idempotency_key);
    std::printf("  fetch_user attempt %zu (key %s)\n", ctx.attempt, ctx.idempotency_key.c_str());
    if (ctx.attempt < 3) throw timeout("read timeout");
    return "user #" + std::to_string(id);
  }
};

int main() {
  const te::retry_policy policy{.max_attempts = 4,
                                .base_delay = 1ms,
                                .max_delay = 5ms,
                                .jitter = te::jitter_mode::full,
                                .is_transient = te::transient_on<timeout>(),
                                .seed = 2024};

  // 1. A retry-safe tool: retried after transient errors, every attempt with the same key.
  std::puts("retry(fetch_user):");
  fetch_user fetch;
  const std::string user = te::retry(policy, fetch, 42);
  std::printf("  -> %s after %d attempts, %zu distinct key(s)\n", user.c_str(), fetch.calls, fetch.keys_seen.size());
  // te::retry(policy, send_email{}, ...) would not compile: retry_rejected<send_email, reason::non_idempotent_side_effect>.

  // 2. A tool known only at runtime (e.g. from an MCP server): never retried when not retry-safe.
  std::puts("run_with_recovery(send_email):");
  const auto send_email = te::describe_runtime("send_email", {te::effect::write, te::effect::external}, {});
  int emails = 0;
  auto sent = te::run_with_recovery(send_email, te::recovery_options{policy, {}}, {}, [&] {
    ++emails;
    throw timeout("smtp timeout after the message was queued");
  });
  std::printf("  -> invoked %d time(s); %s\n", emails, te::to_string(sent.failure()).c_str());

  // 3. A destructive tool: held for confirmation; denied means it never runs.
  std::puts("run_with_recovery(delete_account):");
  const auto del = te::describe_runtime("delete_account", {te::effect::destructive},
                                        {{"users", te::access_mode::write, "42"}});
  int deletions = 0;
  te::recovery_options ask_human{policy, [](const te::confirmation_request& r) {
                                   std::printf("  approver asked: %.*s {%s} class=%.*s\n",
                                               static_cast<int>(r.tool.size()), r.tool.data(),
                                               te::to_string(r.effects).c_str(),
                                               static_cast<int>(te::to_string(r.effect_class).size()),
                                               te::to_string(r.effect_class).data());
                                   return te::confirmation::deny;
                                 }};
  auto deleted = te::run_with_recovery(del, ask_human, {}, [&] { ++deletions; });
  std::printf("  -> invoked %d time(s); %s\n", deletions, te::to_string(deleted.failure()).c_str());

  const bool ok = user == "user #42" && fetch.calls == 3 && fetch.keys_seen.size() == 1 && emails == 1 &&
                  sent.failure().reason == te::failure_reason::unsafe_to_retry && deletions == 0 &&
                  deleted.failure().reason == te::failure_reason::confirmation_denied;
  std::puts(ok ? "OK" : "UNEXPECTED");
  return ok ? 0 : 1;
}
