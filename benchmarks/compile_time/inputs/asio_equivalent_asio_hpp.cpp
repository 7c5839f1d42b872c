// Benchmark input (compile time only): the hand-written Asio equivalent of docs/examples/readme.cpp as issue 13
// measured it (3.6 s against the README example's 5.2-6.0 s in the run): asio_equivalent.cpp's program
// (three calls run as coroutines on a thread_pool with co_spawn / use_future, their results collected, no
// library), including <boost/asio.hpp> as a user who writes Asio by hand usually does. The target
// (README example <= 1.15x) is stated against this program; cost.py reports the ratio to the minimal-include
// variant (asio_equivalent.cpp) as well.
// The program itself is asio_equivalent.cpp's (its own Asio includes are then no-ops).
#include <boost/asio.hpp>

#include "asio_equivalent.cpp"
