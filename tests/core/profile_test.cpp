#include "nuvec/core/profile.h"

#include <gtest/gtest.h>

#include <string>

#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"

namespace nuvec {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ProfileTest, CountsEachKernelUnderItsKey) {
  profile::reset();
  profile::enable();
  auto x = full({2, 3}, 2.0F);
  auto y = (x * x) * x + full({3}, 1.0F);
  eval(y);
  auto z = astype(y, float64) * 2.0;
  eval(z);
  profile::disable();
  auto report = profile::report();
  EXPECT_EQ(count(report, "Multiply float32 (2, 3)"), 1) << report;
  EXPECT_NE(report.find("Add float32 (2, 3)"), std::string::npos) << report;
  EXPECT_NE(report.find("Multiply float64 (2, 3)"), std::string::npos) << report;
  // Two float32 multiplies share a row: its call count is 2.
  auto row = report.substr(0, report.find("Multiply float32 (2, 3)"));
  row = row.substr(row.rfind('\n') + 1);
  EXPECT_NE(row.find(" 2 "), std::string::npos) << row;

  eval(full({4}, 1.0F) * 3.0F);  // profiling off: not counted
  EXPECT_EQ(profile::report(), report);

  profile::reset();
  profile::enable(false);
  eval(full({5}, 1.0F) * 3.0F);
  profile::disable();
  report = profile::report();
  EXPECT_NE(report.find("  Multiply\n"), std::string::npos) << report;
  profile::reset();
  EXPECT_EQ(count(profile::report(), "\n"), 2);  // the title and the header only
}

}  // namespace
}  // namespace nuvec
