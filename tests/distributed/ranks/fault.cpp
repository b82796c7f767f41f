// A rank that fails mid-collective: `fault kill` has rank 1 kill itself while the ranks run all-reduces of 4 MiB in
// a loop; `fault stall` has rank 1 stop taking part for longer than NUVEC_DISTRIBUTED_TIMEOUT. Every other rank
// must end with an error naming its rank and the operation; each prints "caught: <error>" (checked by
// run_fault.py) and exits 0.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "nuvec/nuvec.h"

int main(int argc, char** argv) {
  namespace dist = nuvec::distributed;
  const bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  const dist::Group g = dist::init(true);
  const nuvec::array x = nuvec::ones({1 << 20}, nuvec::float32);
  nuvec::eval(dist::all_sum(x));  // everyone is up
  if (g.rank() == 1) {
    if (kill) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::raise(SIGKILL);
      }).detach();
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(8));
      return 0;
    }
  }
  try {
    for (int i = 0; i < 100000; ++i) {
      nuvec::eval(dist::all_sum(x));
    }
    std::printf("no error\n");
    return 1;
  } catch (const std::exception& e) {
    std::printf("caught: %s\n", e.what());
    std::fflush(stdout);
    // Exit at once: the MPI backend does not finalize after a failure.
    ::_exit(0);
  }
}
