// tool_effects/impl/engine.ipp — the definitions of detail/engine.hpp's plan_engine: included by that header
// (header-only, the default), or compiled once by <tool_effects/impl/src.hpp> (TOOL_EFFECTS_SEPARATE_COMPILATION).
#ifndef TOOL_EFFECTS_IMPL_ENGINE_IPP
#define TOOL_EFFECTS_IMPL_ENGINE_IPP

#include <algorithm>
#include <functional>

#include <tool_effects/detail/engine.hpp>

namespace tool_effects::detail {

TOOL_EFFECTS_DECL plan_engine::plan_engine(std::size_t n, std::size_t words, const std::uint64_t* rows,
                                           engine_config cfg)
    : n_(n), words_(words), rows_(rows), cfg_(cfg), pending_(new std::atomic<std::uint32_t>[n]), remaining_(n) {
  // + 1: the start token (see start()).
  for (std::size_t i = 0; i < n; ++i)
    pending_[i].store(static_cast<std::uint32_t>(predecessor_count(row(i), i)) + 1, std::memory_order_relaxed);
}

TOOL_EFFECTS_DECL plan_engine::plan_engine(std::size_t n, const std::uint32_t* pred_off,
                                           const std::uint32_t* succ_off, const std::uint32_t* succ,
                                           engine_config cfg)
    : n_(n), words_(0), rows_(nullptr), succ_off_(succ_off), succ_(succ), cfg_(cfg),
      pending_(new std::atomic<std::uint32_t>[n]), remaining_(n) {
  for (std::size_t i = 0; i < n; ++i)
    pending_[i].store(pred_off ? pred_off[i + 1] - pred_off[i] + 1 : 1, std::memory_order_relaxed);
}

TOOL_EFFECTS_DECL plan_engine::~plan_engine() = default;

TOOL_EFFECTS_DECL void plan_engine::start() {
  if (n_ == 0) {
    finish();
    return;
  }
  // Every counter holds one extra unit, the start token, taken here in
  // program order: a call starts when its token and all its predecessors'
  // completions are in, whichever comes last (here, or in the complete()
  // of its last predecessor, which may run concurrently with this loop):
  // exactly once, and never before this loop reached it.
  for (std::size_t i = 0; i < n_; ++i) release(i);
}

TOOL_EFFECTS_DECL void plan_engine::run_inline() {
  inline_ = true;
  for (std::size_t i = 0; i < n_; ++i) run_inline_one(i);
  finish();
}

TOOL_EFFECTS_DECL void plan_engine::wait() {
  std::unique_lock lock(done_mutex_);
  done_cv_.wait(lock, [this] { return done_; });
}

TOOL_EFFECTS_DECL void plan_engine::complete(std::size_t i, bool failed) {
  if (failed && cfg_.abort_on_error) aborting_.store(true, std::memory_order_release);
  if (inline_) return;
  if (succ_off_ != nullptr) {
    for (std::uint32_t k = succ_off_[i]; k < succ_off_[i + 1]; ++k) release(succ_[k]);
  } else if (rows_ != nullptr) {
    for_each_successor(row(i), words_, i, [this](std::size_t j) { release(j); });
  }
  if (cfg_.max_concurrency != 0) release_slot();
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
}

TOOL_EFFECTS_DECL void plan_engine::finished() {
  std::lock_guard lock(done_mutex_);
  done_ = true;
  done_cv_.notify_all();
}

TOOL_EFFECTS_DECL void plan_engine::release(std::size_t j) {
  if (pending_[j].fetch_sub(1, std::memory_order_acq_rel) == 1) admit(j);
}

TOOL_EFFECTS_DECL void plan_engine::admit(std::size_t i) {
  if (cfg_.max_concurrency != 0) {
    std::unique_lock lock(slots_mutex_);
    if (active_ >= cfg_.max_concurrency) {
      ready_.push_back(i);
      std::push_heap(ready_.begin(), ready_.end(), std::greater<>{});
      return;
    }
    ++active_;
  }
  launch(i);
}

TOOL_EFFECTS_DECL void plan_engine::release_slot() {
  std::size_t next;
  {
    std::lock_guard lock(slots_mutex_);
    if (ready_.empty()) {
      --active_;
      return;
    }
    std::pop_heap(ready_.begin(), ready_.end(), std::greater<>{});
    next = ready_.back();
    ready_.pop_back();
  }
  launch(next);
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_IMPL_ENGINE_IPP
