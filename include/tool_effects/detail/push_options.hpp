// tool_effects/detail/push_options.hpp — no include guard, by design (as Asio's detail/push_options.hpp):
// include it before a region of coroutine definitions and detail/pop_options.hpp after it. The only
// place the library silences a warning:
//  * g++ 12 -Wmismatched-new-delete: false, on Asio coroutine frames (awaitable_frame_base's
//    class-specific operator new/delete; GCC bug 109224);
//  * g++ 12 -Wsubobject-linkage: a coroutine frame (a compiler-made type "in this header") that holds a
//    user type from an anonymous namespace of another file (a user's header, a unity build); the frame
//    never leaves the translation unit.
#include <tool_effects/detail/config.hpp>
#if TOOL_EFFECTS_GCC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
#endif
//  * clang in C++23 -Wdeprecated-declarations: Boost.Beast 1.81 (core/detail/type_traits.hpp, reached by the
//    etcd client's includes) uses std::aligned_storage, deprecated in C++23.
#if defined(__clang__) && __cplusplus > 202002L
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#endif
