// All-reduce bandwidth: a plain MPI_Allreduce(MPI_SUM, float) loop vs sft's
// Comm::all_reduce_sum (parallel/comm.h: rank-ordered reduce-scatter + all-gather, bucketed) on
// the same sizes. Run under mpirun:
//   mpirun -np 2 build/bench/bench_mpi_allreduce [max_floats=67108864] [seconds_per_size=1]
// Prints, per size, seconds per call and the bus bandwidth 2·(n-1)/n · bytes / time (the
// figure NCCL's tests report; comparable across rank counts). Rank 0 prints.
// The C API only: skip the deprecated C++ bindings (they do not compile warning-free).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/clock.h"
#include "parallel/comm.h"

namespace {

template <typename F>
double seconds_per_call(F&& call, double budget_s) {
  call();  // warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  int calls = 0;
  const double t0 = sft::now_s();
  double elapsed = 0;
  int go = 1;
  while (go) {
    call();
    ++calls;
    elapsed = sft::now_s() - t0;
    // Every rank stops after the same call: rank 0 decides.
    go = elapsed < budget_s && calls < 10000;
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  return elapsed / calls;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<sft::Comm> comm = sft::make_mpi_comm();
  const size_t max_n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t{1} << 26;
  const double budget = argc > 2 ? std::atof(argv[2]) : 1.0;
  const int n_ranks = comm->size();
  if (comm->rank() == 0)
    std::printf("%12s %14s %14s %14s %14s\n", "floats", "MPI s/call", "MPI GB/s", "sft s/call",
                "sft GB/s");
  for (size_t n = 1024; n <= max_n; n *= 4) {
    std::vector<float> a(n, 1.0f), b(n, 1.0f);
    const double t_mpi = seconds_per_call(
        [&] {
          MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
          std::fill(a.begin(), a.begin() + std::min<size_t>(n, 16), 1.0f);
        },
        budget);
    const double t_sft =
        seconds_per_call([&] { comm->all_reduce_sum(std::span<float>(b)); }, budget);
    const double bus = 2.0 * (n_ranks - 1) / n_ranks * double(n * sizeof(float)) / 1e9;
    if (comm->rank() == 0)
      std::printf("%12zu %14.3g %14.3f %14.3g %14.3f\n", n, t_mpi, bus / t_mpi, t_sft, bus / t_sft);
  }
  return 0;
}
