// cuBLASLt and NVRTC are opened when first used, not linked: libnuvec names neither among the libraries it needs, and
// the loader finds both (no GPU is needed to open them).

#include <elf.h>
#include <link.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nuvec/cuda/libraries.h"

namespace nuvec {
namespace {

/// The DT_NEEDED entries of the loaded object whose path contains `name`.
std::vector<std::string> needed_by(const std::string& name) {
  struct Search {
    std::string name;
    std::vector<std::string> needed;
    bool found = false;
  } search{name, {}, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& s = *static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || std::string(info->dlpi_name).find(s.name) == std::string::npos) {
          return 0;
        }
        s.found = true;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) {
            continue;
          }
          const auto* dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          const char* strings = nullptr;
          for (const auto* d = dynamic; d->d_tag != DT_NULL; ++d) {
            if (d->d_tag == DT_STRTAB) {
              strings = reinterpret_cast<const char*>(d->d_un.d_ptr);  // relocated by the loader
            }
          }
          for (const auto* d = dynamic; strings != nullptr && d->d_tag != DT_NULL; ++d) {
            if (d->d_tag == DT_NEEDED) {
              s.needed.emplace_back(strings + d->d_un.d_val);
            }
          }
        }
        return 1;
      },
      &search);
  EXPECT_TRUE(search.found) << name << " is not loaded";
  return search.needed;
}

TEST(CudaLibraries, NuvecLinksNeitherCublasLtNorNvrtc) {
  const auto needed = needed_by("libnuvec.so");
  ASSERT_FALSE(needed.empty());
  for (const auto& library : needed) {
    EXPECT_EQ(library.find("cublas"), std::string::npos) << library;
    EXPECT_EQ(library.find("nvrtc"), std::string::npos) << library;
  }
}

TEST(CudaLibraries, OpenedOnFirstUseWithEveryFunction) {
  const auto& lt = cuda::cublas_lt();
  EXPECT_FALSE(needed_by("libcublasLt.so").empty());  // loaded now
  EXPECT_STREQ(lt.get_status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_NE(lt.matmul, nullptr);
  int major = 0;
  int minor = 0;
  ASSERT_EQ(cuda::nvrtc().version(&major, &minor), NVRTC_SUCCESS);
  EXPECT_GE(major, 12);
}

}  // namespace
}  // namespace nuvec
