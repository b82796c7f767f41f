#pragma once

// nuvec::distributed, MLX's API: a Group of processes and init(), which joins the processes a launcher started
// (mpirun for "mpi", nuvec launch for "ring"). Without one, init gives a group of one process whose collectives
// are identities, so single-process code runs unchanged.

#include <memory>
#include <string>

#include "nuvec/core/communicator.h"

namespace nuvec::distributed {

/// Whether a backend other than the single-process one is built in (the ring always is).
bool is_available();
/// Whether `backend` ("mpi", "ring", "nccl" or "any") is built in.
bool is_available(const std::string& backend);

/// A group of processes that communicate; copies share the group.
class Group {
 public:
  explicit Group(std::shared_ptr<nuvec::detail::Communicator> communicator);

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  /// The processes with the same color form a new group, ranked by key (this group's rank when key < 0). Every
  /// process of this group calls it.
  [[nodiscard]] Group split(int color, int key = -1) const;
  /// "none", "mpi" or "ring".
  [[nodiscard]] std::string backend() const;

  [[nodiscard]] const std::shared_ptr<nuvec::detail::Communicator>& raw_group() const { return communicator_; }

 private:
  std::shared_ptr<nuvec::detail::Communicator> communicator_;
};

/// Joins the processes of `backend` ("any": MPI when started by mpirun, else the ring when its host file is set)
/// and returns the group of all of them; later calls return the same group. When no backend is running it throws
/// if `strict`, else returns a group of one process. The ops' default group is the one the last init returned.
Group init(bool strict = false, const std::string& backend = "any");

}  // namespace nuvec::distributed
