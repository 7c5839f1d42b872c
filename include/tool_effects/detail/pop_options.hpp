// tool_effects/detail/pop_options.hpp — no include guard, by design: closes the region that
// detail/push_options.hpp opened.
#if TOOL_EFFECTS_GCC
#pragma GCC diagnostic pop
#endif
#if defined(__clang__) && __cplusplus > 202002L
#pragma clang diagnostic pop
#endif
