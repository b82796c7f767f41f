#include "nuvec/distributed/distributed.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "nuvec/core/error.h"
#include "nuvec/distributed/mpi.h"
#include "nuvec/distributed/none.h"
#include "nuvec/distributed/ops.h"
#include "nuvec/distributed/ring.h"

namespace nuvec::distributed {

namespace {

struct Groups {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<nuvec::detail::Communicator>> by_backend;
  std::shared_ptr<nuvec::detail::Communicator> last;
};

Groups& groups() {
  static Groups g;
  return g;
}

bool ring_configured() {
  return (std::getenv("NUVEC_HOSTFILE") != nullptr || std::getenv("MLX_HOSTFILE") != nullptr) &&
         (std::getenv("NUVEC_RANK") != nullptr || std::getenv("MLX_RANK") != nullptr);
}

/// The world group of a named backend, or null when it is not running.
std::shared_ptr<nuvec::detail::Communicator> start(const std::string& backend) {
  if (backend == "mpi") {
    return detail::mpi_launched() ? detail::mpi_world() : nullptr;
  }
  if (backend == "ring") {
    return ring_configured() ? detail::RingCommunicator::from_environment() : nullptr;
  }
  if (backend == "nccl") {
    return nullptr;
  }
  throw_invalid("[distributed::init] The backend must be \"any\", \"mpi\", \"ring\" or \"nccl\"; got \"" + backend +
                "\".");
}

}  // namespace

bool is_available() { return true; }

bool is_available(const std::string& backend) {
#ifdef NUVEC_HAVE_MPI
  const bool mpi = true;
#else
  const bool mpi = false;
#endif
  return backend == "any" || backend == "ring" || (backend == "mpi" && mpi);
}

Group::Group(std::shared_ptr<nuvec::detail::Communicator> communicator) : communicator_(std::move(communicator)) {}

int Group::rank() const { return communicator_->rank(); }
int Group::size() const { return communicator_->size(); }
std::string Group::backend() const { return communicator_->backend(); }
Group Group::split(int color, int key) const { return Group(communicator_->split(color, key)); }

Group init(bool strict, const std::string& backend) {
  auto& g = groups();
  std::lock_guard lock(g.mutex);
  std::shared_ptr<nuvec::detail::Communicator> group;
  for (const std::string name : {"mpi", "ring", "nccl"}) {
    if (backend != "any" && backend != name) {
      continue;
    }
    auto& cached = g.by_backend[name];
    if (!cached) {
      cached = start(name);
    }
    if (cached) {
      group = cached;
      break;
    }
  }
  if (!group && backend != "any" && backend != "mpi" && backend != "ring" && backend != "nccl") {
    start(backend);  // throws for an unknown name
  }
  if (!group) {
    if (strict) {
      throw_error(ErrorKind::unsupported,
                  "[distributed::init] No " + (backend == "any" ? std::string("distributed") : backend) +
                      " backend is running: start the program with nuvec launch (ring) or mpirun (mpi)" +
                      (backend == "nccl" ? "; NCCL comes with the CUDA backend, which this build lacks" : "") + ".");
    }
    group = std::make_shared<detail::NoneCommunicator>();
  }
  g.last = group;
  return Group(group);
}

namespace detail {

Group default_group() {
  {
    auto& g = groups();
    std::lock_guard lock(g.mutex);
    if (g.last) {
      return Group(g.last);
    }
  }
  return init();
}

}  // namespace detail

}  // namespace nuvec::distributed
