#ifdef NUVEC_HAVE_MPI

#include "nuvec/distributed/mpi.h"

#include <mpi.h>

#include <array>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "nuvec/core/error.h"
#include "nuvec/distributed/reduce.h"
#include "nuvec/distributed/timeout.h"

namespace nuvec::distributed::detail {

using nuvec::detail::ReduceOp;

namespace {

/// Finalizes MPI at exit, unless a collective failed (MPI_Finalize would then wait for the lost peer).
struct MpiSession {
  bool failed = false;
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() {
    if (!failed) {
      MPI_Finalize();
    }
  }
};

MpiSession& session() {
  static MpiSession s;
  return s;
}

/// nuvec's own reduction loop as an MPI op: float16 and bfloat16 have no MPI type, and MPI_MAX and MPI_MIN leave
/// NaN handling to the implementation, where nuvec's NaN wins as in maximum and minimum.
template <Dtype::Val D, size_t Size, ReduceOp Op>
void nuvec_reduce(void* in, void* inout, int* length, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*length), Dtype{D, Size}, Op);
}

template <Dtype::Val D, size_t Size>
MPI_Op nuvec_op(ReduceOp op) {
  static const std::array<MPI_Op, 3> ops = [] {
    std::array<MPI_Op, 3> made{};
    MPI_Op_create(&nuvec_reduce<D, Size, ReduceOp::sum>, 1, &made[0]);
    MPI_Op_create(&nuvec_reduce<D, Size, ReduceOp::max>, 1, &made[1]);
    MPI_Op_create(&nuvec_reduce<D, Size, ReduceOp::min>, 1, &made[2]);
    return made;
  }();
  return ops[static_cast<size_t>(op)];
}

MPI_Datatype mpi_type(Dtype dtype) {
  switch (dtype.val) {
    case Dtype::Val::bool_:
      return MPI_C_BOOL;
    case Dtype::Val::uint8:
      return MPI_UINT8_T;
    case Dtype::Val::uint16:
    case Dtype::Val::float16:
    case Dtype::Val::bfloat16:
      return MPI_UINT16_T;
    case Dtype::Val::uint32:
      return MPI_UINT32_T;
    case Dtype::Val::uint64:
      return MPI_UINT64_T;
    case Dtype::Val::int8:
      return MPI_INT8_T;
    case Dtype::Val::int16:
      return MPI_INT16_T;
    case Dtype::Val::int32:
      return MPI_INT32_T;
    case Dtype::Val::int64:
      return MPI_INT64_T;
    case Dtype::Val::float32:
      return MPI_FLOAT;
    case Dtype::Val::float64:
      return MPI_DOUBLE;
    case Dtype::Val::complex64:
      return MPI_C_FLOAT_COMPLEX;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(Dtype dtype, ReduceOp op) {
  if (dtype == float16) {
    return nuvec_op<Dtype::Val::float16, 2>(op);
  }
  if (dtype == bfloat16) {
    return nuvec_op<Dtype::Val::bfloat16, 2>(op);
  }
  if (dtype == float32 && op != ReduceOp::sum) {
    return nuvec_op<Dtype::Val::float32, 4>(op);
  }
  if (dtype == float64 && op != ReduceOp::sum) {
    return nuvec_op<Dtype::Val::float64, 8>(op);
  }
  if (dtype == bool_) {
    return op == ReduceOp::min ? MPI_LAND : MPI_LOR;
  }
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

class MpiCommunicator final : public nuvec::detail::Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string backend() const override { return "mpi"; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    MPI_Request request{};
    check(MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, as_int(count), mpi_type(dtype), mpi_op(dtype, op),
                         comm_, &request),
          "all-reduce");
    wait(request, "all-reduce");
  }
  void all_gather(const void* in, void* out, size_t bytes) override {
    MPI_Request request{};
    check(MPI_Iallgather(in, as_int(bytes), MPI_BYTE, out, as_int(bytes), MPI_BYTE, comm_, &request), "all-gather");
    wait(request, "all-gather");
  }
  void sum_scatter(const void* in, void* out, size_t count, Dtype dtype) override {
    MPI_Request request{};
    check(MPI_Ireduce_scatter_block(in, out, as_int(count), mpi_type(dtype), mpi_op(dtype, ReduceOp::sum), comm_,
                                    &request),
          "sum-scatter");
    wait(request, "sum-scatter");
  }
  void send(const void* data, size_t bytes, int dst) override {
    MPI_Request request{};
    check(MPI_Isend(data, as_int(bytes), MPI_BYTE, dst, 0, comm_, &request), "send");
    wait(request, "send to rank " + std::to_string(dst));
  }
  void recv(void* data, size_t bytes, int src) override {
    MPI_Request request{};
    check(MPI_Irecv(data, as_int(bytes), MPI_BYTE, src, 0, comm_, &request), "recv");
    wait(request, "recv from rank " + std::to_string(src));
  }
  std::shared_ptr<nuvec::detail::Communicator> split(int color, int key) override {
    MPI_Comm sub{};
    check(MPI_Comm_split(comm_, color, key < 0 ? rank_ : key, &sub), "split");
    return std::make_shared<MpiCommunicator>(sub);
  }

 private:
  [[nodiscard]] int as_int(size_t count) const {
    if (count > static_cast<size_t>(INT_MAX)) {
      throw_unsupported("rank " + std::to_string(rank_) + ": the MPI backend moves at most 2^31 - 1 elements at once; "
                        "got " + std::to_string(count) + ".");
    }
    return static_cast<int>(count);
  }

  void check(int rc, const std::string& what) const {
    if (rc != MPI_SUCCESS) {
      std::array<char, MPI_MAX_ERROR_STRING> text{};
      int length = 0;
      MPI_Error_string(rc, text.data(), &length);
      session().failed = true;
      throw_error(ErrorKind::io, "rank " + std::to_string(rank_) + ": MPI failed during " + what + ": " +
                                     std::string(text.data(), static_cast<size_t>(length)) + ".");
    }
  }

  /// Polls the request until done or past the timeout (MPI's blocking waits cannot be bounded).
  void wait(MPI_Request& request, const std::string& what) const {
    const auto limit = timeout();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int done = 0;
    for (int spins = 0;; ++spins) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done != 0) {
        return;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        session().failed = true;
        throw_error(ErrorKind::io, "rank " + std::to_string(rank_) + ": " + what +
                                       " did not complete within the timeout (" + timeout_text(limit) +
                                       "): a peer is gone or never joined.");
      }
      if (spins > 1000) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

bool mpi_launched() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

std::shared_ptr<nuvec::detail::Communicator> mpi_world() {
  session();
  return std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
}

}  // namespace nuvec::distributed::detail

#endif
