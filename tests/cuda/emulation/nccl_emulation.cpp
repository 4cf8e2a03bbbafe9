// The emulated NCCL of nccl.h, over MPI (see there). MPI must be initialised already (the test
// makes its host Comm, make_mpi_comm, first), as NCCL needs its id carried by something else.
//
// ncclGetUniqueId writes a tag, the caller's world rank and a per-process counter; in
// ncclCommInitRank every member sends its (rank, world rank) to that world rank, which answers
// with the whole table, and the members create their MPI communicator over it.
#define OMPI_SKIP_MPICXX 1
#include "nccl.h"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

namespace {

constexpr int kIdMagic = 0x5cc1e3u;
constexpr int kTagBase = 7100;  // point-to-point tags on MPI_COMM_WORLD (sft's Comm uses none)
std::atomic<long> g_calls{0}, g_stream_calls{0};

// One collective served, on `stream`.
void served(cudaStream_t stream) {
  ++g_calls;
  if (stream) ++g_stream_calls;
}
std::string g_last_error;
int g_next_id = 0;

struct IdWords {
  int magic, root_world_rank, sequence;
};

ncclResult_t failed(ncclResult_t rc, const std::string& why) {
  g_last_error = why;
  return rc;
}

size_t elem_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

// A buffer the real NCCL would read or write: it must lie in emulated device memory.
bool on_device(const void* p, size_t bytes, const char* call, const char* which) {
  if (bytes == 0 || emulated_memory_type(p, bytes) == cudaMemoryTypeDevice) return true;
  g_last_error = std::string(call) + ": " + which + " is not device memory (cudaMalloc's)";
  return false;
}

// Sums `ranks` rank-major blocks of `count` elements in rank order, into out.
template <typename T, typename Acc>
void sum_blocks(const char* blocks, size_t count, int ranks, void* out) {
  const T* b = reinterpret_cast<const T*>(blocks);
  T* o = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) {
    Acc acc = static_cast<Acc>(b[i]);
    for (int r = 1; r < ranks; ++r) acc += static_cast<Acc>(b[static_cast<size_t>(r) * count + i]);
    o[i] = static_cast<T>(acc);
  }
}
void sum_bf16_blocks(const char* blocks, size_t count, int ranks, void* out) {
  const uint16_t* b = reinterpret_cast<const uint16_t*>(blocks);
  uint16_t* o = static_cast<uint16_t*>(out);
  for (size_t i = 0; i < count; ++i) {
    float acc = sft::bf16_to_f32(b[i]);
    for (int r = 1; r < ranks; ++r) acc += sft::bf16_to_f32(b[static_cast<size_t>(r) * count + i]);
    o[i] = sft::f32_to_bf16(acc);
  }
}
ncclResult_t sum_into(ncclDataType_t t, ncclRedOp_t op, const char* blocks, size_t count, int ranks,
                      void* out) {
  if (op != ncclSum) return failed(ncclInvalidArgument, "the emulation sums only (ncclSum)");
  switch (t) {
    case ncclFloat32:
      sum_blocks<float, float>(blocks, count, ranks, out);
      return ncclSuccess;
    case ncclFloat64:
      sum_blocks<double, double>(blocks, count, ranks, out);
      return ncclSuccess;
    case ncclInt64:
      sum_blocks<int64_t, int64_t>(blocks, count, ranks, out);
      return ncclSuccess;
    case ncclBfloat16:
      sum_bf16_blocks(blocks, count, ranks, out);
      return ncclSuccess;
    default:
      return failed(ncclInvalidArgument, "the emulation sums f32, f64, i64 and bf16 only");
  }
}

bool mpi_ok(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return true;
  g_last_error = std::string(call) + " failed in the NCCL emulation";
  return false;
}

// count·elem bytes as MPI counts (the tests' arrays are far below INT_MAX bytes).
int bytes_of(size_t count, ncclDataType_t t) {
  return static_cast<int>(count * elem_size(t));
}

}  // namespace

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclSystemError:
      return "unhandled system error (emulated NCCL)";
    case ncclInvalidArgument:
      return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage:
      return "invalid usage (emulated NCCL)";
    default:
      return "internal error (emulated NCCL)";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  return g_last_error.c_str();
}

long nccl_emulated_calls() {
  return g_calls.load();
}

long nccl_emulated_stream_calls() {
  return g_stream_calls.load();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return failed(ncclSystemError, "the NCCL emulation runs over MPI: initialise MPI first");
  IdWords w{kIdMagic, 0, g_next_id++};
  MPI_Comm_rank(MPI_COMM_WORLD, &w.root_world_rank);
  std::memset(id, 0, sizeof(*id));
  std::memcpy(id->internal, &w, sizeof(w));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  IdWords w;
  std::memcpy(&w, id.internal, sizeof(w));
  if (w.magic != kIdMagic) return failed(ncclInvalidArgument, "not an id of ncclGetUniqueId");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return failed(ncclInvalidArgument, "rank outside [0, nranks)");
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  const int tag = kTagBase + (w.sequence % 1000);
  std::vector<int> table(static_cast<size_t>(nranks), -1);
  if (rank == 0) {
    if (world_rank != w.root_world_rank)
      return failed(ncclInvalidUsage, "rank 0 must be the process that made the id");
    table[0] = world_rank;
    for (int i = 1; i < nranks; ++i) {
      int pair[2];
      if (!mpi_ok(
              MPI_Recv(pair, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv"))
        return ncclSystemError;
      table[static_cast<size_t>(pair[0])] = pair[1];
    }
    for (int i = 1; i < nranks; ++i)
      MPI_Send(table.data(), nranks, MPI_INT, table[static_cast<size_t>(i)], tag, MPI_COMM_WORLD);
  } else {
    int pair[2] = {rank, world_rank};
    MPI_Send(pair, 2, MPI_INT, w.root_world_rank, tag, MPI_COMM_WORLD);
    MPI_Recv(table.data(), nranks, MPI_INT, w.root_world_rank, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, table.data(), &group);
  auto* c = new ncclComm;
  const bool ok =
      mpi_ok(MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &c->mpi), "MPI_Comm_create_group");
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  if (!ok) {
    delete c;
    return ncclSystemError;
  }
  MPI_Comm_rank(c->mpi, &c->rank);
  MPI_Comm_size(c->mpi, &c->size);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;  // the MPI communicator is left to the dying process
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->size;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * elem_size(t);
  if (!on_device(send, bytes, "ncclAllReduce", "sendbuff") ||
      !on_device(recv, bytes, "ncclAllReduce", "recvbuff"))
    return ncclInvalidArgument;
  served(stream);
  std::vector<char> all(bytes * static_cast<size_t>(comm->size));
  if (!mpi_ok(MPI_Allgather(send, bytes_of(count, t), MPI_BYTE, all.data(), bytes_of(count, t),
                            MPI_BYTE, comm->mpi),
              "MPI_Allgather"))
    return ncclSystemError;
  return sum_into(t, op, all.data(), count, comm->size, recv);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t block = recvcount * elem_size(t);
  if (!on_device(send, block * static_cast<size_t>(comm->size), "ncclReduceScatter", "sendbuff") ||
      !on_device(recv, block, "ncclReduceScatter", "recvbuff"))
    return ncclInvalidArgument;
  served(stream);
  // Rank r receives every rank's block r (rank-major), then sums them.
  std::vector<char> mine(block * static_cast<size_t>(comm->size));
  if (!mpi_ok(MPI_Alltoall(send, bytes_of(recvcount, t), MPI_BYTE, mine.data(),
                           bytes_of(recvcount, t), MPI_BYTE, comm->mpi),
              "MPI_Alltoall"))
    return ncclSystemError;
  return sum_into(t, op, mine.data(), recvcount, comm->size, recv);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t block = sendcount * elem_size(t);
  if (!on_device(send, block, "ncclAllGather", "sendbuff") ||
      !on_device(recv, block * static_cast<size_t>(comm->size), "ncclAllGather", "recvbuff"))
    return ncclInvalidArgument;
  served(stream);
  std::vector<char> all(block * static_cast<size_t>(comm->size));  // send may lie inside recv
  if (!mpi_ok(MPI_Allgather(send, bytes_of(sendcount, t), MPI_BYTE, all.data(),
                            bytes_of(sendcount, t), MPI_BYTE, comm->mpi),
              "MPI_Allgather"))
    return ncclSystemError;
  std::memcpy(recv, all.data(), all.size());
  return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * elem_size(t);
  if ((comm->rank == root && !on_device(send, bytes, "ncclBroadcast", "sendbuff")) ||
      !on_device(recv, bytes, "ncclBroadcast", "recvbuff"))
    return ncclInvalidArgument;
  served(stream);
  if (comm->rank == root && send != recv) std::memmove(recv, send, bytes);
  return mpi_ok(MPI_Bcast(recv, bytes_of(count, t), MPI_BYTE, root, comm->mpi), "MPI_Bcast")
             ? ncclSuccess
             : ncclSystemError;
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * elem_size(t);
  if (!on_device(send, bytes, "ncclReduce", "sendbuff") ||
      (comm->rank == root && !on_device(recv, bytes, "ncclReduce", "recvbuff")))
    return ncclInvalidArgument;
  served(stream);
  std::vector<char> all(comm->rank == root ? bytes * static_cast<size_t>(comm->size) : 0);
  if (!mpi_ok(MPI_Gather(send, bytes_of(count, t), MPI_BYTE, all.data(), bytes_of(count, t),
                         MPI_BYTE, root, comm->mpi),
              "MPI_Gather"))
    return ncclSystemError;
  return comm->rank == root ? sum_into(t, op, all.data(), count, comm->size, recv) : ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  return ncclSuccess;
}
