// nuvec launch's choice of the ranks' ports: free, distinct, and outside the kernel's ephemeral range, so that no
// connecting socket (the ranks' own, or another job's) can take one between its choice and the rank's bind.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "apps/launch/launch.h"

namespace nuvec::launch {
namespace {

TEST(LaunchPorts, FreeDistinctAndOutsideTheEphemeralRange) {
  int first = 32768;
  int last = 60999;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> first >> last;
  for (int round = 0; round < 20; ++round) {
    const auto ports = free_ports(8);
    ASSERT_EQ(ports.size(), 8U);
    EXPECT_EQ(std::set<int>(ports.begin(), ports.end()).size(), 8U);
    for (int port : ports) {
      EXPECT_TRUE(port < first || port > last) << port << " is in the ephemeral range " << first << "-" << last;
      EXPECT_GE(port, 1024);
      // Free: a rank can bind it.
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<uint16_t>(port));
      EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << port;
      ::close(fd);
    }
  }
}

}  // namespace
}  // namespace nuvec::launch
