#include <nuvec/nuvec.h>

#include <iostream>

int main() {
  auto a = nuvec::array({1.0F, 2.0F, 3.0F, 4.0F}, {2, 2});
  auto total = nuvec::sum(nuvec::matmul(a, a)).item<float>();
  std::cout << total << "\n";
  return total == 54.0F ? 0 : 1;  // [[7, 10], [15, 22]]
}
