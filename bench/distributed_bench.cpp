// distributed_bench: all-reduce timings for bench/run_distributed.py, one mode per run:
//   distributed_bench nuvec    nuvec::distributed::all_sum on the group init finds (ring under nuvec launch, MPI
//                              under mpirun)
//   distributed_bench mpi      Open MPI's MPI_Allreduce called directly (under mpirun; builds with MPI only)
//   distributed_bench memcpy   a plain memory copy of the same bytes, in one process
// Rank 0 prints one line per size: "BYTES SECONDS" (the median of the timed repetitions).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef NUVEC_HAVE_MPI
#include <mpi.h>
#endif

#include "nuvec/nuvec.h"

namespace {

using Clock = std::chrono::steady_clock;

/// The median time of `step` after one warm-up; `barrier` lines the ranks up before each repetition. The count
/// depends on the size only, so that every rank runs as many.
double median_seconds(size_t bytes, const std::function<void()>& step, const std::function<void()>& barrier) {
  step();
  const int repetitions = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 3, 200));
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    barrier();
    const auto start = Clock::now();
    step();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repetitions / 2, times.end());
  return times[static_cast<size_t>(repetitions / 2)];
}

std::vector<size_t> sizes() {
  std::vector<size_t> out;
  for (size_t bytes = 1024; bytes <= (size_t{256} << 20); bytes *= 4) {
    out.push_back(bytes);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "memcpy") {
    for (size_t bytes : sizes()) {
      std::vector<char> from(bytes, 1);
      std::vector<char> to(bytes, 0);
      const double t = median_seconds(bytes, [&] { std::memcpy(to.data(), from.data(), bytes); }, [] {});
      std::printf("%zu %.9f\n", bytes, t);
    }
    return 0;
  }
  if (mode == "nuvec") {
    namespace dist = nuvec::distributed;
    const dist::Group g = dist::init(true);
    // The barrier: a one-element all-reduce.
    const auto barrier = [&] { nuvec::eval(dist::all_sum(nuvec::array(1.0f), g)); };
    for (size_t bytes : sizes()) {
      const nuvec::array x = nuvec::ones({static_cast<int>(bytes / 4)}, nuvec::float32);
      nuvec::eval(x);
      const double t = median_seconds(bytes, [&] { nuvec::eval(dist::all_sum(x, g)); }, barrier);
      if (g.rank() == 0) {
        std::printf("%zu %.9f\n", bytes, t);
        std::fflush(stdout);
      }
    }
    return 0;
  }
#ifdef NUVEC_HAVE_MPI
  if (mode == "mpi") {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (size_t bytes : sizes()) {
      std::vector<float> in(bytes / 4, 1.0f);
      std::vector<float> out(bytes / 4);
      const double t = median_seconds(
          bytes,
          [&] {
            MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          },
          [] { MPI_Barrier(MPI_COMM_WORLD); });
      if (rank == 0) {
        std::printf("%zu %.9f\n", bytes, t);
        std::fflush(stdout);
      }
    }
    MPI_Finalize();
    return 0;
  }
#endif
  std::fprintf(stderr, "usage: distributed_bench nuvec|mpi|memcpy\n");
  return 2;
}
