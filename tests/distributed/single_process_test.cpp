// nuvec::distributed without a backend: init gives a group of one process (MLX's behaviour), whose collectives
// return their input, and the ops check their arguments before building a node. Expected values are the inputs
// themselves (a collective over one process is the identity) or the errors' wording.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nuvec/nn/average_gradients.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::distributed {
namespace {

class SingleProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"NUVEC_HOSTFILE", "MLX_HOSTFILE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
      ::unsetenv(name);
    }
  }
};

TEST_F(SingleProcess, InitGivesAGroupOfOne) {
  EXPECT_TRUE(is_available());
  EXPECT_TRUE(is_available("ring"));
  const Group g = init();
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.size(), 1);
  EXPECT_EQ(g.backend(), "none");
  const Group sub = g.split(3);
  EXPECT_EQ(sub.size(), 1);
  EXPECT_EQ(sub.rank(), 0);
}

TEST_F(SingleProcess, StrictInitWithoutALauncherThrows) {
  EXPECT_EQ(test::error_of([] { init(true); }),
            "[distributed::init] No distributed backend is running: start the program with nuvec launch (ring) or "
            "mpirun (mpi).");
  EXPECT_EQ(test::error_of([] { init(true, "ring"); }),
            "[distributed::init] No ring backend is running: start the program with nuvec launch (ring) or mpirun "
            "(mpi).");
  EXPECT_EQ(test::error_of([] { init(false, "gloo"); }),
            "[distributed::init] The backend must be \"any\", \"mpi\", \"ring\" or \"nccl\"; got \"gloo\".");
}

TEST_F(SingleProcess, CollectivesAreIdentities) {
  const array x = reshape(astype(arange(6), float32), {3, 2});
  for (const array& y : {all_sum(x), all_max(x), all_min(x), all_gather(x), sum_scatter(x)}) {
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_TRUE(array_equal(y, x).item<bool>());
  }
  EXPECT_EQ(all_gather(array(2.0f)).shape(), Shape{1});
  // Under grad too: the identity's derivative.
  const auto g = grad([](const array& v) { return sum(all_sum(v) * all_gather(v)); })(x);
  EXPECT_TRUE(array_equal(g, 2 * x).item<bool>());
}

TEST_F(SingleProcess, AverageGradientsOfOneProcessAreTheGradients) {
  const nn::Params gradients{{"w", ones({2, 3})}, {"b", zeros({3})}};
  const nn::Params averaged = nn::average_gradients(gradients);
  ASSERT_EQ(averaged.size(), 2U);
  EXPECT_EQ(averaged[0].second.id(), gradients[0].second.id());
}

TEST_F(SingleProcess, ArgumentsAreCheckedWhenTheNodeIsBuilt) {
  EXPECT_EQ(test::error_of([] { send(array(1.0f), 0); }),
            "[send] The peer must be another rank of the group, in [0, 1) and not 0; got 0.");
  EXPECT_EQ(test::error_of([] { recv({2}, float32, 1); }),
            "[recv] The peer must be another rank of the group, in [0, 1) and not 0; got 1.");
  EXPECT_EQ(test::error_of([] { all_max(array({1.0f, 2.0f}) * array(complex64_t(0, 1))); }),
            "[all_max] complex64 values have no order.");
  EXPECT_EQ(test::error_of([] { sum_scatter(array(1.0f)); }),
            "[sum_scatter] The group's 1 processes must divide axis 0 of the array; got shape ().");
}

}  // namespace
}  // namespace nuvec::distributed
