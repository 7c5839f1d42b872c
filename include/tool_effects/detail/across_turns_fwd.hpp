// tool_effects/detail/across_turns_fwd.hpp — what the dispatcher knows of
// coordinators (coordination.hpp) and turn journals (journal.hpp) without
// including them: the traits that find one among the dispatch options'
// extras, and the declarations of the coordinated and the journaled start of
// a call. coordination.hpp and journal.hpp specialise the traits and define
// the starts. A program that puts a coordinator or a journal in its options
// made one, so it included their header, and the definitions are there when
// the dispatcher's templates are instantiated; a translation unit that uses
// neither parses neither (coordination.hpp alone costs about as much as the
// rest of the dispatcher).
#ifndef TOOL_EFFECTS_DETAIL_ACROSS_TURNS_FWD_HPP
#define TOOL_EFFECTS_DETAIL_ACROSS_TURNS_FWD_HPP

#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <tool_effects/effect.hpp>

namespace tool_effects {

struct call_description;
class approver;

namespace detail {

// Whether T is a coordinator / a journal: false here; true where
// coordination.hpp (`Coordinator`) and journal.hpp (`Journal`) say so.
template <class T>
struct is_coordinator : std::false_type {};
template <class T>
struct is_journal : std::false_type {};
// Whether journal J commits records together (journal.hpp: `BatchJournal`): false here.
template <class J>
struct is_batch_journal : std::false_type {};

// The first extra of the dispatch options `O<E...>` for which `Is<E>` holds (void: none).
template <template <class> class Is, class Options>
struct first_extra {
  using type = void;
};
template <template <class> class Is, template <class...> class O, class... E>
struct first_extra<Is, O<E...>> {
  template <class...>
  struct first {
    using type = void;
  };
  template <class H, class... T>
  struct first<H, T...> {
    using type = std::conditional_t<Is<H>::value, H, typename first<T...>::type>;
  };
  using type = typename first<E...>::type;
};

template <class Options>
using options_coordinator_t = typename first_extra<is_coordinator, std::remove_cvref_t<Options>>::type;
template <class Options>
inline constexpr bool options_have_coordinator = !std::is_void_v<options_coordinator_t<Options>>;
template <class Options>
using options_journal_t = typename first_extra<is_journal, std::remove_cvref_t<Options>>::type;
template <class Options>
inline constexpr bool options_have_journal = !std::is_void_v<options_journal_t<Options>>;
// Whether the options' journal is a batch journal: its calls' *started* records are queued by the engine's step
// that makes them ready, and committed together at that step's end (journal.hpp, `release_journal`).
template <class Options>
inline constexpr bool options_have_batch_journal = is_batch_journal<options_journal_t<Options>>::value;

// The grant of one call of a turn, taken at the turn's start with those of the other calls ready then, as one
// request (coordination.hpp); `grants_turn_groups<C>`: coordinator C takes such requests (false here;
// local_coordinator does).
class turn_grant;
template <class C>
struct grants_turn_groups : std::false_type {};
template <class Options>
inline constexpr bool options_grant_turn_groups = grants_turn_groups<options_coordinator_t<Options>>::value;
// Grants the calls `ready` (null: not ready) at once; out[i]: call i's grant, or empty (coordination.hpp).
template <class C>
void grant_group(const C& c, std::span<const call_description* const> ready, std::span<turn_grant> out);

// Defined in detail/dispatch_coordination.hpp (included by coordination.hpp).
template <class Tool>
const call_description& static_description();
template <class R, class C, class Executor, class Cancel, class Done, class Run>
void coordinate_call(const C& c, const call_description& d, std::string_view name, effect_set effects,
                     const Executor& ex, Cancel cancel, Done&& done, Run run);
template <class R, class Done, class Grant, class Run>
void run_granted(Done&& dn, Grant& g, std::string_view name, effect_set effects, Run& run);

// Defined in journal.hpp.
template <class R, class J, class Executor, class Done, class Run>
void journal_call(const J& journal, const std::string& key, std::string_view name, effect_set effects,
                  const approver* in_doubt_approver, const Executor& ex, Done&& done, Run run);
// A step of a journaled turn's engine (its start, or a call's end) launches the calls it makes ready between
// hold_journal and release_journal; with a batch journal, release_journal commits their *started* records.
template <class J, class Executor>
void hold_journal(const J& journal, const Executor& ex);
template <class J, class Executor>
void release_journal(const J& journal, const Executor& ex);
// The end of a journaled turn: commits what the journal still holds (a batch journal's ended records).
template <class J>
void flush_journal(const J& journal);

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_ACROSS_TURNS_FWD_HPP
