// tool_effects/journal.hpp — a turn journal: each call at most once across
// re-runs of a turn (a host restarted mid-turn, a retried model request, a
// resumed graph).
//
//   auto journal = tool_effects::sqlite_journal("turns.db");      // sqlite_journal.hpp
//   host.run(pool, run_options{}.with(journal), calls, scope);
//
// Per call, under its idempotency key (from the call's identity and scope in
// json_tool_host; `call(...).with_idempotency_key(k)` for static calls):
// - no record: the journal durably records *started* before the call can
//   run (a journal fault: the call does not run, its outcome says why), and
//   its outcome (result or failure) when it ends;
// - *ended*: the call is not run again; its recorded outcome is returned,
//   `replayed()`;
// - *started* but not ended (the process died): in doubt. It runs again only
//   if it is retry-safe (`may_retry`), or if the options' approver approves
//   it when asked with `may_already_have_happened` set (asked synchronously);
//   else it fails with `call_failure{in_doubt}`: never silently a second time.
// States and limits: docs/coordination.md.
#ifndef TOOL_EFFECTS_JOURNAL_HPP
#define TOOL_EFFECTS_JOURNAL_HPP

#include <charconv>
#include <concepts>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include <tool_effects/confirmation.hpp>
#include <tool_effects/detail/across_turns_fwd.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// A journal could not read or record (unwritable, full, corrupt, written
/// by another version). `what()` names the journal and the cause.
class journal_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a journal knows of one call.
struct journal_entry {
  enum class state : std::uint8_t { started, ended };
  state at = state::started;
  bool failed = false;       ///< ended with a failure
  std::string result{};      ///< ended successfully: the result, encoded by `journal_codec<R>`
  std::string reason{};      ///< failed with a failure record: its stable reason slug ("" for a plain error)
  std::string message{};     ///< failed: the error's message
};

/// A journal: `find(key)` the entry of a call (nothing: never started);
/// `record_started(key, name)` returns only once the record is durable;
/// `record_ended(key, entry)`. All throw `journal_error` on a fault; all are
/// thread-safe. A handle: copies share one journal.
template <class J>
concept Journal = std::copy_constructible<J> &&
                  requires(const J& j, const std::string& key, std::string_view name, const journal_entry& e) {
                    { j.find(key) } -> std::same_as<std::optional<journal_entry>>;
                    j.record_started(key, name);
                    j.record_ended(key, e);
                  };

/// How a result of type R is recorded: `encode(const R&) -> std::string` and
/// `decode(std::string_view) -> R`. Given for void, bool, arithmetic types,
/// std::string and JSON values with `dump()` and `parse()` (nlohmann::json);
/// specialise it for other result types of journaled calls.
template <class R, class = void>
struct journal_codec;

template <>
struct journal_codec<void> {};

template <>
struct journal_codec<std::string> {
  static std::string encode(const std::string& v) { return v; }
  static std::string decode(std::string_view s) { return std::string(s); }
};

template <class R>
struct journal_codec<R, std::enable_if_t<std::is_arithmetic_v<R>>> {
  static std::string encode(const R& v) {
    if constexpr (std::is_same_v<R, bool>) return v ? "true" : "false";
    else if constexpr (std::is_floating_point_v<R>) {
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, v);
      return std::string(buf, r.ptr);
    } else {
      return std::to_string(v);
    }
  }
  static R decode(std::string_view s) {
    if constexpr (std::is_same_v<R, bool>) return s == "true";
    else if constexpr (std::is_floating_point_v<R>) return static_cast<R>(std::stod(std::string(s)));
    else {
      R v{};
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec != std::errc{}) throw journal_error("tool_effects: journal: a recorded result does not decode");
      return v;
    }
  }
};

template <class R>
struct journal_codec<R, std::enable_if_t<!std::is_arithmetic_v<R> && requires(const R& v, std::string_view s) {
                          { v.dump() } -> std::convertible_to<std::string>;
                          { R::parse(s) } -> std::convertible_to<R>;
                        }>> {
  static std::string encode(const R& v) { return v.dump(); }
  static R decode(std::string_view s) { return R::parse(s); }
};

/// Whether results of type R can be journaled.
template <class R>
concept JournalEncodable = std::is_void_v<R> || requires(const R& v, std::string_view s) {
  { journal_codec<R>::encode(v) } -> std::convertible_to<std::string>;
  { journal_codec<R>::decode(s) } -> std::convertible_to<R>;
};

namespace detail {

// Journals among the dispatch options' extras (detail/across_turns_fwd.hpp).
template <Journal J>
struct is_journal<J> : std::true_type {};

template <class R>
journal_entry ended_entry(const outcome<R>& o) {
  journal_entry e;
  e.at = journal_entry::state::ended;
  if (o.has_value()) {
    if constexpr (!std::is_void_v<R>) e.result = journal_codec<R>::encode(o.value());
    return e;
  }
  e.failed = true;
  try {
    if (o.has_error()) std::rethrow_exception(o.error());
    e.message = "aborted";
  } catch (const call_failure& f) {
    e.reason = std::string(to_string(f.reason()));
    e.message = f.record().last_error_message;
  } catch (const std::exception& x) {
    e.message = x.what();
  } catch (...) {
    e.message = "unknown exception";
  }
  return e;
}

template <class R>
outcome<R> replay(const journal_entry& e, std::string_view name, effect_set effects) {
  outcome<R> o;
  if (!e.failed) {
    if constexpr (std::is_void_v<R>) o = outcome<R>::success();
    else o = outcome<R>::success(journal_codec<R>::decode(e.result));
  } else if (const auto r = try_parse_failure_reason(e.reason)) {
    auto rec = make_failure_record(std::string(name), 0, classify(effects), *r);
    rec.last_error_message = e.message;
    o = outcome<R>::failure(std::make_exception_ptr(call_failure(std::move(rec))));
  } else {
    o = outcome<R>::failure(std::make_exception_ptr(std::runtime_error(e.message)));
  }
  o.mark_replayed();
  return o;
}

template <class R>
outcome<R> journal_fault(std::string_view name, std::string_view what) {
  return outcome<R>::failure(std::make_exception_ptr(
      journal_error(str_cat("tool_effects: '", name, "' was not run: ", what))));
}

// The completion of a journaled call: records its end, then delivers its outcome.
template <class R, class J, class Done>
struct record_then {
  J journal;
  std::string key;
  Done done;
  void operator()(outcome<R> o) {
    try {
      journal.record_ended(key, ended_entry(o));
    } catch (...) {
      // The outcome is delivered anyway; the call stays in doubt in the journal (never run twice silently).
    }
    done(std::move(o));
  }
};

// THE journaled start of a dispatched call: replays an ended call, refuses an
// in-doubt call that is not retry-safe, else records *started* durably and
// `run(done')` with `done'` recording the end. Journal faults: the call does
// not run and its outcome is a `journal_error`.
template <class R, class J, class Done, class Run>
void journal_call(const J& journal, const std::string& key, std::string_view name, effect_set effects,
                  const approver* in_doubt_approver, Done&& done, Run run) {
  static_assert(JournalEncodable<R>,
                "tool_effects: a journaled call's result type has no journal_codec<R>; specialise "
                "tool_effects::journal_codec for it");
  if (key.empty()) {
    done(journal_fault<R>(name, "a journaled call needs an idempotency key (json_tool_host derives one; for a "
                                "static call use call(...).with_idempotency_key(k))"));
    return;
  }
  try {
    if (const auto e = journal.find(key)) {
      if (e->at == journal_entry::state::ended) {
        done(replay<R>(*e, name, effects));
        return;
      }
      if (!may_retry(effects, false)) {
        bool approved = false;
        std::exception_ptr approver_error;
        if (in_doubt_approver != nullptr) {
          try {
            confirmation_request request = make_confirmation_request(name, {}, effects, key);
            request.may_already_have_happened = true;
            approved = in_doubt_approver->ask(request) == confirmation::approve;
          } catch (...) {
            approver_error = std::current_exception();
          }
        }
        if (approved) {
          journal.record_started(key, name);
          run(record_then<R, J, std::decay_t<Done>>{journal, key, std::forward<Done>(done)});
          return;
        }
        auto rec = make_failure_record(std::string(name), 0, classify(effects), failure_reason::in_doubt, approver_error);
        rec.last_error_message = str_cat("started in an earlier run that did not end (key ", key,
                                         "): it may already have happened",
                                         in_doubt_approver ? "; the approver did not approve running it again" : "");
        done(outcome<R>::failure(std::make_exception_ptr(call_failure(std::move(rec)))));
        return;
      }
    }
    journal.record_started(key, name);
  } catch (const std::exception& e) {
    done(journal_fault<R>(name, e.what()));
    return;
  }
  run(record_then<R, J, std::decay_t<Done>>{journal, key, std::forward<Done>(done)});
}

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JOURNAL_HPP
