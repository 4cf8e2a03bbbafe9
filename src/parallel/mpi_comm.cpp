// The MPI communicator (OpenMPI): data movement for comm.cpp's collectives.
//
// MPI is initialised on the first make_mpi_comm (MPI_THREAD_FUNNELED: only the thread that
// runs the trainer calls MPI; the watchdog never does) with MPI_ERRORS_RETURN, so a failed
// call becomes an sft::Error naming the call and file:line instead of a silent abort.
// MPI_Finalize runs when the last world handle goes away normally. When it goes away during
// an exception (this rank failed), finalize is skipped on purpose: finalizing waits for
// the peers, which may be blocked in a collective this rank will never join; exiting
// non-zero instead makes mpirun stop the whole job.
// The C API only: skip the deprecated C++ bindings (they do not compile warning-free).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "parallel/comm.h"

namespace sft {

namespace {

void check_mpi(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::string name(call);
  name = name.substr(0, name.find('('));
  fail("parallel", name + " failed (" + file + ":" + std::to_string(line) +
                       "): " + std::string(text, static_cast<size_t>(len)) +
                       " (hint: another rank may have died; see its output above)");
}

#define SFT_MPI_CHECK(call) check_mpi((call), #call, __FILE__, __LINE__)

// World handles alive; MPI_Finalize when it drops to zero without an exception in flight.
int g_world_handles = 0;

MPI_Datatype mover_type(size_t elem_size) {
  switch (elem_size) {
    case 1:
      return MPI_BYTE;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    case 8:
      return MPI_UINT64_T;
    default:
      fail("parallel", "no MPI mover for " + std::to_string(elem_size) + "-byte elements");
  }
}

std::vector<int> as_ints(std::span<const size_t> v, const char* what) {
  std::vector<int> out;
  out.reserve(v.size());
  for (size_t x : v) {
    if (x > static_cast<size_t>(INT_MAX))
      fail("parallel", std::string(what) + ": " + std::to_string(x) +
                           " elements exceed MPI's int counts (hint: fewer parameters per rank, or "
                           "more ranks)");
    out.push_back(static_cast<int>(x));
  }
  return out;
}

// An MPI_Iallgatherv in flight: its counts and displacements must outlive it.
class MpiPending final : public Comm::Pending {
 public:
  MpiPending(std::vector<int> counts, std::vector<int> displs)
      : counts_(std::move(counts)), displs_(std::move(displs)) {}
  ~MpiPending() override {
    if (request_ == MPI_REQUEST_NULL || std::uncaught_exceptions() > 0) return;
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override { SFT_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE)); }
  std::vector<int> counts_, displs_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class MpiComm final : public Comm {
 public:
  MpiComm(MPI_Comm comm, bool world) : comm_(comm), world_(world) {
    SFT_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    SFT_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    if (world_) ++g_world_handles;
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (!world_) {
      MPI_Comm_free(&comm_);
      return;
    }
    if (--g_world_handles == 0 && std::uncaught_exceptions() == 0) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }

  std::unique_ptr<Comm> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    SFT_MPI_CHECK(MPI_Comm_split(comm_, color, key, &sub));
    SFT_MPI_CHECK(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN));
    return std::make_unique<MpiComm>(sub, false);
  }

 protected:
  void exchange(const void* send, std::span<const size_t> send_counts,
                std::span<const size_t> send_displs, void* recv,
                std::span<const size_t> recv_counts, std::span<const size_t> recv_displs,
                size_t elem_size) override {
    const std::vector<int> sc = as_ints(send_counts, "exchange"),
                           sd = as_ints(send_displs, "exchange"),
                           rc = as_ints(recv_counts, "exchange"),
                           rd = as_ints(recv_displs, "exchange");
    const MPI_Datatype t = mover_type(elem_size);
    SFT_MPI_CHECK(
        MPI_Alltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, comm_));
  }
  void gather_all(void* data, std::span<const size_t> counts, std::span<const size_t> displs,
                  size_t elem_size) override {
    const std::vector<int> c = as_ints(counts, "all_gather"), d = as_ints(displs, "all_gather");
    SFT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, c.data(), d.data(),
                                 mover_type(elem_size), comm_));
  }
  std::unique_ptr<Pending> start_gather_all(void* data, std::span<const size_t> counts,
                                            std::span<const size_t> displs,
                                            size_t elem_size) override {
    auto p = std::make_unique<MpiPending>(as_ints(counts, "all_gather_start"),
                                          as_ints(displs, "all_gather_start"));
    SFT_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, p->counts_.data(),
                                  p->displs_.data(), mover_type(elem_size), comm_, &p->request_));
    return p;
  }
  void broadcast_bytes(void* data, size_t bytes, int root) override {
    const std::vector<size_t> n = {bytes};
    SFT_MPI_CHECK(MPI_Bcast(data, as_ints(n, "broadcast")[0], MPI_BYTE, root, comm_));
  }
  void do_barrier() override { SFT_MPI_CHECK(MPI_Barrier(comm_)); }

 private:
  MPI_Comm comm_;
  bool world_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm() {
  int initialized = 0;
  SFT_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    SFT_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    SFT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  }
  return std::make_unique<MpiComm>(MPI_COMM_WORLD, true);
}

bool mpi_built() {
  return true;
}

}  // namespace sft
