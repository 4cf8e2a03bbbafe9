// A CPU stand-in for the subset of NCCL that src/parallel/nccl_comm.cpp calls, so that the
// emulated test binary (run.sh) runs the device communicator's own code under mpirun. The calls
// are served over MPI (nccl_emulation.cpp): a communicator is an MPI communicator of its
// members (MPI_Comm_create_group, so only they take part, as in ncclCommInitRank), and each
// collective moves the members' buffers with MPI and sums them in rank order in the element
// type (f32 in f32, f64 in f64, bf16 in f32 rounded once) — a valid order NCCL might pick, fixed
// by rank, so a rerun is bit-identical. Collectives run at once (the stream is ignored: the
// emulated device is synchronous), so ncclGroupStart/End only nest; every rank issues the same
// calls in the same order, which NCCL requires anyway. Buffers must be emulated device memory
// (cudaMalloc's, cuda_runtime.h): a host pointer fails with ncclInvalidArgument, as it would
// on a GPU. Only the emulation includes this.
#pragma once

#include <cstddef>

#include "cuda_runtime.h"

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
} ncclDataType_t;

struct ncclComm;
typedef struct ncclComm* ncclComm_t;

const char* ncclGetErrorString(ncclResult_t result);
// The last failure's own words (which call, why), as NCCL's.
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

// The emulation's own counts of collectives served, and of those enqueued on a stream other than
// the default one (tests check that the device paths reach NCCL, and the overlap's stream).
long nccl_emulated_calls();
long nccl_emulated_stream_calls();
